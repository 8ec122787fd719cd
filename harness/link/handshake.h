/*
 * handshake.h - a hello answered with a challenge, awaiting the agent's
 * proof that it holds the campaign's key (common/auth.h): one per pending
 * TCP connection, up to MAX_SERIAL_HELLOS per serial console.
 */
#ifndef PC_HARNESS_LINK_HANDSHAKE_H
#define PC_HARNESS_LINK_HANDSHAKE_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "common/auth.h"

struct handshake {
	char an[2 * PC_AUTH_NONCE_BYTES + 1];	/* the agent's nonce */
	char hn[2 * PC_AUTH_NONCE_BYTES + 1];	/* ours */
	char *hello;				/* the hello's exact JSON text */
	size_t hello_len;
	uint64_t since;
};

/* Forget it (its hello freed): an empty handshake, as a zeroed one. */
void link_hs_clear(struct handshake *h);
/* Take a hello (its exact text, and parsed) and write the challenge that
 * answers it into buf (cap bytes; with the console marker when marker is
 * set), a line ending in a newline: its length, or -errno. */
int link_hs_challenge(struct handshake *h, const char *text, size_t len, json_object *hello, int marker, char *buf,
		      size_t cap);
/* Does the proof in an auth message answer this handshake, with key? */
int link_hs_proven(const struct pc_auth_key *key, const struct handshake *h, json_object *auth);

#endif
