/*
 * fuzz_auth.c - the authenticated link's line check (common/auth.c).
 *
 * The input is one received line (no newline). Against a session set up
 * from a fixed key and nonces:
 *   - pc_auth_open() on the line as it came: whatever it holds, it is
 *     refused with a reason and the counter does not move (a fuzzer cannot
 *     forge an HMAC; if it "succeeds", the check is broken);
 *   - the line sealed by the peer (pc_auth_seal, when it is a JSON-looking
 *     text ending in '}') opens, once: the same line again is a replay and
 *     is refused; so is the sealed line with one byte changed (a byte the
 *     input picks), unless the change keeps the same tag (a hex digit's case);
 *   - the line then parses, or not, as the unsealed one does (the tag is
 *     one more field the parser must take);
 *   - the agent's proof over the line as a hello verifies, and the line as a
 *     proof does not; pc_auth_unhex() takes only hex of the exact length.
 */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "common/auth.h"
#include "common/proto.h"
#include "common/util.h"
#include "tests/fuzz/fuzz.h"

#define FUZZ_MAX_INPUT (PC_PROTO_MAX_LINE + 64)

static struct pc_auth_key key;
static const char hn[] = "00112233445566778899aabbccddeeff";
static const char an[] = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	pc_log_init("fuzz-auth", PC_LOG_ERR);
	FUZZ_CHECK(pc_auth_init() == 0, "libsodium does not start");
	for (size_t i = 0; i < sizeof(key.k); i++)
		key.k[i] = (uint8_t)(0xa5 ^ i);
	return 0;
}

/* A byte change that keeps the tag: a hex letter's case, inside the tag's digits. */
static int same_tag(const char *sealed, size_t len, size_t at, char was)
{
	size_t hex0 = len - 2 - 2 * PC_AUTH_TAG_BYTES;

	return at >= hex0 && at < len - 2 && isxdigit((unsigned char)was) &&
	       isxdigit((unsigned char)sealed[at]) && tolower((unsigned char)was) == tolower((unsigned char)sealed[at]);
}

static int parses(const char *line, size_t len)
{
	struct pc_msg m;
	char err[256];
	int ret = pc_msg_parse(line, len, &m, err, sizeof(err));

	pc_msg_clear(&m);
	return ret == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char line[FUZZ_MAX_INPUT + PC_AUTH_TAG_OVERHEAD + 2];
	struct pc_auth_session host, agent;
	char why[256], proof[2 * PC_AUTH_PROOF_BYTES + 1], text[2 * PC_AUTH_PROOF_BYTES + 1];
	uint8_t bytes[64];
	int n;

	if (size > FUZZ_MAX_INPUT)
		return -1;
	FUZZ_CHECK(pc_auth_session_init(&host, &key, hn, an, 1) == 0 &&
		   pc_auth_session_init(&agent, &key, hn, an, 0) == 0, "no session");

	/* as it came: never accepted */
	why[0] = 0;
	FUZZ_CHECK(pc_auth_open(&host, (const char *)data, size, why, sizeof(why)) == -EBADMSG,
		   "an unsealed line was accepted: %.*s", (int)(size < 200 ? size : 200), (const char *)data);
	FUZZ_CHECK(why[0] && host.rx == 0, "a refusal without a reason, or the counter moved");

	/* sealed by the agent, opened by the host */
	memcpy(line, data, size);
	line[size] = 0;
	n = pc_auth_seal(&agent, line, size, sizeof(line));
	if (n >= 0) {
		size_t at = size ? (size_t)data[0] * 31 % (size_t)n : 0;
		char was;

		FUZZ_CHECK((size_t)n == size + PC_AUTH_TAG_OVERHEAD && line[n] == 0 && line[n - 1] == '}' &&
			   agent.tx == 1, "seal returned %d for %zu bytes: %.*s", n, size, n, line);
		FUZZ_CHECK(pc_auth_open(&host, line, (size_t)n, why, sizeof(why)) == 0, "a sealed line does not "
			   "open: %s", why);
		FUZZ_CHECK(host.rx == 1, "the counter did not move");
		FUZZ_CHECK(pc_auth_open(&host, line, (size_t)n, why, sizeof(why)) == -EBADMSG && host.rx == 1,
			   "a replayed line was accepted");
		/* the tag is one more field: the parser takes the sealed line as the bare
		 * one (unless the bare one has a "mac" of its own, which the tag replaces) */
		if (size <= PC_PROTO_MAX_LINE - PC_AUTH_TAG_OVERHEAD && !memmem(data, size, "mac", 3) &&
		    !memmem(data, size, "\\u", 2))
			FUZZ_CHECK(parses(line, (size_t)n) == parses((const char *)data, size),
				   "the tag changes whether the line parses: %.200s", line);
		/* one byte changed: a fresh session expects this line as its first */
		FUZZ_CHECK(pc_auth_session_init(&host, &key, hn, an, 1) == 0, "no session");
		was = line[at];
		line[at] ^= (char)(size > 1 && data[1] ? data[1] : 1);
		if (pc_auth_open(&host, line, (size_t)n, why, sizeof(why)) == 0)
			FUZZ_CHECK(same_tag(line, (size_t)n, at, was),
				   "a damaged line was accepted (byte %zu: 0x%02x -> 0x%02x)", at, (unsigned char)was,
				   (unsigned char)line[at]);
	} else {
		FUZZ_CHECK(n == -EINVAL || n == -E2BIG, "seal returned %d", n);
	}

	/* the hello proof over the line */
	FUZZ_CHECK(pc_auth_proof(&key, hn, an, (const char *)data, size, proof) == 0, "no proof");
	FUZZ_CHECK(pc_auth_proof_check(&key, hn, an, (const char *)data, size, proof) == 0, "the proof does not verify");
	n = size < sizeof(text) - 1 ? (int)size : (int)sizeof(text) - 1;
	memcpy(text, data, (size_t)n);
	text[n] = 0;
	FUZZ_CHECK(pc_auth_proof_check(&key, hn, an, (const char *)data, size, text) == -EBADMSG,
		   "a made-up proof verifies: %s", text);
	if (pc_auth_unhex(text, bytes, strlen(text) / 2) == 0)
		FUZZ_CHECK(strlen(text) % 2 == 0 && strspn(text, "0123456789abcdefABCDEF") == strlen(text),
			   "unhex took \"%s\"", text);
	return 0;
}
