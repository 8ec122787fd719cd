/*
 * main.c - powercut-agent: runs on the board, next to the device under test.
 *
 *   powercut-agent prepare --device DEV --record-size N --yes
 *   powercut-agent run     --device DEV --connect HOST:PORT --board NAME
 *   powercut-agent scan    --device DEV
 *   powercut-agent info    --device DEV
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/crc32c.h"
#include "common/proto.h"
#include "common/util.h"
#include "agent/audit.h"
#include "agent/link.h"
#include "agent/region.h"
#include "agent/writer.h"

struct opts {
	struct region_opts ro;
	struct sim_opts *sims;	/* --sim-*: the sim backend's options (ro.sim), or NULL */
	const char *connect;
	const char *console;
	const char *sysrq;	/* --sysrq PATH: crash requests allowed, written there */
	const char *key;	/* --key FILE: the campaign's secret (auth.h) */
	int fresh_boot_id;	/* --fresh-boot-id: this process start is the boot */
	uint64_t baud;
	const char *board;
	uint64_t record_size;
	uint64_t seed;
	uint64_t size;		/* sim media size for prepare */
	uint64_t boot_delay_ms;
	uint64_t connect_timeout_ms;
	int pattern;
	int yes;
	int verbose;
	const char *mode;
	uint64_t records;
	uint64_t qd;
	uint64_t flush_every;
};

enum {
	O_DEVICE = 256, O_OFFSET, O_LENGTH, O_WHOLE, O_CONNECT, O_BOARD, O_RECSZ, O_SEED, O_SIZE,
	O_YES, O_BOOTDELAY, O_CTIMEOUT, O_PATTERN, O_SIM, O_HELP, O_VERBOSE, O_CONSOLE, O_BAUD, O_MODE,
	O_RECORDS, O_QD, O_FLUSHEVERY, O_SYSRQ, O_KEY, O_FRESHBOOT, O_FORCE, O_CONFIRMDEV,
};

