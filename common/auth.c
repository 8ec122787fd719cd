/*
 * auth.c - the authenticated link: key file, challenge-response, line tags.
 * The protocol is described in auth.h and docs/protocol.md; every MAC is
 * libsodium's HMAC-SHA256.
 */
#include "common/auth.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

static const char label_auth[] = "powercut auth v1";	/* the NUL is hashed too */
static const char label_session[] = "powercut session v1";

int pc_auth_init(void)
{
	return sodium_init() < 0 ? -EIO : 0;
}

int pc_auth_unhex(const char *hex, uint8_t *out, size_t n)
{
	size_t bin_len = 0;
	const char *end = NULL;

	if (!hex || strlen(hex) != 2 * n)
		return -EINVAL;
	if (sodium_hex2bin(out, n, hex, 2 * n, NULL, &bin_len, &end) || bin_len != n || *end)
		return -EINVAL;
	return 0;
}

int pc_auth_key_load(const char *path, struct pc_auth_key *k, char *err, size_t errlen)
{
	char text[2 * PC_AUTH_KEY_BYTES + 3];
	struct stat st;
	ssize_t n;
	int fd, e;

	if (pc_auth_init())
		return pc_fail(err, errlen, -EIO, "libsodium cannot start (no entropy source?)");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		e = errno;
		return pc_fail(err, errlen, -e, "key file %s: %s%s", path, strerror(e),
			 e == ENOENT ? " (the campaign's key_file, or the results folder's agent.key; powercut key new "
				       "makes one; copy it here, mode 0600)" : "");
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return pc_fail(err, errlen, -EINVAL, "key file %s: not a regular file", path);
	}
	if (st.st_mode & 077) {
		close(fd);
		return pc_fail(err, errlen, -EPERM, "key file %s: mode %04o lets others read or change it; chmod 600 %s", path,
			 (unsigned)(st.st_mode & 07777), path);
	}
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0) {
		e = errno;
		return pc_fail(err, errlen, -e, "key file %s: %s", path, strerror(e));
	}
	text[n] = 0;
	if (n == 2 * PC_AUTH_KEY_BYTES + 1 && text[n - 1] == '\n')
		text[--n] = 0;
	if (n != 2 * PC_AUTH_KEY_BYTES || pc_auth_unhex(text, k->k, PC_AUTH_KEY_BYTES)) {
		sodium_memzero(text, sizeof(text));
		return pc_fail(err, errlen, -EINVAL, "key file %s: expected %d hex digits (a key made by powercut run)", path,
			 2 * PC_AUTH_KEY_BYTES);
	}
	sodium_memzero(text, sizeof(text));
	return 0;
}

int pc_auth_key_create(const char *path, char *err, size_t errlen)
{
	uint8_t key[PC_AUTH_KEY_BYTES];
	char hex[2 * PC_AUTH_KEY_BYTES + 2];
	int fd, e;

	if (pc_auth_init())
		return pc_fail(err, errlen, -EIO, "libsodium cannot start (no entropy source?)");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		e = errno;
		if (e == EEXIST)
			return -e;	/* the caller says what is there */
		return pc_fail(err, errlen, -e, "cannot create the key file %s: %s", path, strerror(e));
	}
	randombytes_buf(key, sizeof(key));
	sodium_bin2hex(hex, sizeof(hex) - 1, key, sizeof(key));
	sodium_memzero(key, sizeof(key));
	strcat(hex, "\n");
	if (write(fd, hex, strlen(hex)) != (ssize_t)strlen(hex) || fsync(fd)) {
		e = errno ? errno : EIO;
		close(fd);
		unlink(path);
		sodium_memzero(hex, sizeof(hex));
		return pc_fail(err, errlen, -e, "cannot write the key file %s: %s", path, strerror(e));
	}
	sodium_memzero(hex, sizeof(hex));
	close(fd);
	return 0;
}

