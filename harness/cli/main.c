/*
 * main.c - powercut, the host controller.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/auth.h"
#include "common/features.h"
#include "common/util.h"
#include "relay/relay.h"
#include "relay/relay_hold.h"
#include "relay/relay_lock.h"
#include "vboard/vboard.h"
#include "harness/campaign/campaign.h"
#include "harness/campaign/config.h"
#include "harness/cli/cli.h"
#include "harness/cli/lava.h"
#include "harness/cli/plan.h"
#include "harness/cli/replay.h"
#include "harness/report/report.h"
#include "harness/results/results.h"
#include "harness/cli/status.h"

static const char usage_text[] =
	"usage: powercut COMMAND [OPTIONS]\n"
	"\n"
	"  run CONFIG [--results DIR] [--cycles N] [--target RATE[,CONF]] [--agent PATH] [--quiet]\n"
	"      [--no-report]\n"
	"        run (or resume) a power-cut campaign; default results folder results/<campaign>/;\n"
	"        --target: a board stops once each mode shows its violation rate below RATE\n"
	"  replay [--junit FILE] [--report] [--quiet] RESULTS_DIR...\n"
	"        recompute every verdict from events.jsonl; exit 1 on any difference, 2 on errors\n"
	"  report [--format text|md|html|json|junit|csv] [-o FILE] [--confidence C] RESULTS_DIR...\n"
	"        the per-device report (PASS, FAIL, BOOT_FAIL or INCOMPLETE); several folders merge\n"
	"  status [--json] RESULTS_DIR\n"
	"        whether a run holds the folder and, per board, its cycle, state, counts, last FAIL, ETA\n"
	"  check-config CONFIG\n"
	"        validate a configuration: prints \"configuration OK\" or the error\n"
	"  relay CONFIG BOARD on|off|cycle|get|release\n"
	"        switch one board's relay by hand (bring-up); get never switches it\n"
	"  key new [--force] FILE | key show FILE\n"
	"        make a campaign key (mode 0600) for key_file and the boards' --key; its fingerprint\n"
	"  plan --rate P [--confidence C] [--failures K --cuts N] [--cycle-s S]\n"
	"        how many cuts show a violation rate below P (exact binomial bound)\n"
	"  lava CAMPAIGN --results DIR [--board NAME] [--cycles N] [--print]\n"
	"        run or resume a campaign in a LAVA test shell and report it to LAVA\n"
	"  crash-states RESULTS_DIR [--board NAME] [--cycle N|--all] [--exhaustive K] [--random R]\n"
	"        judge every crash state of the cycles a sim board kept the inputs of\n"
	"\n"
	"run and report exit 0 when every device PASSed, 1 when one FAILed (a FAIL or BOOT_FAIL\n"
	"cycle), 3 when one is INCOMPLETE or INCONCLUSIVE and none failed (a board given up, too\n"
	"many INFRA_ERROR cycles, cycles left to run: an interrupted run resumes with the same\n"
	"command; or too few cuts landed during writes to prove anything), 2 on\n"
	"errors. One run per results folder: a second run on a folder in use exits 2 naming the\n"
	"first. See powercut(1).\n";

static int usage(FILE *f, int rc)
{
	fputs(usage_text, f);
	return rc;
}

static const char run_usage[] =
	"usage: powercut run CONFIG [--results DIR] [--cycles N] [--target RATE[,CONF]] [--agent PATH]\n"
	"                    [--quiet] [--no-report]\n"
	"\n"
	"Runs a power-cut campaign, or resumes it: a results folder that already holds\n"
	"the campaign continues at each board's next cycle (docs/config.md, Resuming).\n"
	"\n"
	"  -r, --results DIR   the results folder (default results/<campaign>/)\n"
	"  -c, --cycles N      cycles per board, 1 to 10000000 (overrides the configuration's\n"
	"                      cycles; may grow a finished campaign)\n"
	"  -t, --target RATE[,CONF]  a board stops once each of its modes shows its per-cut\n"
	"                      violation rate below RATE at confidence CONF (default 0.95)\n"
	"  -a, --agent PATH    the powercut-agent sim boards start (default: the one beside\n"
	"                      powercut, else the one in PATH)\n"
	"  -q, --quiet         no progress lines and no FAIL announcements (warnings and\n"
	"                      errors still printed)\n"
	"      --no-report     no report at the end\n"
	"  -h, --help          this text\n"
	"\n"
	"Exit status: 0 every device PASSed, 1 one FAILed (a FAIL or BOOT_FAIL cycle), 3 one\n"
	"is INCOMPLETE and none failed (an interrupted run resumes with the same command),\n"
	"2 on errors (a second run on a folder in use exits 2 naming the first).\n";


/* config_warnings(), one pc_warn() a line; how many. */
static unsigned warn_config(const struct campaign_cfg *cfg)
{
	char buf[8192], *save = NULL;
	unsigned n = config_warnings(cfg, buf, sizeof(buf));

	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		pc_warn("%s", l);
	return n;
}

