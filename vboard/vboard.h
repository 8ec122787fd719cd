/*
 * vboard.h - the virtual boards, the room's face: a QEMU machine driven like
 * a real board behind the `qemu` relay driver (relay_qemu*.c, docs/vm.md),
 * its volatile write cache (vcache.c) and the crash-state inputs it keeps per
 * power-on (vckeep.c).
 *
 * The room stands above relay/: its driver fills relay/'s ops table
 * (relay/relay.h) and uses relay/'s helpers, while relay/ names nothing of
 * it. So the driver joins relay/'s list at start-up, from the program's top
 * (harness/cli/main.c; the unit suites and fuzz targets that configure
 * boards), before any board is configured.
 */
#ifndef PC_VBOARD_H
#define PC_VBOARD_H

#include "relay/relay.h"

extern const struct relay_ops relay_qemu_ops;

/* relay_register() of the room's drivers (qemu, listed last by relay_names()).
 * Idempotent. 0, or -errno (relay_register's). */
int vboard_register(void);

#endif