void pc_auth_key_fingerprint(const struct pc_auth_key *k, char out[65])
{
	char hex[2 * PC_AUTH_KEY_BYTES + 2];
	uint8_t h[crypto_hash_sha256_BYTES];

	pc_auth_init();
	sodium_bin2hex(hex, sizeof(hex) - 1, k->k, sizeof(k->k));
	strcat(hex, "\n");
	crypto_hash_sha256(h, (const uint8_t *)hex, strlen(hex));
	sodium_memzero(hex, sizeof(hex));
	sodium_bin2hex(out, 65, h, sizeof(h));
}

void pc_auth_nonce(char hex[2 * PC_AUTH_NONCE_BYTES + 1])
{
	uint8_t n[PC_AUTH_NONCE_BYTES];

	pc_auth_init();
	randombytes_buf(n, sizeof(n));
	sodium_bin2hex(hex, 2 * PC_AUTH_NONCE_BYTES + 1, n, sizeof(n));
}

void pc_auth_uuid(char out[37])
{
	uint8_t u[16];

	pc_auth_init();
	randombytes_buf(u, sizeof(u));
	u[6] = (uint8_t)((u[6] & 0x0f) | 0x40);	/* version 4 */
	u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);	/* RFC 4122 variant */
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
		 u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

static int nonces(const char *hn, const char *an, uint8_t h[PC_AUTH_NONCE_BYTES], uint8_t a[PC_AUTH_NONCE_BYTES])
{
	if (pc_auth_unhex(hn, h, PC_AUTH_NONCE_BYTES) || pc_auth_unhex(an, a, PC_AUTH_NONCE_BYTES))
		return -EINVAL;
	return 0;
}

static int proof_bytes(const struct pc_auth_key *k, const char *hn, const char *an, const char *hello,
		       size_t hello_len, uint8_t out[PC_AUTH_PROOF_BYTES])
{
	crypto_auth_hmacsha256_state st;
	uint8_t h[PC_AUTH_NONCE_BYTES], a[PC_AUTH_NONCE_BYTES];

	if (nonces(hn, an, h, a))
		return -EINVAL;
	crypto_auth_hmacsha256_init(&st, k->k, sizeof(k->k));
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)label_auth, sizeof(label_auth));
	crypto_auth_hmacsha256_update(&st, h, sizeof(h));
	crypto_auth_hmacsha256_update(&st, a, sizeof(a));
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)hello, hello_len);
	crypto_auth_hmacsha256_final(&st, out);
	return 0;
}

int pc_auth_proof(const struct pc_auth_key *k, const char *hn, const char *an, const char *hello, size_t hello_len,
		  char out[2 * PC_AUTH_PROOF_BYTES + 1])
{
	uint8_t p[PC_AUTH_PROOF_BYTES];

	if (proof_bytes(k, hn, an, hello, hello_len, p))
		return -EINVAL;
	sodium_bin2hex(out, 2 * PC_AUTH_PROOF_BYTES + 1, p, sizeof(p));
	return 0;
}

int pc_auth_proof_check(const struct pc_auth_key *k, const char *hn, const char *an, const char *hello,
			size_t hello_len, const char *proof_hex)
{
	uint8_t want[PC_AUTH_PROOF_BYTES], got[PC_AUTH_PROOF_BYTES];

	if (proof_bytes(k, hn, an, hello, hello_len, want) || pc_auth_unhex(proof_hex, got, sizeof(got)))
		return -EBADMSG;
	return sodium_memcmp(want, got, sizeof(got)) ? -EBADMSG : 0;
}

int pc_auth_session_init(struct pc_auth_session *s, const struct pc_auth_key *k, const char *hn, const char *an,
			 int is_host)
{
	crypto_auth_hmacsha256_state st;
	uint8_t h[PC_AUTH_NONCE_BYTES], a[PC_AUTH_NONCE_BYTES];

	memset(s, 0, sizeof(*s));
	if (nonces(hn, an, h, a))
		return -EINVAL;
	crypto_auth_hmacsha256_init(&st, k->k, sizeof(k->k));
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)label_session, sizeof(label_session));
	crypto_auth_hmacsha256_update(&st, h, sizeof(h));
	crypto_auth_hmacsha256_update(&st, a, sizeof(a));
	crypto_auth_hmacsha256_final(&st, s->sk);
	s->txdir = is_host ? 'H' : 'A';
	s->rxdir = is_host ? 'A' : 'H';
	s->up = 1;
	return 0;
}