static int cmd_run(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "results", required_argument, NULL, 'r' },
		{ "cycles", required_argument, NULL, 'c' },
		{ "agent", required_argument, NULL, 'a' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "no-report", no_argument, NULL, 'n' },
		{ "target", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct campaign_opts o = { 0 };
	struct campaign_cfg cfg = { 0 };
	double trate = 0, tconf = 0;
	char terr[256];
	uint64_t v;
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "r:c:t:a:qh", lo, NULL)) != -1) {
		switch (c) {
		case 'r': o.results = optarg; break;
		case 'c':
			if (pc_parse_u64(optarg, 0, &v) || v == 0 || v > 10000000) {
				pc_err("--cycles '%s': expected 1..10000000", optarg);
				return 2;
			}
			o.cycles = (long)v;
			break;
		case 'a': o.agent = optarg; break;
		case 'q': o.quiet = 1; break;
		case 'n': o.no_report = 1; break;
		case 't':
			if (config_target_parse(optarg, &trate, &tconf, terr, sizeof(terr))) {
				pc_err("--target %s", terr);
				return 2;
			}
			break;
		case 'h': fputs(run_usage, stdout); return 0;
		default: return 2;
		}
	}
	if (optind != argc - 1) {
		pc_err("run takes one configuration file (see powercut run --help)");
		return 2;
	}
	if (cli_load(argv[optind], &cfg))
		return 2;
	if (trate > 0)
		config_set_target(&cfg, trate, tconf);
	warn_config(&cfg);
	rc = campaign_run(&cfg, &o);
	config_free(&cfg);
	return rc;
}

static int cmd_check(int argc, char **argv)
{
	struct campaign_cfg cfg = { 0 };
	unsigned nwarn;

	if (argc != 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs("usage: powercut check-config CONFIG\n", argc == 2 ? stdout : stderr);
		return argc == 2 ? 0 : 2;
	}
	if (cli_load(argv[1], &cfg))
		return 1;
	/* values that suit only the sim, on a real board: said, not refused */
	nwarn = warn_config(&cfg);
	/* run would make a new key there, which no board has */
	if (cfg.key_file[0] && access(cfg.key_file, F_OK) < 0 && errno == ENOENT) {
		pc_warn("%s: key_file: %s does not exist: `powercut run` would make a new key there, which no "
			"board has; make it now (powercut key new %s) and give each board's agent a copy", argv[1],
			cfg.key_file, cfg.key_file);
		nwarn++;
	}
	printf("configuration OK: campaign %s, %u board%s, %u cycle%s", cfg.name, cfg.nboards,
	       cfg.nboards == 1 ? "" : "s", cfg.cycles, cfg.cycles == 1 ? "" : "s");
	if (nwarn)
		printf(" (%u warning%s above)", nwarn, nwarn == 1 ? "" : "s");
	printf("\n");
	config_free(&cfg);
	return 0;
}

