/*
 * netserial.h - a board's serial console exported over the network: a raw
 * TCP port (ser2net "tcp", labgrid's NetworkSerialPort with protocol raw),
 * telnet, or telnet with RFC 2217 (ser2net "telnet(rfc2217)", labgrid's
 * default). The harness polls one file descriptor per link for the whole
 * campaign, as it does a tty's; behind it the link connects without
 * blocking, reconnects on its own, strips telnet's negotiation from what
 * the board printed and escapes it in what the host sends.
 *
 * The peer is untrusted like any console: lines are bounded by the caller's
 * line buffer, telnet sequences may be split across reads anywhere, a
 * subnegotiation is bounded, and a peer that closes, refuses or stalls
 * brings the link down with a message naming the address; it never blocks
 * the caller.
 */
#ifndef PC_HARNESS_NETSERIAL_H
#define PC_HARNESS_NETSERIAL_H

#include <stddef.h>
#include <stdint.h>

enum ns_proto { NS_RAW, NS_TELNET, NS_RFC2217 };

/* Does the device name a network console ("SCHEME://...")? */
int netserial_is_url(const char *dev);

/*
 * "tcp://HOST:PORT", "telnet://HOST:PORT", "rfc2217://HOST:PORT"; HOST may
 * be [v6]; a trailing '/' is allowed. 0, or -EINVAL with why (no prefix).
 */
int netserial_parse(const char *url, enum ns_proto *proto, char *host, size_t hostlen, char *service,
		    size_t servlen, char *why, size_t whylen);

struct netserial;

/*
 * Resolve the address (bounded by timeout_ms) and connect, waiting at most
 * timeout_ms for the first connection: a console that cannot be reached
 * when the campaign starts is an error, like a tty that cannot be opened.
 * After that nothing waits: timeout_ms bounds each reconnection, and (for
 * telnet) how long the peer may take to answer a probe. baud is set over
 * RFC 2217 (rfc2217:// only). NULL with err ("cannot connect to ...").
 */
struct netserial *netserial_open(const char *url, uint32_t baud, uint32_t timeout_ms, char *err, size_t errlen);

/* The descriptor to poll for reading; the same one for the link's life. */
int netserial_fd(const struct netserial *ns);

/* What netserial_poll found (flags). */
#define NS_DATA	1	/* *got bytes of console data are in buf */
#define NS_UP	2	/* the link (re)connected */
#define NS_DOWN	4	/* the link went down; why says so (the address first); it reconnects by itself */

/* Call when the descriptor is readable; never blocks. */
int netserial_poll(struct netserial *ns, char *buf, size_t cap, size_t *got, char *why, size_t whylen);

/*
 * Queue bytes for the board (telnet: 0xFF doubled, CR as CR NUL unless
 * binary) and send what the socket takes now. 0, or -errno with why: the
 * link is down (-ENOTCONN), or the peer has not taken 64 KiB of output.
 */
int netserial_write(struct netserial *ns, const void *buf, size_t len, char *why, size_t whylen);

/*
 * The board is being powered on: a link that is down reconnects now; one
 * that is up is probed (telnet: a TIMING-MARK the peer must answer within
 * timeout_ms). Until the next call, netserial_up_since_mark() says whether
 * the link has been up without a break since this instant.
 */
void netserial_mark(struct netserial *ns);
int netserial_up_since_mark(const struct netserial *ns);
int netserial_is_up(const struct netserial *ns);

/* The URL, for messages. */
const char *netserial_url(const struct netserial *ns);

/*
 * Close the connection and free. own_fd: also close the polled descriptor
 * (0 when its owner closed or closes it).
 */
void netserial_close(struct netserial *ns, int own_fd);

/* ---- the telnet decoder, exposed for tests and fuzzing ---- */

struct ns_telnet {
	int state;		/* where in an IAC sequence the last byte left us */
	uint8_t cmd;		/* WILL/WONT/DO/DONT being read */
	uint8_t sb[64];		/* the subnegotiation being read (bounded: the rest is counted, not kept) */
	size_t sblen;
	size_t sbtotal;
	int cr;			/* the last data byte was CR (NVT: CR NUL is CR) */
	uint8_t us[256], him[256];	/* option states: 0 off, 1 on, 2 asked for */
	int binary_in;		/* the peer sends binary: no CR NUL */
	int tm_answered;	/* a reply to our DO TIMING-MARK came */
	int com_port;		/* the peer agreed to RFC 2217 (DO COM-PORT) */
	uint32_t com_baud;	/* the rate the peer said it set (RFC 2217 SET-BAUDRATE answer), 0 before */
	int want_com_port;	/* rfc2217:// */
	int error;		/* a subnegotiation too long: the peer is not a telnet server */
};

/*
 * Decode n bytes from the peer: console data to out (at most n bytes), the
 * replies negotiation calls for to reply (at most 3 bytes per input byte).
 * Returns the number of data bytes; *replylen the reply's.
 */
size_t ns_telnet_decode(struct ns_telnet *t, const uint8_t *in, size_t n, uint8_t *out, uint8_t *reply,
			size_t *replylen);

#endif
