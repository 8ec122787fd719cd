/*
 * handshake.c - the link's challenge and response (handshake.h,
 * docs/protocol.md#the-authenticated-link).
 */
#include "harness/link/handshake.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/proto.h"
#include "common/util.h"

void link_hs_clear(struct handshake *h)
{
	free(h->hello);
	memset(h, 0, sizeof(*h));
}

int link_hs_challenge(struct handshake *h, const char *text, size_t len, json_object *hello, int marker, char *buf,
		      size_t cap)
{
	json_object *v, *m;
	size_t off = 0;
	int n;

	link_hs_clear(h);
	if (!json_object_object_get_ex(hello, "nonce", &v))
		return -EINVAL;
	if (len && text[len - 1] == '\r')
		len--;	/* a console's CR is not part of what the agent proved */
	h->hello = malloc(len + 1);
	if (!h->hello)
		return -ENOMEM;
	memcpy(h->hello, text, len);
	h->hello[len] = 0;
	h->hello_len = len;
	pc_strlcpy(h->an, json_object_get_string(v), sizeof(h->an));
	pc_auth_nonce(h->hn);
	h->since = pc_now_ms();
	m = pc_msg_new(PC_MSG_CHALLENGE);
	json_object_object_add(m, "nonce", json_object_new_string(h->hn));
	json_object_object_add(m, "echo", json_object_new_string(h->an));
	if (marker) {
		off = strlen(PC_PROTO_MARKER);
		memcpy(buf, PC_PROTO_MARKER, off);
	}
	n = pc_msg_line(m, buf + off, cap - off);
	json_object_put(m);
	if (n < 0)
		return n;
	return (int)(off + (size_t)n);
}

int link_hs_proven(const struct pc_auth_key *key, const struct handshake *h, json_object *auth)
{
	json_object *v;

	if (!h->hello || !json_object_object_get_ex(auth, "mac", &v))
		return 0;
	return pc_auth_proof_check(key, h->hn, h->an, h->hello, h->hello_len, json_object_get_string(v)) == 0;
}
