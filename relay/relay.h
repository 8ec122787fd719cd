/*
 * relay.h - relay drivers behind one small ops table.
 *
 * A relay switches one board's power. Every operation returns within its
 * configured timeout: 0 (get: 1 on, 0 off) or -errno with r->err naming the
 * board, the driver and what to do. Drivers are listed in relay.c; the
 * virtual boards' (qemu) live a floor up, in vboard/, and are added to the
 * list at start-up (relay_register, vboard_register in vboard/vboard.h).
 */
#ifndef PC_RELAY_H
#define PC_RELAY_H

#include <limits.h>
#include <stddef.h>

#include <json-c/json.h>

struct relay;

/* What a driver may need to know about its board and the harness. */
struct relay_ctx {
	const char *board;		/* board name */
	const char *connect;		/* "host:port" the agent connects to */
	const char *agent_path;		/* powercut-agent binary (sim driver) */
	const char *state_dir;		/* per-board folder under the results (sim media lives here) */
	const char *key_path;		/* the campaign's key file (auth.h), for agents the driver starts */
	json_object *device;		/* the board's "device" section */
	/* The state open() leaves the relay in, where the driver chooses it
	 * (gpiod requests its line already driven so): RELAY_OPEN_OFF (0, the
	 * campaign's: a clean first boot), RELAY_OPEN_ON (a holder switched on
	 * by hand, no off glitch), RELAY_OPEN_OBSERVE (`powercut relay get`:
	 * drive nothing; on/off then fail with -EPERM). */
	int open_state;
};

enum { RELAY_OPEN_OFF = 0, RELAY_OPEN_ON, RELAY_OPEN_OBSERVE };

/* A driver's abilities (relay_ops.caps), so that callers ask what a relay
 * can do, never which driver it is. */
enum relay_cap {
	/* The board can cut its own power exactly where relay.cut says (the
	 * sim: its emulated card SIGKILLs the board at the planned flush or FUA
	 * write), so the harness waits for that cut instead of making it. */
	RELAY_CAP_EXACT_CUT = 1u << 0,
	/* The relay keeps its state only while it is open (gpiod: a released
	 * line is no longer driven), so `powercut relay on|off` leaves it to a
	 * holder process (relay_hold.h) rather than closing it. */
	RELAY_CAP_HOLD = 1u << 1,
	/* The relay cannot switch the power off (sysrq): the harness never
	 * asks it to; the "cut" is the agent crashing the board on request,
	 * and the device keeps its power. */
	RELAY_CAP_NO_OFF = 1u << 2,
	/* The relay switches real hardware (a GPIO line, a USB or serial relay
	 * board, a PDU): the config warns about what a real board needs. */
	RELAY_CAP_HARDWARE = 1u << 3,
	/* The board is emulated on this host (the sim, a QEMU machine): its
	 * device is no real part, whatever its backend. */
	RELAY_CAP_VIRTUAL = 1u << 4,
	/* The relay starts the agent on a sim device itself (the sim), so the
	 * sim's per-board options (device.keep_inputs) reach the agent. */
	RELAY_CAP_SIM_AGENT = 1u << 5,
};

struct relay_ops {
	const char *name;
	/* Validate the board's "relay" section; 0 or -EINVAL with err naming the key. */
	int (*check)(json_object *cfg, char *err, size_t errlen);
	int (*open)(struct relay *r, json_object *cfg, const struct relay_ctx *ctx);
	int (*on)(struct relay *r);
	int (*off)(struct relay *r);
	int (*get)(struct relay *r);
	void (*close)(struct relay *r);
	unsigned caps;		/* what it can do beyond on/off: RELAY_CAP_* */
	/* The identity of the physical relay a section names, for the lock that
	 * keeps two users off one relay (relay_lock.h): "gpiod:gpiochip1:3".
	 * Fills buf and returns 0; NULL or > 0: none beyond its board (sysrq,
	 * a command relay without board_id: "board:CAMPAIGN/BOARD"); -ENOENT:
	 * no lock at all, the board is a process of ours whose medium lives in
	 * its results folder (sim). cfg passed check(). */
	int (*ident)(json_object *cfg, char *buf, size_t len);
	/* Did the host, not the device, fail the board's last power-on (a
	 * virtual board's accelerator)? Read from the board's state folder
	 * (ctx->state_dir), in the harness, without the opened relay: 1 with
	 * why, else 0. NULL: never. */
	int (*host_fault)(const struct relay_ctx *ctx, char *why, size_t len);
};

struct relay {
	const struct relay_ops *ops;
	char board[64];
	/* Where the board's console output of this power-on goes (set by the
	 * harness before on(); drivers that own the board's stdout use it). */
	char console[PATH_MAX];
	/* The exact cut of this power-on, for a driver with RELAY_CAP_EXACT_CUT: "flush:N:US"
	 * or "fua:N:US" (the Nth cache flush or FUA write of the boot, US
	 * microseconds into it); empty: none. Set by the harness before on(). */
	char cut[48];
	char err[512];
	void *priv;
};

const struct relay_ops *relay_find(const char *name);
/* Space-separated list of driver names, for messages. */
const char *relay_names(void);
/*
 * Add a driver of a room above relay/ (the virtual boards) to the list, after
 * relay.c's own, before the first relay is configured (single-threaded
 * start-up). 0 (also when those ops are in already), -EEXIST (another driver
 * has that name) or -ENOSPC (the list is full).
 */
int relay_register(const struct relay_ops *ops);

/* Open a relay of the named driver; 0 or -errno with err set. r is zeroed first. */
int relay_open(struct relay *r, const char *driver, json_object *cfg, const struct relay_ctx *ctx,
	       char *err, size_t errlen);
int relay_on(struct relay *r);
int relay_off(struct relay *r);
int relay_get(struct relay *r);
/* Accepts a relay that was never opened (ops NULL). */
void relay_close(struct relay *r);
/* The driver's host_fault (relay_ops): 1 with why when the host failed the
 * board's last power-on, else 0. */
int relay_host_fault(const char *driver, const struct relay_ctx *ctx, char *why, size_t len);

extern const struct relay_ops relay_sim_ops;
extern const struct relay_ops relay_command_ops;
extern const struct relay_ops relay_gpiod_ops;
extern const struct relay_ops relay_hidrelay_ops;
extern const struct relay_ops relay_lcus_ops;
extern const struct relay_ops relay_pdudaemon_ops;
extern const struct relay_ops relay_sysrq_ops;

#endif
