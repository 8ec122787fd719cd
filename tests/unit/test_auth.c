/*
 * test_auth.c - the authenticated link's pieces: the key file, the proof,
 * the per-line tags (auth.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/proto.h"
#include "common/util.h"
#include "tests/unit/suites.h"

static const char hn[] = "00112233445566778899aabbccddeeff";
static const char an[] = "ffeeddccbbaa99887766554433221100";

static void make_key(struct pc_auth_key *k, uint8_t fill)
{
	memset(k->k, fill, sizeof(k->k));
}

static void test_key_file(void)
{
	const char *dir = pc_test_tmpdir("auth");
	char path[512], err[512];
	struct pc_auth_key k1, k2;
	int fd;

	snprintf(path, sizeof(path), "%s/key", dir);
	unlink(path);
	CU_ASSERT_EQUAL(pc_auth_key_create(path, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(pc_auth_key_create(path, err, sizeof(err)), -EEXIST);	/* never overwritten */
	CU_ASSERT_EQUAL(pc_auth_key_load(path, &k1, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(pc_auth_key_load(path, &k2, err, sizeof(err)), 0);
	CU_ASSERT(memcmp(k1.k, k2.k, sizeof(k1.k)) == 0);
	{
		struct stat st;
		CU_ASSERT(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	}
	/* readable by others: refused, naming the file and the fix */
	chmod(path, 0644);
	CU_ASSERT_EQUAL(pc_auth_key_load(path, &k2, err, sizeof(err)), -EPERM);
	CU_ASSERT(strstr(err, path) && strstr(err, "chmod 600"));
	/* not 64 hex digits */
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	CU_ASSERT(fd >= 0 && write(fd, "0123abcd\n", 9) == 9);
	close(fd);
	CU_ASSERT_EQUAL(pc_auth_key_load(path, &k2, err, sizeof(err)), -EINVAL);
	CU_ASSERT(strstr(err, "64 hex digits") != NULL);
	unlink(path);
	CU_ASSERT_EQUAL(pc_auth_key_load(path, &k2, err, sizeof(err)), -ENOENT);
	CU_ASSERT(strstr(err, path) != NULL);
}

/* the fingerprint is sha256sum of the key file as it is written: a board's
 * copy can be compared with `sha256sum` alone */
static void test_fingerprint(void)
{
	struct pc_auth_key k;
	char fp[65];

	make_key(&k, 0x11);
	pc_auth_key_fingerprint(&k, fp);
	/* printf '%064d\n' 0 | tr 0 1 | sha256sum */
	CU_ASSERT_STRING_EQUAL(fp, "88095ece32a68a2c42cce91e501e931f5eeba2820b959cb8da99abe1700c4150");
	make_key(&k, 0x12);
	pc_auth_key_fingerprint(&k, fp);
	CU_ASSERT_STRING_NOT_EQUAL(fp, "88095ece32a68a2c42cce91e501e931f5eeba2820b959cb8da99abe1700c4150");
}

static void test_proof(void)
{
	struct pc_auth_key k, other;
	const char hello[] = "{\"type\":\"hello\",\"v\":1,\"board\":\"b1\",\"boot_id\":\"x\"}";
	char proof[2 * PC_AUTH_PROOF_BYTES + 1];

	make_key(&k, 7);
	make_key(&other, 8);
	CU_ASSERT_EQUAL(pc_auth_proof(&k, hn, an, hello, strlen(hello), proof), 0);
	CU_ASSERT_EQUAL(strlen(proof), 64);
	CU_ASSERT_EQUAL(pc_auth_proof_check(&k, hn, an, hello, strlen(hello), proof), 0);
	/* another key, another host nonce, another hello (board, boot id): no */
	CU_ASSERT_EQUAL(pc_auth_proof_check(&other, hn, an, hello, strlen(hello), proof), -EBADMSG);
	CU_ASSERT_EQUAL(pc_auth_proof_check(&k, an, an, hello, strlen(hello), proof), -EBADMSG);
	CU_ASSERT_EQUAL(pc_auth_proof_check(&k, hn, an, hello, strlen(hello) - 1, proof), -EBADMSG);
	/* malformed: not hex, wrong length */
	CU_ASSERT_EQUAL(pc_auth_proof_check(&k, hn, an, hello, strlen(hello), "zz"), -EBADMSG);
	CU_ASSERT_EQUAL(pc_auth_proof(&k, "abc", an, hello, strlen(hello), proof), -EINVAL);
}

/* Seal a message text on one side, open it on the other. */
static int roundtrip(struct pc_auth_session *tx, struct pc_auth_session *rx, const char *text, char *out, size_t outlen)
{
	char why[256];
	int n;

	snprintf(out, outlen, "%s", text);
	n = pc_auth_seal(tx, out, strlen(out), outlen);
	if (n < 0)
		return n;
	return pc_auth_open(rx, out, (size_t)n, why, sizeof(why));
}

static void test_tags(void)
{
	struct pc_auth_key k;
	struct pc_auth_session agent, host, rogue;
	char a[512], b[512], why[256];
	struct pc_msg m;
	int n;

	make_key(&k, 3);
	CU_ASSERT_EQUAL(pc_auth_session_init(&agent, &k, hn, an, 0), 0);
	CU_ASSERT_EQUAL(pc_auth_session_init(&host, &k, hn, an, 1), 0);
	/* both ways, in order */
	CU_ASSERT_EQUAL(roundtrip(&agent, &host, "{\"type\":\"ack\",\"v\":1,\"first\":1,\"n\":4}", a, sizeof(a)), 0);
	CU_ASSERT_EQUAL(roundtrip(&host, &agent, "{\"type\":\"crash\",\"v\":1}", b, sizeof(b)), 0);
	/* a tagged line is still one valid message (the parser ignores "mac") */
	CU_ASSERT_EQUAL(pc_msg_parse(a, strlen(a), &m, why, sizeof(why)), 0);
	CU_ASSERT_EQUAL(m.type, PC_MSG_ACK);
	pc_msg_clear(&m);
	/* replaying the same line: its counter is spent */
	CU_ASSERT_EQUAL(pc_auth_open(&host, a, strlen(a), why, sizeof(why)), -EBADMSG);
	/* a line of the other direction does not verify as ours */
	CU_ASSERT_EQUAL(pc_auth_open(&host, b, strlen(b), why, sizeof(why)), -EBADMSG);
	/* the next genuine line still verifies after the rejected ones */
	CU_ASSERT_EQUAL(roundtrip(&agent, &host, "{\"type\":\"ack\",\"v\":1,\"first\":5,\"n\":4}", a, sizeof(a)), 0);
	/* one changed byte: refused */
	snprintf(a, sizeof(a), "{\"type\":\"ack\",\"v\":1,\"first\":9,\"n\":4}");
	n = pc_auth_seal(&agent, a, strlen(a), sizeof(a));
	CU_ASSERT(n > 0);
	a[strlen("{\"type\":\"ack\",\"v\":1,\"first\":")] = '8';
	CU_ASSERT_EQUAL(pc_auth_open(&host, a, (size_t)n, why, sizeof(why)), -EBADMSG);
	CU_ASSERT(strstr(why, "does not verify") != NULL);
	a[strlen("{\"type\":\"ack\",\"v\":1,\"first\":")] = '9';
	CU_ASSERT_EQUAL(pc_auth_open(&host, a, (size_t)n, why, sizeof(why)), 0);	/* as sent: fine */
	/* no tag, a tag not at the end, a CR after it (accepted: consoles send CRLF) */
	CU_ASSERT_EQUAL(pc_auth_open(&host, "{\"type\":\"ack\"}", 14, why, sizeof(why)), -EBADMSG);
	CU_ASSERT(strstr(why, "no tag") != NULL);
	/* a session with another key cannot speak for the agent */
	make_key(&k, 4);
	pc_auth_session_init(&rogue, &k, hn, an, 0);
	snprintf(a, sizeof(a), "{\"type\":\"done\",\"v\":1}");
	n = pc_auth_seal(&rogue, a, strlen(a), sizeof(a));
	CU_ASSERT_EQUAL(pc_auth_open(&host, a, (size_t)n, why, sizeof(why)), -EBADMSG);
	/* seal refuses what it cannot tag, and what would not fit */
	snprintf(a, sizeof(a), "not an object");
	CU_ASSERT_EQUAL(pc_auth_seal(&agent, a, strlen(a), sizeof(a)), -EINVAL);
	snprintf(a, sizeof(a), "{}");
	CU_ASSERT_EQUAL(pc_auth_seal(&agent, a, 2, 10), -E2BIG);
	/* CRLF */
	snprintf(a, sizeof(a), "{\"type\":\"done\",\"v\":1}");
	n = pc_auth_seal(&agent, a, strlen(a), sizeof(a) - 1);
	CU_ASSERT(n > 0);
	a[n] = '\r';
	a[n + 1] = 0;
	CU_ASSERT_EQUAL(pc_auth_open(&host, a, (size_t)n + 1, why, sizeof(why)), 0);
}

static void test_messages(void)
{
	struct pc_msg m;
	char err[256];
	const char *ok[] = {
		"{\"type\":\"challenge\",\"v\":1,\"nonce\":\"00112233445566778899aabbccddeeff\",\"echo\":\"ffeeddccbbaa99887766554433221100\"}",
		"{\"type\":\"auth\",\"v\":1,\"mac\":\"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}",
		"{\"type\":\"error\",\"v\":1,\"msg\":\"x\",\"write_error\":{\"errno\":5,\"lba\":1234,\"seq\":17,\"mode\":\"fua\"}}",
	};
	const char *bad[] = {
		"{\"type\":\"challenge\",\"v\":1,\"nonce\":\"0011\",\"echo\":\"ffeeddccbbaa99887766554433221100\"}",
		"{\"type\":\"auth\",\"v\":1,\"mac\":\"zz112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}",
		"{\"type\":\"auth\",\"v\":1}",
		"{\"type\":\"error\",\"v\":1,\"msg\":\"x\",\"write_error\":{\"errno\":0,\"lba\":1,\"seq\":1,\"mode\":\"fua\"}}",
		"{\"type\":\"error\",\"v\":1,\"msg\":\"x\",\"write_error\":{\"errno\":5,\"lba\":1,\"seq\":0,\"mode\":\"fua\"}}",
		"{\"type\":\"error\",\"v\":1,\"msg\":\"x\",\"write_error\":{\"errno\":5,\"lba\":1,\"seq\":1,\"mode\":\"gen0\"}}",
		"{\"type\":\"error\",\"v\":1,\"msg\":\"x\",\"write_error\":\"EIO\"}",
	};

	for (size_t i = 0; i < PC_ARRAY_SIZE(ok); i++) {
		int rc = pc_msg_parse(ok[i], strlen(ok[i]), &m, err, sizeof(err));
		CU_ASSERT_EQUAL(rc, 0);
		if (!rc)
			pc_msg_clear(&m);
	}
	for (size_t i = 0; i < PC_ARRAY_SIZE(bad); i++)
		CU_ASSERT_EQUAL(pc_msg_parse(bad[i], strlen(bad[i]), &m, err, sizeof(err)), -EINVAL);
}

static void test_uuid_nonce(void)
{
	char u1[37], u2[37], n1[33], n2[33];
	uint8_t b[16];

	pc_auth_uuid(u1);
	pc_auth_uuid(u2);
	CU_ASSERT_EQUAL(strlen(u1), 36);
	CU_ASSERT(strcmp(u1, u2) != 0);
	CU_ASSERT(u1[14] == '4');
	pc_auth_nonce(n1);
	pc_auth_nonce(n2);
	CU_ASSERT(strcmp(n1, n2) != 0);
	CU_ASSERT_EQUAL(pc_auth_unhex(n1, b, sizeof(b)), 0);
	CU_ASSERT_EQUAL(pc_auth_unhex("0g112233445566778899aabbccddeeff", b, sizeof(b)), -EINVAL);
}

int suite_auth(void)
{
	static const struct pc_test tests[] = {
		{ "key file: made 0600, never overwritten, refused when others may read it", test_key_file },
		{ "key fingerprint: sha256sum of the key file", test_fingerprint },
		{ "proof binds key, both nonces and the hello", test_proof },
		{ "line tags: order, direction, replay, tamper, wrong key", test_tags },
		{ "challenge, auth and write_error messages", test_messages },
		{ "nonces and boot ids are random", test_uuid_nonce },
	};

	return pc_test_suite("auth", tests, PC_ARRAY_SIZE(tests));
}
