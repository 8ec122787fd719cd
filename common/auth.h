/*
 * auth.h - the authenticated link between host and agent.
 *
 * A campaign has one secret, a 32-byte key kept in a file (64 hex digits,
 * mode 0600) that the host creates and the agents are given. Every
 * connection, TCP or serial, starts with a challenge-response:
 *
 *   agent -> host   hello      {..., "nonce": AN}          AN: 16 random bytes, hex
 *   host  -> agent  challenge  {"nonce": HN, "echo": AN}   HN: 16 random bytes, hex
 *   agent -> host   auth       {"mac": PROOF}
 *
 *   PROOF = HMAC-SHA256(key, "powercut auth v1" NUL || HN || AN || HELLO)
 *
 * where HELLO is the exact JSON text of the agent's hello line, so the proof
 * binds the board name, the boot id, the protocol version and everything
 * else the hello says. Then both ends derive a session key
 *
 *   SK = HMAC-SHA256(key, "powercut session v1" NUL || HN || AN)
 *
 * and every later line, both ways, ends in a tag over the line and a running
 * counter of that direction's lines (agent 'A', host 'H'):
 *
 *   {...,"mac":"<32 hex>"}   tag = HMAC-SHA256(SK, dir || ctr (8 bytes, big
 *                            endian) || the line with ',"mac":"..."' removed)[0..16)
 *
 * A line whose tag does not verify is dropped and does not advance the
 * counter, so a second writer on a serial console, a replayed line or a
 * hijacked TCP stream is detected and cannot speak for the agent. HMAC-SHA256
 * is libsodium's (crypto_auth_hmacsha256). See docs/protocol.md.
 */
#ifndef PC_AUTH_H
#define PC_AUTH_H

#include <stddef.h>
#include <stdint.h>

#define PC_AUTH_KEY_BYTES	32
#define PC_AUTH_NONCE_BYTES	16
#define PC_AUTH_PROOF_BYTES	32
#define PC_AUTH_TAG_BYTES	16
/* ',"mac":"' + 32 hex + '"}' ends a tagged line ... */
#define PC_AUTH_TAG_SUFFIX	(8 + 2 * PC_AUTH_TAG_BYTES + 2)
/* ... in place of the closing '}': the bytes a tag adds */
#define PC_AUTH_TAG_OVERHEAD	(PC_AUTH_TAG_SUFFIX - 1)

struct pc_auth_key {
	uint8_t k[PC_AUTH_KEY_BYTES];
};

/* One direction pair of an established session. */
struct pc_auth_session {
	uint8_t sk[32];
	uint64_t tx, rx;	/* lines sent / accepted so far */
	char txdir, rxdir;	/* 'A' (agent) or 'H' (host) */
	int up;
};

/* libsodium's set-up; 0 or -EIO. Safe to call more than once. */
int pc_auth_init(void);

/*
 * Load the key file: 64 hex digits (a trailing newline allowed), owned by no
 * one else's write, and not readable by group or others. 0 or -errno with a
 * message naming the file and what to do.
 */
int pc_auth_key_load(const char *path, struct pc_auth_key *k, char *err, size_t errlen);
/*
 * Create a new random key file (O_EXCL, mode 0600, fsync'd). -EEXIST if it is
 * there already.
 */
int pc_auth_key_create(const char *path, char *err, size_t errlen);
/*
 * The key's fingerprint, to compare two copies without showing the secret:
 * SHA-256 of the key file as pc_auth_key_create() writes it (64 lower-case
 * hex digits and a newline), so `sha256sum` of such a file on a board prints
 * the same 64 hex digits. out: 64 hex digits + NUL.
 */
void pc_auth_key_fingerprint(const struct pc_auth_key *k, char out[65]);

/* 16 random bytes as 32 lower-case hex digits + NUL. */
void pc_auth_nonce(char hex[2 * PC_AUTH_NONCE_BYTES + 1]);
/* A random UUID (a boot id for process boards) as 36 characters + NUL. */
void pc_auth_uuid(char out[37]);

/* hex of exactly n bytes (2n digits, either case) -> bytes; 0 or -EINVAL. */
int pc_auth_unhex(const char *hex, uint8_t *out, size_t n);

/*
 * The proof of an agent that holds the key, over the host's and agent's
 * nonces (hex) and the hello's JSON text; as 64 hex digits + NUL. 0 or
 * -EINVAL when a nonce is not 32 hex digits.
 */
int pc_auth_proof(const struct pc_auth_key *k, const char *hn, const char *an, const char *hello, size_t hello_len,
		  char out[2 * PC_AUTH_PROOF_BYTES + 1]);
/* Constant-time check of a proof received (hex); 0 if it is right. */
int pc_auth_proof_check(const struct pc_auth_key *k, const char *hn, const char *an, const char *hello,
			size_t hello_len, const char *proof_hex);

/* Start a session; is_host picks the directions. */
int pc_auth_session_init(struct pc_auth_session *s, const struct pc_auth_key *k, const char *hn, const char *an,
			 int is_host);

/*
 * Tag a line: buf holds len bytes of one JSON object's text (no newline),
 * ending in '}'; the tag is spliced in before it. Returns the new length, or
 * -E2BIG when it would not fit cap bytes (NUL included), -EINVAL when the
 * text does not end in '}'.
 */
int pc_auth_seal(struct pc_auth_session *s, char *buf, size_t len, size_t cap);

/*
 * Check a received line (JSON text, no newline; one trailing '\r' ignored):
 * it must end in a tag that verifies for the next counter of its direction.
 * Returns 0 (the counter advances) or -EBADMSG (no tag, or a wrong one:
 * nothing advances), with the reason in why.
 */
int pc_auth_open(struct pc_auth_session *s, const char *line, size_t len, char *why, size_t whylen);

#endif