static const struct option long_opts[] = {
	{ "device", required_argument, NULL, O_DEVICE },
	{ "offset", required_argument, NULL, O_OFFSET },
	{ "length", required_argument, NULL, O_LENGTH },
	{ "allow-whole-disk", no_argument, NULL, O_WHOLE },
	{ "connect", required_argument, NULL, O_CONNECT },
	{ "console", required_argument, NULL, O_CONSOLE },
	{ "baud", required_argument, NULL, O_BAUD },
	{ "sysrq", required_argument, NULL, O_SYSRQ },
	{ "key", required_argument, NULL, O_KEY },
	{ "fresh-boot-id", no_argument, NULL, O_FRESHBOOT },
	{ "board", required_argument, NULL, O_BOARD },
	{ "record-size", required_argument, NULL, O_RECSZ },
	{ "seed", required_argument, NULL, O_SEED },
	{ "size", required_argument, NULL, O_SIZE },
	{ "yes", no_argument, NULL, O_YES },
	{ "force", no_argument, NULL, O_FORCE },
	{ "confirm-device", required_argument, NULL, O_CONFIRMDEV },
	{ "boot-delay-ms", required_argument, NULL, O_BOOTDELAY },
	{ "connect-timeout-ms", required_argument, NULL, O_CTIMEOUT },
	{ "pattern", required_argument, NULL, O_PATTERN },
	{ "sim-profile", required_argument, NULL, O_SIM },
	{ "sim-program-us", required_argument, NULL, O_SIM },
	{ "sim-cache-sectors", required_argument, NULL, O_SIM },
	{ "sim-seed", required_argument, NULL, O_SIM },
	{ "sim-rate", required_argument, NULL, O_SIM },
	{ "sim-cut-after", required_argument, NULL, O_SIM },
	{ "sim-cut-at", required_argument, NULL, O_SIM },
	{ "verbose", no_argument, NULL, O_VERBOSE },	/* debug messages on stderr */
	{ "mode", required_argument, NULL, O_MODE },
	{ "records", required_argument, NULL, O_RECORDS },
	{ "qd", required_argument, NULL, O_QD },
	{ "flush-every", required_argument, NULL, O_FLUSHEVERY },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

static const char usage_text[] =
	"usage: powercut-agent COMMAND [OPTIONS]\n"
	"\n"
	"Commands:\n"
	"  prepare   claim a region: write its superblocks and fill every slot (destroys its contents)\n"
	"  run       connect to the host, say HELLO, scan and write as the host asks\n"
	"  scan      verify the region offline and print the findings as JSON lines\n"
	"  info      print device identity and region geometry as JSON\n"
	"  write     write records in one mode as fast as the device takes them, and print the rate\n"
	"            (a benchmark of the durability modes; the region is overwritten, not verified)\n"
	"\n"
	"Device options (all commands):\n"
	"  --device DEV            a file, a block device, PARTLABEL=x, PARTUUID=x, LABEL=x, UUID=x,\n"
	"                          or sim:PATH for the emulated eMMC\n"
	"  --offset BYTES          region start on the device (default 0)\n"
	"  --length BYTES          region length (default: to the end of the device)\n"
	"  --allow-whole-disk      permit a whole disk rather than a partition\n"
	"  --sim-profile P         sim fault profile (honest, lying-flush, ...; see docs/sim.md)\n"
	"  --sim-program-us N      sim: microseconds to program one sector (default 20)\n"
	"  --sim-cache-sectors N   sim: volatile cache size in sectors (default 256)\n"
	"  --sim-seed N, --sim-rate R   sim: randomness for fault profiles\n"
	"  --sim-cut-after N       sim: cut the power (SIGKILL the board) after N sectors programmed\n"
	"  --sim-cut-at OP:N[:US]  sim: cut the power at the start of the Nth cache flush (OP flush) or\n"
	"                          inside the Nth FUA write (OP fua) of this boot, US microseconds of\n"
	"                          program time into it (default 0)\n"
	"  -v, --verbose           debug messages (what the host asks, scan statistics) on stderr\n"
	"\n"
	"prepare:  --record-size BYTES (default 4096)  --seed N (default 1)  --size BYTES (sim media,\n"
	"          created when missing; default 4M)  --yes (required: confirms the region is destroyed)\n"
	"          --force --confirm-device DEV: overwrite a filesystem, RAID member, swap area or\n"
	"          partition table libblkid finds there (DEV: the device path again, as resolved)\n"
	"run:      --connect HOST:PORT or --console TTY [--baud N (115200)], --board NAME,\n"
	"          --key FILE: the campaign's key (made by powercut run; default $PC_KEY_FILE)\n"
	"          --boot-delay-ms N, --connect-timeout-ms N (30000: how long to keep trying to\n"
	"          reach the host and authenticate)\n"
	"          --fresh-boot-id: a random boot id for this process instead of the kernel's\n"
	"          (a board simulated by a process, whose power cut is a kill)\n"
	"          --sysrq PATH: obey the host's crash requests by writing 'b' to PATH\n"
	"          (/proc/sysrq-trigger on a board: reboot without syncing; refused without it)\n"
	"scan:     --pattern sequential|random (the position order of the runs; default sequential)\n"
	"write:    --mode MODE  --records N (default: every slot once)  --qd N (1)  --flush-every N (8)\n"
	"          --pattern sequential|random  --yes (required: it overwrites the region's records)\n"
	"          prints one JSON line: the rate, and io_audit, what reached the device\n"
	"          (docs/io-audit.md)\n"
	"\n"
	"Sizes take K, M, G suffixes (binary). Exit status: 0 ok, 1 failure, 2 usage error.\n";

static void usage(FILE *f)
{
	fputs(usage_text, f);
}

static int bad_arg(const char *opt, const char *val, const char *what)
{
	pc_err("%s '%s': %s", opt, val, what);
	return -EINVAL;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	char err[256];
	int c, li = 0;

	memset(o, 0, sizeof(*o));
	o->record_size = 4096;
	o->seed = 1;
	o->size = 4u << 20;
	o->connect_timeout_ms = 30000;
	o->baud = 115200;
	o->qd = 1;
	o->flush_every = 8;
	o->pattern = PC_PAT_SEQUENTIAL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "hv", long_opts, &li)) != -1) {

		switch (c) {
		case O_DEVICE: o->ro.spec = optarg; break;
		case O_OFFSET:
			if (pc_parse_u64(optarg, 1, &o->ro.offset))
				return bad_arg("--offset", optarg, "expected a byte count");
			break;
		case O_LENGTH:
			if (pc_parse_u64(optarg, 1, &o->ro.length))
				return bad_arg("--length", optarg, "expected a byte count");
			break;
		case O_WHOLE: o->ro.allow_whole_disk = 1; break;
		case O_CONNECT: o->connect = optarg; break;
		case O_CONSOLE: o->console = optarg; break;
		case O_SYSRQ: o->sysrq = optarg; break;
		case O_KEY: o->key = optarg; break;
		case O_FRESHBOOT: o->fresh_boot_id = 1; break;
		case O_BAUD:
			if (pc_parse_u64(optarg, 0, &o->baud) || o->baud > 4000000)
				return bad_arg("--baud", optarg, "expected a serial rate such as 115200");
			break;
		case O_BOARD: o->board = optarg; break;
		case O_RECSZ:
			if (pc_parse_u64(optarg, 1, &o->record_size) || o->record_size % 512 ||
			    !o->record_size || o->record_size > PC_MAX_RECORD_SIZE)
				return bad_arg("--record-size", optarg, "expected a multiple of 512 up to 1M");
			break;
		case O_SEED:
			if (pc_parse_seed(optarg, &o->seed))
				return bad_arg("--seed", optarg, "expected an integer from 0 to 18446744073709551615");
			break;
		case O_SIZE:
			if (pc_parse_u64(optarg, 1, &o->size) || o->size % 4096 || !o->size)
				return bad_arg("--size", optarg, "expected a byte count, multiple of 4096");
			break;
		case O_YES: o->yes = 1; break;
		case O_FORCE: o->ro.force = 1; break;
		case O_CONFIRMDEV: o->ro.confirm_device = optarg; break;
		case O_BOOTDELAY:
			if (pc_parse_u64(optarg, 0, &o->boot_delay_ms) || o->boot_delay_ms > 600000)
				return bad_arg("--boot-delay-ms", optarg, "expected 0..600000");
			break;
		case O_CTIMEOUT:
			if (pc_parse_u64(optarg, 0, &o->connect_timeout_ms) || o->connect_timeout_ms > 86400000)
				return bad_arg("--connect-timeout-ms", optarg, "expected milliseconds");
			break;
		case O_PATTERN:
			o->pattern = pc_pattern_from_name(optarg);
			if (o->pattern < 0)
				return bad_arg("--pattern", optarg, "expected sequential or random");
			break;
		case O_SIM: {
			/* --sim-NAME: the sim's own option NAME (sim/emmc.h) */
			char opt[64];

			snprintf(opt, sizeof(opt), "--%s", long_opts[li].name);
			if (dev_sim_opt(&o->sims, long_opts[li].name + 4, optarg, err, sizeof(err)))
				return bad_arg(opt, optarg, err);
			o->ro.sim = o->sims;
			break;
		}
		case O_MODE:
			if (pc_mode_from_name(optarg) < 0)
				return bad_arg("--mode", optarg, "expected fua, fua+flush, flush, journal, none, relwr or relwr-off");
			o->mode = optarg;
			break;
		case O_RECORDS:
			if (pc_parse_u64(optarg, 0, &o->records) || !o->records || o->records > 1048576)
				return bad_arg("--records", optarg, "expected 1..1048576");
			break;
		case O_QD:
			if (pc_parse_u64(optarg, 0, &o->qd) || !o->qd || o->qd > 32)
				return bad_arg("--qd", optarg, "expected 1..32");
			break;
		case O_FLUSHEVERY:
			if (pc_parse_u64(optarg, 0, &o->flush_every) || !o->flush_every)
				return bad_arg("--flush-every", optarg, "expected a count >= 1");
			break;
		case 'v':
		case O_VERBOSE: o->verbose = 1; break;
		case 'h':
		case O_HELP: usage(stdout); exit(0);
		default: return -EINVAL;
		}
	}
	if (o->verbose)
		pc_log_init("powercut-agent", PC_LOG_DEBUG);
	if (optind < argc) {
		pc_err("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (!o->ro.spec) {
		pc_err("--device is required (a file, block device, PARTLABEL=..., or sim:PATH)");
		return -EINVAL;
	}
	return 0;
}

