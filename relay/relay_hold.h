/*
 * relay_hold.h - a relay held open by a small daemon, for `powercut relay`.
 *
 * Some relays keep their state only while a process keeps them open: a GPIO
 * line is driven only while its request is held (released, it falls to its
 * pull or to whatever the chip does), so `powercut relay b1 on` that opens,
 * switches and exits would leave the board to chance. For such drivers
 * (RELAY_CAP_HOLD) `on`, `off` and `cycle` hand the opened relay to a
 * holder: a process of its own (setsid, stdio on /dev/null) that keeps it
 * open in the state asked for, holds the relay's lock (relay_lock.h: role
 * "holder", its pid and state in the lock file, so a campaign and a second
 * `powercut relay` see it) and answers on an abstract unix socket named
 * after the lock (relay_lock_sock_path()):
 *
 *   request   "on" | "off" | "get" | "release"   (one datagram, at most 15 bytes)
 *   reply     "ok on" | "ok off" | "ok released" | "err MESSAGE"
 *
 * `release` (or SIGTERM, SIGINT) closes the socket and the relay (a GPIO
 * line then falls to its pull) and drops the lock. A peer of another uid
 * (root aside) is refused (SO_PEERCRED): switching power is the holder's
 * owner's business.
 */
#ifndef PC_RELAY_HOLD_H
#define PC_RELAY_HOLD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "relay/relay.h"
#include "relay/relay_lock.h"

#define RELAY_HOLD_ASK_MS	5000	/* a holder answers at once; bound it anyway */

/*
 * Start a holder of the relay (driver, cfg, ctx) whose lock l the caller
 * holds: it opens the relay in ctx->open_state, takes l over and listens on
 * l->sock. 0 once it said so (its pid in *pid; the caller then
 * relay_lock_forget()s l), or -errno with err (the holder's open error,
 * word for word: "board b1: relay gpiod: ...").
 */
int relay_hold_start(struct relay_lock *l, const char *driver, json_object *cfg, const struct relay_ctx *ctx,
		     pid_t *pid, char *err, size_t errlen);
/*
 * Ask the holder listening on sock: req is "on", "off", "get" or
 * "release". 0 with the reply's word ("on", "off", "released") in reply,
 * or -errno with err ("the holder said: ...", "cannot reach the holder at
 * SOCK: ...").
 */
int relay_hold_ask(const char *sock, const char *req, char *reply, size_t len, char *err, size_t errlen);

#endif
