/*
 * tty.h - a serial device opened raw, the one way host and agent do it: the
 * board's console on either side, and a relay board's tty (relay_lcus.c).
 */
#ifndef PC_TTY_H
#define PC_TTY_H

#include <stddef.h>
#include <stdint.h>
#include <termios.h>

#define PC_TTY_NONBLOCK		1	/* open O_NONBLOCK: a poll() loop reads it */
#define PC_TTY_NOT_TTY_OK	2	/* a path that is no terminal (a FIFO, a file) is used as
					   it is: nothing to set; the link still works */

/* The termios speed of a baud rate (1200 ... 3000000); 0 or -EINVAL. */
int pc_tty_speed(uint32_t baud, speed_t *out);

/*
 * Open path read-write (no controlling tty, close-on-exec) and make it raw
 * 8N1 at baud: no echo, no line editing, no flow control (CRTSCTS and
 * IXON/IXOFF/IXANY cleared), CLOCAL|CREAD. The settings are read back: a
 * driver that silently kept hardware flow control or the old rate is an
 * error, not a console that stays mute. Returns the descriptor (the
 * caller closes it), or -errno with err saying what and naming path:
 * -EINVAL an unsupported rate, -ENOTTY not a terminal (without
 * PC_TTY_NOT_TTY_OK), -EIO the settings did not hold.
 */
int pc_tty_open(const char *path, uint32_t baud, int flags, char *err, size_t errlen);

#endif