/* ---- emit targets ---- */

static int emit_link(json_object *msg, void *arg)
{
	return link_send(arg, msg);
}

/*
 * What reached the device (audit.h): one per agent process, opened with the
 * region. While the work runs, the writer's SUBMIT and ACK lines are
 * followed by an AUDIT line with the counts so far, at most every 8 lines
 * or 50 ms and only when they changed: the host holds what was issued up to
 * the cut, whenever it comes.
 */
static struct audit g_audit;

struct audited {
	struct link *l;
	unsigned since;
	uint64_t last_ms, last_total;
};

static uint64_t audit_total(void)
{
	const struct audit_counts *c = g_audit.sim ? g_audit.sim : &g_audit.c;
	uint64_t t = c->other;

	for (unsigned i = 0; i < c->n; i++)
		t += c->k[i].count;
	return t;
}

static int audit_send(struct audited *a, int force)
{
	json_object *m;
	uint64_t now = pc_now_ms(), total;

	if (!g_audit.on || (!force && ++a->since < 8 && now - a->last_ms < 50))
		return 0;
	audit_poll(&g_audit);
	total = audit_total();
	a->since = 0;
	a->last_ms = now;
	if (total == a->last_total && !force)
		return 0;
	a->last_total = total;
	m = pc_msg_new(PC_MSG_AUDIT);
	json_object_object_add(m, "audit", audit_json(&g_audit));
	return link_send(a->l, m);
}

/* The writer's sink on the link: lines gathered, written at each flush with
 * the AUDIT message when one is due. */
static int sink_line(const char *text, size_t len, void *arg)
{
	return link_send_text(((struct audited *)arg)->l, text, len);
}

static int sink_flush(void *arg)
{
	struct audited *a = arg;
	int ret = audit_send(a, 0), f = link_flush(a->l);

	return ret ? ret : f;
}

static int emit_stdout(json_object *msg, void *arg)
{
	char buf[PC_PROTO_MAX_LINE + 2];
	int n = pc_msg_line(msg, buf, sizeof(buf));

	json_object_put(msg);
	if (n < 0)
		return n;
	return fwrite(buf, 1, (size_t)n, stdout) == (size_t)n ? 0 : -EIO;
}

/* ---- identity ---- */

/* --fresh-boot-id: this process's own boot id (set once, by cmd_run) */
static char fresh_boot_id[37];

/* Who is speaking: agent version, this boot, the kernel and machine. */
static void boot_identity(json_object *o)
{
	struct utsname u;
	char boot_id[64] = "unknown";

	uname(&u);
	if (fresh_boot_id[0])
		pc_strlcpy(boot_id, fresh_boot_id, sizeof(boot_id));
	else
		pc_read_text("/proc/sys/kernel/random/boot_id", boot_id, sizeof(boot_id));
	json_object_object_add(o, "agent", json_object_new_string(PC_VERSION));
	json_object_object_add(o, "boot_id", json_object_new_string(boot_id));
	json_object_object_add(o, "boot_id_source", json_object_new_string(fresh_boot_id[0] ? "process" : "kernel"));
	json_object_object_add(o, "kernel", json_object_new_string(u.release));
	json_object_object_add(o, "machine", json_object_new_string(u.machine));
}

static json_object *identity(struct region *r, const struct writer_io *io)
{
	json_object *o = json_object_new_object(), *dev = json_object_new_object(), *q = NULL;

	boot_identity(o);
	json_object_object_add(o, "backend", json_object_new_string(r->dev.ops->name));
	json_object_object_add(o, "crc32c", json_object_new_string(pc_crc32c_impl_name()));
	if (r->dev.ops->identity)
		r->dev.ops->identity(&r->dev, dev);
	/* the device as the agent was told it (--device): the host checks it
	 * against the board's configuration (device.path) before any write */
	if (r->spec[0])
		json_object_object_add(dev, "spec", json_object_new_string(r->spec));
	/* queue facts travel at the top level: every verdict records them */
	if (json_object_object_get_ex(dev, "queue", &q)) {
		json_object_get(q);
		json_object_object_del(dev, "queue");
	} else {
		q = json_object_new_object();
		json_object_object_add(q, "fua", json_object_new_int(-1));
		json_object_object_add(q, "write_cache", json_object_new_string("unknown"));
	}
	json_object_object_add(o, "device", dev);
	json_object_object_add(o, "queue", q);
	json_object_object_add(o, "region", region_describe(r));
	json_object_object_add(o, "io", writer_describe(r, io));
	return o;
}