static const char replay_usage[] =
	"usage: powercut replay [--junit FILE] [--report] [--quiet] RESULTS_DIR...\n"
	"\n"
	"Recomputes every verdict of each results folder from its events.jsonl with this\n"
	"powercut's engine and compares them with its verdicts.jsonl. A board's first\n"
	"differing verdict is shown field by field (- recorded, + recomputed).\n"
	"\n"
	"  --junit FILE  write the comparison as JUnit XML: a testsuite per folder, a\n"
	"                testcase per board, its first difference as the failure\n"
	"  --report      print each folder's per-device report as this powercut judges it\n"
	"  --quiet       print nothing for a folder whose every verdict matches\n"
	"  --help        this text\n"
	"\n"
	"Exit status: 0 every verdict of every folder matches, 1 some verdict differs, is\n"
	"missing or extra, 2 an error (a folder that cannot be replayed, a line of\n"
	"events.jsonl refused or skipped, a report that cannot be made, a JUnit file\n"
	"that cannot be written, a bad option).\n";

/* 0 every verdict matches, 1 a difference, 2 an error (replay_main()) */
static int cmd_replay(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "junit", required_argument, NULL, 'j' },
		{ "report", no_argument, NULL, 'r' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct replay_cli o = { 0 };
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "j:rqh", lo, NULL)) != -1) {
		switch (c) {
		case 'j': o.junit = optarg; break;
		case 'r': o.report = 1; break;
		case 'q': o.quiet = 1; break;
		case 'h': fputs(replay_usage, stdout); return 0;
		default: return 2;
		}
	}
	if (optind >= argc) {
		pc_err("replay takes one or more results folders (see powercut replay --help)");
		return 2;
	}
	return replay_main((const char *const *)argv + optind, argc - optind, stdout, &o);
}

static const char report_usage[] =
	"usage: powercut report [--format text|md|html|json|junit|csv] [-o FILE] [--confidence C] RESULTS_DIR...\n"
	"\n"
	"The per-device report of one or more results folders (or verdicts.jsonl files): one\n"
	"PASS / FAIL / BOOT_FAIL / INCOMPLETE line per device, then per part and unit the test\n"
	"conditions, outcomes and violations per write mode, speed, latency and the cost of\n"
	"each durability mode against none. Folders from several hosts and nights merge; a\n"
	"cycle given twice (the same folder, or a copy) counts once.\n"
	"\n"
	"  -f, --format F   text (default), md (Markdown), html (one self-contained page with\n"
	"                   charts), json (the names of verdicts.jsonl), junit (JUnit XML: a\n"
	"                   testsuite per device, a testcase per mode), csv (a row per cycle)\n"
	"      --json       the same as --format json\n"
	"  -o, --output F   write to file F (replaced only once the report is complete)\n"
	"  -c, --confidence C  of the bounds on each mode's violation rate: 0.95 or 95% (default:\n"
	"                   the campaign's target.confidence, else 95%; 50% to 99.99%)\n"
	"      --compare A B [RESULTS_DIR...]  two parts side by side (text, or --format html):\n"
	"                   per mode each one's verdict, cuts, bound, records/s, latency, and B's\n"
	"                   speed over A's. A and B are results folders, or, with RESULTS_DIRs,\n"
	"                   devices of them (an id or part of one, or a board's name); exit 0, or 2\n"
	"  -h, --help       this text\n"
	"\n"
	"Exit status: 0 every device PASS; 1 a device FAILed (a FAIL or BOOT_FAIL cycle); 3 a\n"
	"device is INCOMPLETE (a board given up, too many INFRA_ERROR cycles, cycles left, a run\n"
	"still going or killed) or INCONCLUSIVE (too few cuts landed during its writes) and none\n"
	"failed; 2 the report could not be made.\n";

/* 0 every device PASS, 1 one FAIL or BOOT_FAIL, 3 one INCOMPLETE or
 * INCONCLUSIVE (none failed), 2 when the report cannot be made */
