/*
 * main.c - powercut-agent: runs on the board, next to the device under test.
 * This file parses the options and runs the offline commands (prepare, info,
 * scan); run is cmd_run.c, write cmd_write.c, the --help texts cmd_usage.c.
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
#include "common/features.h"
#include "common/util.h"
#include "agent/audit.h"
#include "agent/link.h"
#include "agent/region.h"
#include "agent/writer.h"
#include "agent/cmd.h"

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
	{ "sim-keep-inputs", required_argument, NULL, O_SIM },
	{ "verbose", no_argument, NULL, O_VERBOSE },	/* debug messages on stderr */
	{ "mode", required_argument, NULL, O_MODE },
	{ "records", required_argument, NULL, O_RECORDS },
	{ "qd", required_argument, NULL, O_QD },
	{ "flush-every", required_argument, NULL, O_FLUSHEVERY },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

static int bad_arg(const char *opt, const char *val, const char *what)
{
	pc_err("%s '%s': %s", opt, val, what);
	return -EINVAL;
}

/* An option with a number: 0 taken, -EINVAL (said), or 1 not one of them. */
static int parse_number(int c, struct opts *o)
{
	switch (c) {
	case O_OFFSET:
		if (pc_parse_u64(optarg, 1, &o->ro.offset))
			return bad_arg("--offset", optarg, "expected a byte count");
		return 0;
	case O_LENGTH:
		if (pc_parse_u64(optarg, 1, &o->ro.length))
			return bad_arg("--length", optarg, "expected a byte count");
		return 0;
	case O_BAUD:
		if (pc_parse_u64(optarg, 0, &o->baud) || o->baud > 4000000)
			return bad_arg("--baud", optarg, "expected a serial rate such as 115200");
		return 0;
	case O_RECSZ:
		if (pc_parse_u64(optarg, 1, &o->record_size) || o->record_size % 512 ||
		    !o->record_size || o->record_size > PC_MAX_RECORD_SIZE)
			return bad_arg("--record-size", optarg, "expected a multiple of 512 up to 1M");
		return 0;
	case O_SEED:
		if (pc_parse_seed(optarg, &o->seed))
			return bad_arg("--seed", optarg, "expected an integer from 0 to 18446744073709551615");
		return 0;
	case O_SIZE:
		if (pc_parse_u64(optarg, 1, &o->size) || o->size % 4096 || !o->size)
			return bad_arg("--size", optarg, "expected a byte count, multiple of 4096");
		return 0;
	case O_BOOTDELAY:
		if (pc_parse_u64(optarg, 0, &o->boot_delay_ms) || o->boot_delay_ms > 600000)
			return bad_arg("--boot-delay-ms", optarg, "expected 0..600000");
		return 0;
	case O_CTIMEOUT:
		if (pc_parse_u64(optarg, 0, &o->connect_timeout_ms) || o->connect_timeout_ms > 86400000)
			return bad_arg("--connect-timeout-ms", optarg, "expected milliseconds");
		return 0;
	case O_RECORDS:
		if (pc_parse_u64(optarg, 0, &o->records) || !o->records || o->records > 1048576)
			return bad_arg("--records", optarg, "expected 1..1048576");
		return 0;
	case O_QD:
		if (pc_parse_u64(optarg, 0, &o->qd) || !o->qd || o->qd > 32)
			return bad_arg("--qd", optarg, "expected 1..32");
		return 0;
	case O_FLUSHEVERY:
		if (pc_parse_u64(optarg, 0, &o->flush_every) || !o->flush_every)
			return bad_arg("--flush-every", optarg, "expected a count >= 1");
		return 0;
	default:
		return 1;
	}
}

static int parse_opts(const char *cmd, int argc, char **argv, struct opts *o)
{
	char err[256];
	int c, li = 0, ret;

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
		if ((ret = parse_number(c, o)) <= 0) {
			if (ret)
				return ret;
			continue;
		}
		switch (c) {
		case O_DEVICE: o->ro.spec = optarg; break;
		case O_WHOLE: o->ro.allow_whole_disk = 1; break;
		case O_CONNECT: o->connect = optarg; break;
		case O_CONSOLE: o->console = optarg; break;
		case O_SYSRQ: o->sysrq = optarg; break;
		case O_KEY: o->key = optarg; break;
		case O_FRESHBOOT: o->fresh_boot_id = 1; break;
		case O_BOARD: o->board = optarg; break;
		case O_YES: o->yes = 1; break;
		case O_FORCE: o->ro.force = 1; break;
		case O_CONFIRMDEV: o->ro.confirm_device = optarg; break;
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
		case 'v':
		case O_VERBOSE: o->verbose = 1; break;
		case 'h':
		case O_HELP: agent_usage(stdout, cmd); exit(0);
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

static int emit_stdout(json_object *msg, void *arg)
{
	char buf[PC_PROTO_MAX_LINE + 2];
	int n = pc_msg_line(msg, buf, sizeof(buf));

	json_object_put(msg);
	if (n < 0)
		return n;
	return fwrite(buf, 1, (size_t)n, stdout) == (size_t)n ? 0 : -EIO;
}

/* ---- commands ---- */

static int cmd_prepare(struct opts *o)
{
	const char *path;
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
	/* the sim programs a prepare at file speed: no campaign measures it */
	if (o->ro.spec && dev_ops_for(o->ro.spec, &path) == &dev_sim_ops) {
		if (dev_sim_opt(&o->sims, "untimed", "1", err, sizeof(err))) {
			pc_err("%s", err);
			return 1;
		}
		o->ro.sim = o->sims;
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
	id = agent_identity(&r, &io);
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

int main(int argc, char **argv)
{
	struct opts o;
	const char *cmd;
	int rc = 2;

	pc_log_init("powercut-agent", PC_LOG_INFO);
	/* a host that hangs up is an EPIPE to handle, not a death by SIGPIPE */
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		agent_usage(stderr, NULL);
		return 2;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		/* powercut-agent help COMMAND: that command's */
		agent_usage(stdout, argc > 2 ? argv[2] : NULL);
		return 0;
	}
	if (!strcmp(cmd, "--version")) {
		printf("powercut-agent %s (%s)\n", PC_VERSION, PC_AGENT_FEATURES);
		return 0;
	}
	if (!agent_cmd_known(cmd)) {
		pc_err("unknown command '%s' (commands: prepare, run, scan, info, write; see --help)", cmd);
		return 2;
	}
	if (parse_opts(cmd, argc - 1, argv + 1, &o)) {
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
	dev_sim_opts_free(o.sims);
	return rc;
}