/* ---- commands ---- */

static int cmd_prepare(struct opts *o)
{
	char err[1024] = "";
	int ret;

	if (!o->yes) {
		pc_err("prepare destroys everything in the region on %s; add --yes to confirm", o->ro.spec);
		return 2;
	}
	if (o->ro.force && !o->ro.confirm_device) {
		pc_err("--force overwrites what libblkid finds on %s only with --confirm-device DEV, the device "
		       "path typed again", o->ro.spec);
		return 2;
	}
	ret = region_prepare(&o->ro, (uint32_t)o->record_size, o->seed, o->size, 1, err, sizeof(err));
	if (ret) {
		pc_err("%s", err);
		return 1;
	}
	return 0;
}

static int cmd_info(struct opts *o)
{
	struct region r;
	struct writer_io io = { 0 };
	char err[1024] = "";
	json_object *id;

	if (region_open(&r, &o->ro, 0, err, sizeof(err))) {
		pc_err("%s", err);
		return 1;
	}
	snprintf(io.why, sizeof(io.why), "not probed by info (read-only open)");
	id = identity(&r, &io);
	json_object_object_del(id, "io");
	puts(json_object_to_json_string_ext(id, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(id);
	region_close(&r);
	return 0;
}

static int cmd_scan(struct opts *o)
{
	struct region r;
	struct scan_stats st;
	char err[1024] = "";
	int ret;

	if (region_open(&r, &o->ro, 0, err, sizeof(err))) {
		pc_err("%s", err);
		return 1;
	}
	ret = region_scan(&r, o->pattern, NULL, 0, emit_stdout, NULL, &st);
	region_close(&r);
	fflush(stdout);
	if (ret) {
		pc_err("scan of %s failed: %s", o->ro.spec, strerror(-ret));
		return 1;
	}
	fprintf(stderr, "scanned %u slots: %u not whole, %" PRIu64 " ms\n", st.slots, st.anomalies, st.ms);
	return 0;
}

/*
 * The hello of this boot. Without a usable region (r NULL: the device could
 * not be opened, or has no valid powercut superblock) it says why in
 * region_error and carries no geometry: the agent then scans and writes
 * nothing.
 */
static json_object *hello_msg(struct region *r, const struct region *sb, const struct writer_io *io, const char *board,
			      const char *region_err)
{
	json_object *m = pc_msg_new(PC_MSG_HELLO), *id;

	json_object_object_add(m, "board", json_object_new_string(board));
	if (r) {
		id = identity(r, io);
		json_object_object_foreach(id, k, v)
			json_object_object_add(m, k, json_object_get(v));
		json_object_put(id);
		json_object_object_add(m, "superblock", region_sb_state(r));
		/* whether what reaches the device can be seen, and how (never guessed) */
		if (g_audit.on) {
			json_object *a = json_object_new_object();

			json_object_object_add(a, "src", json_object_new_string(g_audit.src));
			json_object_object_add(m, "audit", a);
		} else {
			json_object_object_add(m, "audit", audit_json(&g_audit));
		}
	} else {
		json_object *q = json_object_new_object();

		boot_identity(m);
		json_object_object_add(m, "backend", json_object_new_string("none"));
		json_object_object_add(m, "device", json_object_new_object());
		json_object_object_add(q, "fua", json_object_new_int(-1));
		json_object_object_add(q, "write_cache", json_object_new_string("unknown"));
		json_object_object_add(m, "queue", q);
	}
	if (region_err) {
		json_object_object_del(m, "region");
		json_object_object_add(m, "region_error", json_object_new_string(region_err));
	}
	if (!r && sb && sb->sb_read)
		/* no usable region, but what each superblock copy says is a fact
		 * about the device the host judges (copies that disagree) */
		json_object_object_add(m, "superblock", region_sb_state(sb));
	return m;
}

/*
 * The sysrq "cut": reboot now, without syncing or unmounting. The device keeps
 * its power, so this is a crash test, not a power cut. Returns only on error.
 */
static int crash(struct opts *o, struct region *r, struct link *l)
{
	int fd;

	if (!o->sysrq) {
		link_send(l, pc_msg_error("crash refused: this agent was not started with --sysrq"));
		return -EPERM;
	}
	if (r && r->dev.ops->host_reset)
		r->dev.ops->host_reset(&r->dev);
	if (!strcmp(o->sysrq, "/proc/sysrq-trigger")) {
		/* the kernel may restrict sysrq; 1 allows every function */
		fd = open("/proc/sys/kernel/sysrq", O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			if (write(fd, "1", 1) < 0)
				pc_warn("/proc/sys/kernel/sysrq: %s", strerror(errno));
			close(fd);
		}
	}
	pc_info("crash requested: writing 'b' to %s", o->sysrq);
	fd = open(o->sysrq, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "b", 1) != 1) {
		int e = errno;
		link_send(l, pc_msg_error("crash failed: %s: %s", o->sysrq, strerror(e)));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	close(fd);
	for (;;)
		pause();	/* the reboot ends us */
}

/* How long one connection may wait for the host's challenge before the agent
 * starts over (a new connection, or a new hello on the console). */
#define CHALLENGE_WAIT_MS 5000

/* How long an agent that cannot authenticate (no key) tries to reach the host
 * to say so, at most: the reason is on its console too. */
#define TELL_HOST_MS 5000

/* The console is the agent's stderr (console mode, once it is open). */
static int g_console_on_stderr;

/* A marked setup_error line (docs/protocol.md), newline included; its length or < 0. */
static int setup_line(const struct opts *o, const char *cause, const char *reason, int marked, char *buf,
		      size_t len)
{
	json_object *m = pc_msg_setup_error(o->board, cause, "%s", reason);
	size_t off = marked ? strlen(PC_PROTO_MARKER) : 0;
	int n;

	if (!m || len <= off)
		return -ENOMEM;
	memcpy(buf, PC_PROTO_MARKER, off);
	n = pc_msg_line(m, buf + off, len - off);
	json_object_put(m);
	return n < 0 ? n : (int)off + n;
}

/*
 * The agent cannot get to a valid hello: say why, once for a person (stderr:
 * the board's console, the journal, or a sim board's console log) and once
 * marked, a setup_error line the host picks out of the console it captures.
 * In console mode the console gets both even before it is the agent's
 * stderr (a missing key is found before the console is opened).
 */
static void setup_said(const struct opts *o, const char *cause, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void setup_said(const struct opts *o, const char *cause, const char *fmt, ...)
{
	char reason[PC_PROTO_MAX_REASON + 1], line[PC_PROTO_MAX_LINE + 16], human[PC_PROTO_MAX_REASON + 64];
	va_list ap;
	int n, h;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	pc_err("%s", reason);
	n = setup_line(o, cause, reason, 1, line, sizeof(line));
	if (n > 0 && pc_write_all(STDERR_FILENO, line, (size_t)n))
		pc_debug("stderr: %s", strerror(errno));
	if (n > 0 && o->console && !g_console_on_stderr) {
		struct link l;
		char err[256];

		if (link_open_serial(&l, o->console, (uint32_t)o->baud, err, sizeof(err))) {
			pc_err("%s", err);
			return;
		}
		h = snprintf(human, sizeof(human), "powercut-agent: error: %s\r\n", reason);
		if (pc_write_all(l.fd, human, h < (int)sizeof(human) ? (size_t)h : sizeof(human) - 1) == 0)
			pc_write_all(l.fd, line, (size_t)n);
		link_close(&l);
	}
}

/*
 * The same, to the host itself when it can be reached but not authenticated
 * with (no key): before any hello, one unauthenticated setup_error line on a
 * new connection. The host records it as the agent's word (a link_reject
 * event), unproven; a boot that ends without a hello is then INFRA_ERROR
 * with this reason rather than the device's BOOT_FAIL.
 */
static void setup_tell_host(const struct opts *o, const char *cause, const char *reason)
{
	uint64_t deadline = pc_now_ms() + (o->connect_timeout_ms < TELL_HOST_MS ? o->connect_timeout_ms : TELL_HOST_MS);
	char line[PC_PROTO_MAX_LINE + 16], err[512];
	struct link l;
	int n, ret;

	if (!o->connect || (n = setup_line(o, cause, reason, 0, line, sizeof(line))) < 0)
		return;
	for (;;) {
		ret = link_connect(&l, o->connect, 0, err, sizeof(err));
		if (ret == 0 || ret == -ECONNREFUSED || ret == -EINVAL || pc_now_ms() >= deadline)
			break;	/* refused: the host is not there, and waiting will not bring it */
		pc_sleep_us(100000);
	}
	if (ret) {
		pc_debug("could not tell the host: %s", err);
		return;
	}
	if (pc_write_all(l.fd, line, (size_t)n))
		pc_debug("could not tell the host at %s: %s", l.peer, strerror(errno));
	link_close(&l);
}

/* Append a KNOWN line's entries, up to the protocol's limits. 0 or -ENOMEM. */
static int known_add(struct scan_known *kn, const struct pc_msg *m)
{
	uint32_t take = PC_PROTO_MAX_KNOWN - kn->n < m->u.known.n ? PC_PROTO_MAX_KNOWN - kn->n : m->u.known.n;
	uint32_t takes = PC_PROTO_MAX_KNOWN_SLOTS - kn->nslots < m->u.known.nslots ?
		PC_PROTO_MAX_KNOWN_SLOTS - kn->nslots : m->u.known.nslots;

	if (take) {
		struct pc_known *k = realloc(kn->k, (kn->n + take) * sizeof(*k));
		if (!k)
			return -ENOMEM;
		memcpy(k + kn->n, m->u.known.k, take * sizeof(*k));
		kn->k = k;
		kn->n += take;
	}
	if (takes) {
		struct pc_known_slot *k = realloc(kn->slots, (kn->nslots + takes) * sizeof(*k));
		if (!k)
			return -ENOMEM;
		memcpy(k + kn->nslots, m->u.known.slots, takes * sizeof(*k));
		kn->slots = k;
		kn->nslots += takes;
	}
	return 0;
}

/* One authenticated session: the host's requests until it hangs up. */
static int serve(struct opts *o, struct region *r, struct writer_io *io, struct link *l, int have_region)
{
	char err[1024] = "";
	/* the damaged sectors the host holds, from KNOWN lines, for the next VERIFY */
	struct scan_known kn = { 0 };
	int ret;

	for (;;) {
		struct pc_msg m;
		struct scan_stats st;
		struct writer_result res;

		ret = link_recv(l, &m, err, sizeof(err));
		if (ret == -EPIPE) {
			free(kn.k);
			free(kn.slots);
			return 0;	/* the host hung up: the cycle is over */
		}
		if (ret) {
			pc_err("bad message from the host: %s", err);
			link_send(l, pc_msg_error("agent cannot use host message: %s", err));
			free(kn.k);
			free(kn.slots);
			return ret;
		}
		pc_debug("host asks: %s", pc_msg_type_name(m.type));
		if (m.type == PC_MSG_ERROR) {
			/* the host ends this boot and says why (its hello refused: a
			 * region it cannot use, another device, ...): nothing to retry */
			json_object *t;

			json_object_object_get_ex(m.obj, "msg", &t);
			pc_err("the host ended this session: %s", json_object_get_string(t));
			pc_msg_clear(&m);
			free(kn.k);
			free(kn.slots);
			return -ECONNABORTED;
		}
		if (!have_region && (m.type == PC_MSG_VERIFY || m.type == PC_MSG_WORK)) {
			/* never adopt a geometry: no superblock of our own, no I/O */
			link_send(l, pc_msg_error("no usable powercut region on %s: refusing to %s", o->ro.spec,
						  m.type == PC_MSG_WORK ? "write" : "scan"));
			pc_msg_clear(&m);
			free(kn.k);
			free(kn.slots);
			return -EPERM;
		}
		switch (m.type) {
		case PC_MSG_CRASH:
			ret = crash(o, have_region ? r : NULL, l);
			break;
		case PC_MSG_KNOWN:
			/* bounded: past the limits old damage is sent again, as before */
			ret = known_add(&kn, &m);
			if (ret)
				link_send(l, pc_msg_error("out of memory for the host's known damage"));
			break;
		case PC_MSG_VERIFY:
			ret = region_scan_known(r, m.u.verify.pattern, m.u.verify.full ? NULL : m.u.verify.ranges,
						m.u.verify.nranges, &kn, emit_link, l, &st);
			free(kn.k);
			free(kn.slots);
			memset(&kn, 0, sizeof(kn));
			if (ret == -ERANGE) {
				link_send(l, pc_msg_error("verify asks for positions past the region's %u slots",
							  r->g.nslots));
			} else if (ret) {
				link_send(l, pc_msg_error("scan of %s failed: %s", r->path, strerror(-ret)));
			} else {
				pc_debug("scanned %u slots: %u not whole, %u raw sectors sent, %u known, %" PRIu64 " ms",
					 st.slots, st.anomalies, st.raw_sent, st.known, st.ms);
			}
			break;
		case PC_MSG_WORK: {
			struct audited aud = { .l = l, .last_ms = pc_now_ms() };

			err[0] = 0;
			memset(&res, 0, sizeof(res));
			audit_reset(&g_audit);
			/* the audit is on: the host knows from the start (a cut before
			 * the first request leaves an empty count, not none) */
			audit_send(&aud, 1);
			/* the writer's lines of one reap go out in one write */
			link_cork(l);
			ret = writer_run(r, io, &m.u.work, &(struct writer_sink){ sink_line, sink_flush, &aud }, &res,
					 err, sizeof(err));
			{
				int u = link_uncork(l);

				if (!ret && u) {
					snprintf(err, sizeof(err), "sending to the host failed: %s", strerror(-u));
					ret = u;
				}
			}
			audit_poll(&g_audit);
			if (ret == 0) {
				json_object *d = pc_msg_new(PC_MSG_DONE);
				json_object_object_add(d, "audit", audit_json(&g_audit));
				json_object_object_add(d, "records", json_object_new_int64((int64_t)res.records));
				json_object_object_add(d, "ms", json_object_new_int64((int64_t)res.ms));
				json_object_object_add(d, "mode", json_object_new_string(pc_mode_name(res.mode_run)));
				json_object_object_add(d, "io", json_object_new_string(
					!io->aio ? "pwritev2" : r->dev.ops->aio_name));
				ret = link_send(l, d);
			} else if (res.write_errno > 0 && res.write_errno < 4096 && res.write_seq) {
				/* the device refused a write: a finding, and nothing more is written */
				json_object *e = pc_msg_error("%s", err), *we = json_object_new_object();
				pc_err("%s", err);
				json_object_object_add(we, "errno", json_object_new_int(res.write_errno));
				json_object_object_add(we, "lba", json_object_new_uint64(res.write_lba));
				json_object_object_add(we, "seq", json_object_new_uint64(res.write_seq));
				json_object_object_add(we, "mode", json_object_new_string(pc_mode_name(m.u.work.mode)));
				json_object_object_add(e, "write_error", we);
				link_send(l, e);
			} else {
				pc_err("%s", err);
				audit_send(&aud, 1);
				link_send(l, pc_msg_error("%s", err));
			}
			break;
		}
		default:
			link_send(l, pc_msg_error("agent does not accept '%s' messages", pc_msg_type_name(m.type)));
			ret = -EINVAL;
		}
		pc_msg_clear(&m);
		if (ret) {
			free(kn.k);
			free(kn.slots);
			return ret;
		}
	}
}

static int cmd_run(struct opts *o)
{
	struct region r;
	struct writer_io io = { 0 };
	struct pc_auth_key key;
	struct link l = { .fd = -1 };
	char err[1024] = "";
	char *region_err = NULL;
	const char *keyfile = o->key ? o->key : getenv("PC_KEY_FILE");
	const char *cause = "no_challenge";
	uint64_t deadline;
	int ret, rc = 1, have_region = 0, tries = 0;

	if ((!o->connect == !o->console) || !o->board) {
		setup_said(o, "usage", "run needs --board NAME and one of --connect HOST:PORT or --console TTY (%s%s%s)",
			   o->board ? "" : "no --board", !o->board && !o->connect == !o->console ? "; " : "",
			   !o->connect == !o->console ? (o->connect ? "both --connect and --console" :
							 "neither --connect nor --console") : "");
		return 2;
	}
	if (!keyfile || !keyfile[0]) {
		snprintf(err, sizeof(err), "run needs --key FILE: the campaign's key (powercut run creates it; see "
			 "docs/protocol.md); neither --key nor PC_KEY_FILE is set");
		setup_said(o, "key_missing", "%s", err);
		setup_tell_host(o, "key_missing", err);
		return 2;
	}
	ret = pc_auth_key_load(keyfile, &key, err, sizeof(err));
	if (ret) {
		cause = ret == -ENOENT ? "key_missing" : "key_unreadable";
		setup_said(o, cause, "%s", err);
		setup_tell_host(o, cause, err);
		return 1;
	}
	if (o->fresh_boot_id)
		pc_auth_uuid(fresh_boot_id);
	/* the sim's program times are short sleeps: keep the kernel's timer
	 * slack from stretching them tenfold */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	/* the board boots: nothing happens until the boot delay has passed */
	if (o->boot_delay_ms)
		pc_sleep_us(o->boot_delay_ms * 1000);
	ret = region_open(&r, &o->ro, 1, err, sizeof(err));
	if (ret == -ENODEV) {
		/* the device does not respond: a board like that does not boot (the
		 * line says so on the console; the host does not hear it as a setup
		 * mistake: cause "device") */
		setup_said(o, "device", "%s: not starting", err);
		return 1;
	}
	if (ret) {
		/* no region we may use (no valid superblock of our own, a mounted or
		 * foreign device): say why to the host, authenticated, and do nothing */
		pc_err("%s", err);
		region_err = strdup(err);
	} else {
		have_region = 1;
		writer_probe(&r, &io);
		audit_open(&g_audit, &r);
	}
	/* reach the host and authenticate; start over when the host drops the
	 * link before it has spoken (a full queue, a restart) */
	deadline = pc_now_ms() + o->connect_timeout_ms;
	for (;;) {
		uint64_t now = pc_now_ms();
		uint32_t left = now < deadline ? (uint32_t)(deadline - now) : 0;

		if (o->console) {
			ret = link_open_serial(&l, o->console, (uint32_t)o->baud, err, sizeof(err));
			if (ret) {
				setup_said(o, "console", "%s", err);
				goto out;
			}
			/* the agent's own messages belong on the console */
			if (dup2(l.fd, STDERR_FILENO) >= 0)
				g_console_on_stderr = 1;
		} else {
			/* one try first: a refusal is said at once (the console
			 * shows it while the host still waits), then the rest */
			ret = link_connect(&l, o->connect, 0, err, sizeof(err));
			if (ret && ret != -EINVAL && left) {
				setup_said(o, "connect", "%s; trying for %u ms more", err, left);
				ret = link_connect(&l, o->connect, left, err, sizeof(err));
			}
			if (ret) {
				setup_said(o, "connect", "%s", err);
				goto out;
			}
		}
		tries++;
		ret = link_handshake(&l, &key, hello_msg(have_region ? &r : NULL, &r, &io, o->board, region_err),
				     left < CHALLENGE_WAIT_MS ? (left ? left : 1) : CHALLENGE_WAIT_MS, err, sizeof(err));
		if (ret == 0) {
			ret = serve(o, &r, &io, &l, have_region);
			if (ret == 0 && !l.confirmed) {
				ret = -EPIPE;
				cause = "key_refused";
				snprintf(err, sizeof(err), "the host at %s closed the link without an authenticated word "
					 "after the proof: it did not accept it (is --key the campaign's key?)", l.peer);
			} else {
				if (ret == 0)
					rc = have_region ? 0 : 1;
				break;
			}
		} else {
			cause = ret == -EPIPE ? "hello_refused" : "no_challenge";
		}
		link_close(&l);
		if (pc_now_ms() >= deadline) {
			if (!strcmp(cause, "no_challenge"))
				setup_said(o, cause, "%s; gave up after %" PRIu64 " ms and %d tr%s (%s)", err,
					   o->connect_timeout_ms, tries, tries == 1 ? "y" : "ies", o->console ?
					   "is the host's end of this console open, at this baud, and no getty on it?" :
					   "is --connect the campaign's listen address, or another service's?");
			else
				setup_said(o, cause, "%s; gave up after %" PRIu64 " ms%s", err, o->connect_timeout_ms,
					   !strcmp(cause, "hello_refused") ? " (the host's log says why it refused the "
					   "hello: is --board one of the campaign's boards, and is that board being "
					   "powered on?)" : "");
			goto out;
		}
		if (tries == 1)
			/* said at once, marked: the host may judge the boot before
			 * the agent gives up */
			setup_said(o, cause, "%s; trying again for %" PRIu64 " ms", err, deadline - pc_now_ms());
		else
			pc_info("%s; trying again", err);
		pc_sleep_us(100000);
	}
out:
	explicit_bzero(&key, sizeof(key));
	free(region_err);
	link_close(&l);
	audit_close(&g_audit);
	if (have_region)
		region_close(&r);
	writer_release(&io);	/* after the close: nothing is in flight any more */
	return rc;
}

/* The writer's lines go nowhere; the audit is read as they come, often
 * enough that the kernel's buffer (1 MiB a CPU: some 14,000 requests) never
 * fills: every 1,024 lines or 20 ms. Each read is a system call per CPU:
 * reading every 8 lines cost the writer a tenth of its rate at QD 1 on a
 * memory-backed loop device. */
struct counts {
	struct audit *audit;
	unsigned lines;
	uint64_t last_ms;
};

static int line_count(const char *text, size_t len, void *arg)
{
	struct counts *c = arg;

	(void)text;
	(void)len;
	if (!c->audit)
		return 0;
	if (++c->lines % 1024 == 0 || (c->lines % 16 == 0 && pc_now_ms() - c->last_ms >= 20)) {
		audit_poll(c->audit);
		c->last_ms = pc_now_ms();
	}
	return 0;
}

static int cmd_write(struct opts *o)
{
	struct region r;
	struct writer_io io = { 0 };
	struct writer_result res;
	struct counts cnt = { 0 };
	struct pc_work w = { 0 };
	struct audit aud;
	char err[1024] = "";
	json_object *out;
	int ret;

	if (!o->mode || !o->yes) {
		pc_err("write needs --mode MODE and --yes (it overwrites the records in the region on %s)", o->ro.spec);
		return 2;
	}
	if (region_open(&r, &o->ro, 1, err, sizeof(err))) {
		pc_err("%s", err);
		return 1;
	}
	writer_probe(&r, &io);
	w.cycle = 1;
	w.first = 1;
	w.n = o->records ? (uint32_t)o->records : r.g.nslots;
	if (w.n > r.g.nslots)
		w.n = r.g.nslots;
	w.mode = pc_mode_from_name(o->mode);
	w.pattern = o->pattern;
	w.record_size = r.g.record_size;
	w.flush_every = (uint32_t)o->flush_every;
	w.qd = (uint32_t)o->qd;
	/* what reached the device, as in a campaign's verdict (docs/io-audit.md) */
	audit_open(&aud, &r);
	audit_reset(&aud);
	cnt.audit = &aud;
	ret = writer_run(&r, &io, &w, &(struct writer_sink){ line_count, NULL, &cnt }, &res, err, sizeof(err));
	audit_poll(&aud);
	if (ret) {
		pc_err("%s", err);
		if (res.write_errno) {
			/* the refused write, for scripts: the same facts the host gets */
			json_object *we = json_object_new_object();

			out = json_object_new_object();
			json_object_object_add(we, "errno", json_object_new_int(res.write_errno));
			json_object_object_add(we, "lba", json_object_new_uint64(res.write_lba));
			json_object_object_add(we, "seq", json_object_new_uint64(res.write_seq));
			json_object_object_add(we, "mode", json_object_new_string(pc_mode_name(res.mode_run)));
			json_object_object_add(we, "op", json_object_new_string(res.write_op ? res.write_op : "write"));
			json_object_object_add(out, "error", json_object_new_string(err));
			json_object_object_add(out, "write_error", we);
			json_object_object_add(out, "io_audit", audit_json(&aud));
			puts(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
			json_object_put(out);
		}
		audit_close(&aud);
		region_close(&r);
		writer_release(&io);
		return 1;
	}
	out = json_object_new_object();
	json_object_object_add(out, "mode", json_object_new_string(o->mode));
	json_object_object_add(out, "mode_run", json_object_new_string(pc_mode_name(res.mode_run)));
	json_object_object_add(out, "pattern", json_object_new_string(pc_pattern_name(o->pattern)));
	json_object_object_add(out, "record_size", json_object_new_int64(r.g.record_size));
	json_object_object_add(out, "qd", json_object_new_int64((int64_t)o->qd));
	json_object_object_add(out, "records", json_object_new_int64((int64_t)res.records));
	json_object_object_add(out, "acked", json_object_new_int64((int64_t)res.acked));
	json_object_object_add(out, "ms", json_object_new_int64((int64_t)res.ms));
	json_object_object_add(out, "records_per_s",
			       json_object_new_double(res.ms ? (double)res.records * 1000.0 / (double)res.ms : 0));
	json_object_object_add(out, "mib_per_s", json_object_new_double(
		res.ms ? (double)res.records * r.g.record_size / 1048576.0 * 1000.0 / (double)res.ms : 0));
	json_object_object_add(out, "io", writer_describe(&r, &io));
	json_object_object_add(out, "io_audit", audit_json(&aud));
	puts(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(out);
	audit_close(&aud);
	region_close(&r);
	writer_release(&io);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	const char *cmd;
	int rc = 2;

	pc_log_init("powercut-agent", PC_LOG_INFO);
	/* a host that hangs up is an EPIPE to handle, not a death by SIGPIPE */
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version")) {
		printf("powercut-agent %s\n", PC_VERSION);
		return 0;
	}
	if (parse_opts(argc - 1, argv + 1, &o)) {
		dev_sim_opts_free(o.sims);
		return 2;
	}
	if (!strcmp(cmd, "prepare"))
		rc = cmd_prepare(&o);
	else if (!strcmp(cmd, "run"))
		rc = cmd_run(&o);
	else if (!strcmp(cmd, "scan"))
		rc = cmd_scan(&o);
	else if (!strcmp(cmd, "info"))
		rc = cmd_info(&o);
	else if (!strcmp(cmd, "write"))
		rc = cmd_write(&o);
	else
		pc_err("unknown command '%s' (commands: prepare, run, scan, info, write; see --help)", cmd);
	dev_sim_opts_free(o.sims);
	return rc;
}