/* The tag of text[0..len) (the line without its tag) followed by '}'. */
static void line_tag(const struct pc_auth_session *s, char dir, uint64_t ctr, const char *text, size_t len,
		     uint8_t tag[PC_AUTH_TAG_BYTES])
{
	crypto_auth_hmacsha256_state st;
	uint8_t full[crypto_auth_hmacsha256_BYTES], hdr[9];

	hdr[0] = (uint8_t)dir;
	for (int i = 0; i < 8; i++)
		hdr[1 + i] = (uint8_t)(ctr >> (56 - 8 * i));
	crypto_auth_hmacsha256_init(&st, s->sk, sizeof(s->sk));
	crypto_auth_hmacsha256_update(&st, hdr, sizeof(hdr));
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)text, len);
	crypto_auth_hmacsha256_update(&st, (const uint8_t *)"}", 1);
	crypto_auth_hmacsha256_final(&st, full);
	memcpy(tag, full, PC_AUTH_TAG_BYTES);
}

int pc_auth_seal(struct pc_auth_session *s, char *buf, size_t len, size_t cap)
{
	uint8_t tag[PC_AUTH_TAG_BYTES];
	char hex[2 * PC_AUTH_TAG_BYTES + 1];

	if (!s->up || len < 2 || buf[len - 1] != '}')
		return -EINVAL;
	if (len + PC_AUTH_TAG_OVERHEAD + 1 > cap)
		return -E2BIG;
	line_tag(s, s->txdir, s->tx, buf, len - 1, tag);
	sodium_bin2hex(hex, sizeof(hex), tag, sizeof(tag));
	len--;
	memcpy(buf + len, ",\"mac\":\"", 8);
	memcpy(buf + len + 8, hex, 2 * PC_AUTH_TAG_BYTES);
	memcpy(buf + len + 8 + 2 * PC_AUTH_TAG_BYTES, "\"}", 3);
	s->tx++;
	return (int)(len + PC_AUTH_TAG_SUFFIX);
}

int pc_auth_open(struct pc_auth_session *s, const char *line, size_t len, char *why, size_t whylen)
{
	uint8_t want[PC_AUTH_TAG_BYTES], got[PC_AUTH_TAG_BYTES];
	char hex[2 * PC_AUTH_TAG_BYTES + 1];
	size_t body;

	if (!s->up) {
		snprintf(why, whylen, "no authenticated session");
		return -EBADMSG;
	}
	if (len && line[len - 1] == '\r')
		len--;
	if (len < PC_AUTH_TAG_SUFFIX + 1 || memcmp(line + len - PC_AUTH_TAG_SUFFIX, ",\"mac\":\"", 8) ||
	    memcmp(line + len - 2, "\"}", 2)) {
		snprintf(why, whylen, "the line carries no tag (\"mac\" must close the object)");
		return -EBADMSG;
	}
	body = len - PC_AUTH_TAG_SUFFIX;
	memcpy(hex, line + body + 8, 2 * PC_AUTH_TAG_BYTES);
	hex[2 * PC_AUTH_TAG_BYTES] = 0;
	if (pc_auth_unhex(hex, got, sizeof(got))) {
		snprintf(why, whylen, "the line's tag is not %d hex digits", 2 * PC_AUTH_TAG_BYTES);
		return -EBADMSG;
	}
	line_tag(s, s->rxdir, s->rx, line, body, want);
	if (sodium_memcmp(want, got, sizeof(got))) {
		snprintf(why, whylen, "the line's tag does not verify (line %" PRIu64 " of this session expected: "
			 "forged, replayed, out of order or damaged)", s->rx + 1);
		return -EBADMSG;
	}
	s->rx++;
	return 0;
}