/* --confidence: 0.5 to 0.9999, or 50% to 99.99%: 0, or 2 (said) */
static int report_confidence(const char *arg, double *out)
{
	char *end;
	double v = strtod(arg, &end);

	if (end != arg && *end == '%' && !end[1]) {
		v /= 100.0;
		end++;
	}
	if (end == arg || *end || !(v >= 0.5 && v <= 0.9999)) {
		pc_err("--confidence '%s': expected 0.5 to 0.9999, or 50%% to 99.99%%", arg);
		return 2;
	}
	*out = v;
	return 0;
}

/* report's options into o, *outpath and *cmp_a, argv[optind] on the first
 * folder: -1 to go on, else the exit code (--help, or an error said) */
static int report_args(int argc, char **argv, struct report_opts *o, const char **outpath, const char **cmp_a)
{
	static const struct option lo[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "output", required_argument, NULL, 'o' },
		{ "confidence", required_argument, NULL, 'c' },
		{ "compare", required_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, fmt;

	optind = 1;
	while ((c = getopt_long(argc, argv, "f:o:c:h", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (report_confidence(optarg, &o->confidence))
				return 2;
			break;
		case 'f':
			if ((fmt = report_format_from_name(optarg)) < 0) {
				pc_err("--format '%s': expected text, md, html, json, junit or csv", optarg);
				return 2;
			}
			o->format = (enum report_format)fmt;
			break;
		case 'j': o->format = REPORT_FMT_JSON; break;
		case 'o': *outpath = optarg; break;
		case 'C': *cmp_a = optarg; break;
		case 'h': fputs(report_usage, stdout); return 0;
		default: fputs(report_usage, stderr); return 2;
		}
	}
	if (*cmp_a && optind >= argc) {
		pc_err("report --compare A B: B is missing (see powercut report --help)");
		return 2;
	}
	if (*cmp_a && o->format != REPORT_FMT_TEXT && o->format != REPORT_FMT_HTML) {
		pc_err("report --compare: text or html only");
		return 2;
	}
	if (!*cmp_a && optind >= argc) {
		pc_err("report: no results folder given (see powercut report --help)");
		return 2;
	}
	return -1;
}

static int cmd_report(int argc, char **argv)
{
	struct report_opts o = { 0 };
	const char *outpath = NULL, *cmp_a = NULL;
	char err[1024] = "", tmp[PATH_MAX];
	FILE *out = stdout;
	int c, result;

	if ((c = report_args(argc, argv, &o, &outpath, &cmp_a)) >= 0)
		return c;
	if (outpath) {
		/* the whole report or nothing: written beside, renamed when complete */
		if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", outpath, (long)getpid()) >= (int)sizeof(tmp) ||
		    !(out = fopen(tmp, "we"))) {
			pc_err("%s: cannot write: %s", outpath, strerror(errno));
			return 2;
		}
	}
	if (cmp_a) {
		result = 0;
		c = report_compare(cmp_a, argv[optind], (const char *const *)argv + optind + 1, argc - optind - 1, out,
				   &o, err, sizeof(err));
	} else {
		c = report_run((const char *const *)argv + optind, argc - optind, out, &o, &result, err, sizeof(err));
	}
	if (c) {
		pc_err("%s", err);
		if (outpath) {
			fclose(out);
			unlink(tmp);
		}
		return 2;
	}
	if (outpath && (fclose(out) != 0 || rename(tmp, outpath) != 0)) {
		pc_err("%s: cannot write: %s", outpath, strerror(errno));
		unlink(tmp);
		return 2;
	}
	return result;
}

static int cmd_status(int argc, char **argv)
{
	return status_main(argc, argv);
}

static const char key_usage[] =
	"usage: powercut key new [--force] FILE\n"
	"       powercut key show FILE\n"
	"\n"
	"  new   make a campaign key in FILE: 64 random hex digits, mode 0600. An existing\n"
	"        FILE is refused unless --force (a board with the old key can no longer\n"
	"        prove itself). Point the configuration's key_file at FILE and give each\n"
	"        board's agent a copy (powercut-agent run --key).\n"
	"  show  check FILE as an agent would (mode, 64 hex digits) and print its\n"
	"        fingerprint, never the key: the SHA-256 of the key file as powercut writes\n"
	"        it, so `sha256sum FILE` of a copy on a board prints the same digits.\n"
	"\n"
	"Exit status: 0 done, 1 the file could not be made or read, 2 usage.\n";

/* `powercut key`: the campaign key without a campaign (common/auth.c makes
 * it, the same as `run` does for a results folder). 0, 1 or 2. */
static int cmd_key(int argc, char **argv)
{
	struct pc_auth_key k;
	char err[PATH_MAX + 256], fp[65], tmp[PATH_MAX];
	const char *file;
	int force = 0, i = 2, r;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(key_usage, stdout);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "new") && argc >= 3 && !strcmp(argv[2], "--force")) {
		force = 1;
		i = 3;
	}
	if (argc < 2 || (strcmp(argv[1], "new") && strcmp(argv[1], "show")) || argc != i + 1 || !argv[i][0] ||
	    argv[i][0] == '-') {
		fputs(key_usage, stderr);
		return 2;
	}
	file = argv[i];
	if (!strcmp(argv[1], "new")) {
		/* --force: a new key beside, renamed over the old one, so FILE
		 * always holds a whole key, old or new */
		if (force && snprintf(tmp, sizeof(tmp), "%s.new-%ld", file, (long)getpid()) >= (int)sizeof(tmp)) {
			pc_err("key file %s: path too long", file);
			return 1;
		}
		r = pc_auth_key_create(force ? tmp : file, err, sizeof(err));
		if (r == -EEXIST) {
			pc_err("key file %s exists: keeping it (boards may hold a copy); powercut key new --force %s "
			       "replaces it", file, file);
			return 1;
		}
		if (r) {
			pc_err("%s", err);
			return 1;
		}
		if (force && rename(tmp, file)) {
			pc_err("key file %s: cannot replace it: %s", file, strerror(errno));
			unlink(tmp);
			return 1;
		}
	}
	if (pc_auth_key_load(file, &k, err, sizeof(err))) {
		pc_err("%s", err);
		return 1;
	}
	pc_auth_key_fingerprint(&k, fp);
	memset(&k, 0, sizeof(k));
	if (!strcmp(argv[1], "new"))
		printf("made the campaign key %s (mode 0600%s): set the configuration's \"key_file\" to it and copy it "
		       "to each board, e.g. install -D -m 600 %s ROOTFS/etc/powercut/agent.key\n",
		       file, force ? ", the old key replaced" : "", file);
	printf("key %s: fingerprint sha256 %s (sha256sum of a copy shows the same)\n", file, fp);
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd;
	int rc;

	pc_log_init("powercut", PC_LOG_INFO);
	/* the drivers of the rooms above relay/ join its list (vboard.h) */
	if ((rc = vboard_register()) < 0) {
		fprintf(stderr, "powercut: cannot add the qemu relay driver to relay.c's list: %s\n", strerror(-rc));
		return 2;
	}
	if (argc < 2)
		return usage(stderr, 2);
	cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help"))
		return usage(stdout, 0);
	if (!strcmp(cmd, "--version")) {
		printf("powercut %s (%s)\n", PC_VERSION, PC_HOST_FEATURES);
		return 0;
	}
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "replay"))
		return cmd_replay(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(cmd, "status"))
		return cmd_status(argc - 1, argv + 1);
	if (!strcmp(cmd, "check-config"))
		return cmd_check(argc - 1, argv + 1);
	if (!strcmp(cmd, "relay"))
		return cmd_relay(argc - 1, argv + 1);
	if (!strcmp(cmd, "key"))
		return cmd_key(argc - 1, argv + 1);
	if (!strcmp(cmd, "lava"))
		return cmd_lava(argc - 1, argv + 1);
	if (!strcmp(cmd, "crash-states"))
		return cmd_crash_states(argc - 1, argv + 1);
	if (!strcmp(cmd, "plan"))
		return cmd_plan(argc - 1, argv + 1);
	pc_err("unknown command '%s' (see powercut --help)", cmd);
	return 2;
}
