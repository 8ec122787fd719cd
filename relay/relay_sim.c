/*
 * relay_sim.c - the sim board's "relay": power is a process group.
 *
 * Power ON spawns `powercut-agent run` against an emulated eMMC whose NAND is
 * <state_dir>/media.img. Power OFF is SIGKILL of the agent's whole process
 * group: the cut lands wherever the agent happens to be, mid-write or
 * mid-program, exactly as asynchronous as a real relay. The media file
 * survives; the emulated volatile cache dies with the process.
 *
 * The agent is the leader of its own group (both sides call setpgid, so
 * kill(-pid) works whichever runs first). We reap only our own pid, never
 * install signal handlers, and bound every wait.
 *
 * The agent must not outlive the harness: a restarted harness listening on
 * the same port would take an orphan's HELLO for its new power-on's, and
 * its cut could not kill it. Every group is started through a gate
 * (relay_group.h): the agent dies with the harness (PR_SET_PDEATHSIG), and
 * its group is on record in <state_dir>/pgid before it runs, so open kills
 * whatever an earlier harness left before any board powers on.
 */
#include "relay/relay_priv.h"
#include "relay/relay_group.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

/* the sim board's agent runs at this niceness (see sim_on) */
#define SIM_AGENT_NICE	10

struct sim_priv {
	char media[PATH_MAX];
	char log[PATH_MAX];
	char pgid[PATH_MAX];	/* the record of the group we run (relay_group.h) */
	char preparing[PATH_MAX];	/* exists while the media is being prepared */
	char agent[PATH_MAX];
	char connect[128];
	char key[PATH_MAX];	/* the campaign's key file: the agent's --key */
	char profile[128];
	uint64_t size, seed;
	uint64_t record_size, program_us, cache_sectors, cut_after;
	uint64_t keep_inputs;	/* device.keep_inputs: --sim-keep-inputs (0: not passed) */
	double rate;
	int boot_delay_ms, timeout_ms;
	int prepare_timeout_ms;	/* preparing the medium, once, before the loop */
	int switch_ms;		/* a slow relay: each on and off takes this long first */
	pid_t pid;		/* the agent, leader of its process group; 0 when off */
};

static const char *const sim_keys[] = { "driver", "boot_delay_ms", "timeout_ms", "switch_ms", "prepare_timeout_ms" };

static int sim_check(json_object *cfg, char *err, size_t errlen)
{
	int rc;

	rc = relay_check_keys(cfg, "sim", sim_keys, PC_ARRAY_SIZE(sim_keys), err, errlen);
	if (!rc)
		rc = relay_check_int(cfg, "boot_delay_ms", 0, RELAY_MS_MAX, err, errlen);
	if (!rc)
		rc = relay_check_int(cfg, "timeout_ms", 1, RELAY_MS_MAX, err, errlen);
	if (!rc)
		rc = relay_check_int(cfg, "switch_ms", 0, 60000, err, errlen);
	if (!rc)
		rc = relay_check_int(cfg, "prepare_timeout_ms", 1, RELAY_MS_MAX, err, errlen);
	return rc;
}

/* A number from the device section: an integer, or (sizes) "4M"-style text. */
static int sim_dev_u64(struct relay *r, json_object *dev, const char *key, int suffixes, uint64_t def,
		       uint64_t *out)
{
	json_object *v;

	*out = def;
	if (!dev || !json_object_object_get_ex(dev, key, &v))
		return 0;
	/* json-c holds integers above INT64_MAX only as uint64: get_int64 would
	 * clamp them to 2^63-1 (a seed of 2^64-1 became 2^63-1 in the agent's
	 * superblock while campaign.json kept 2^64-1) */
	if (json_object_is_type(v, json_type_int) && json_object_get_int64(v) >= 0) {
		*out = json_object_get_uint64(v);
		return 0;
	}
	if (suffixes && json_object_is_type(v, json_type_string) &&
	    pc_parse_u64(json_object_get_string(v), 1, out) == 0)
		return 0;
	relay_errf(r, "device.%s: expected %s, got %s", key,
		   suffixes ? "bytes (an integer or a string like \"4M\")" : "an integer from 0 to 18446744073709551615",
		   json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
	return -EINVAL;
}

static int sim_read_device(struct relay *r, struct sim_priv *p, json_object *dev)
{
	json_object *v;

	if (sim_dev_u64(r, dev, "size", 1, 4u << 20, &p->size) ||
	    sim_dev_u64(r, dev, "record_size", 0, 4096, &p->record_size) ||
	    sim_dev_u64(r, dev, "program_us", 0, 20, &p->program_us) ||
	    sim_dev_u64(r, dev, "cut_after_sectors", 0, 0, &p->cut_after) ||
	    sim_dev_u64(r, dev, "cache_sectors", 0, 256, &p->cache_sectors) ||
	    sim_dev_u64(r, dev, "seed", 0, 1, &p->seed) ||
	    sim_dev_u64(r, dev, "keep_inputs", 0, 0, &p->keep_inputs))
		return -EINVAL;
	pc_strlcpy(p->profile, "honest", sizeof(p->profile));
	if (dev && json_object_object_get_ex(dev, "profile", &v)) {
		if (!json_object_is_type(v, json_type_string)) {
			relay_errf(r, "device.profile: expected a string like \"honest\"");
			return -EINVAL;
		}
		pc_strlcpy(p->profile, json_object_get_string(v), sizeof(p->profile));
	}
	p->rate = 0.01;
	if (dev && json_object_object_get_ex(dev, "rate", &v)) {
		if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int)) {
			relay_errf(r, "device.rate: expected a number from 0 to 1");
			return -EINVAL;
		}
		p->rate = json_object_get_double(v);
	}
	return 0;
}

/* Shortest text that reads back as the same double, so argv is exact. */
static void sim_fmt_double(char *buf, size_t len, double d)
{
	snprintf(buf, len, "%.15g", d);
	if (strtod(buf, NULL) != d)
		snprintf(buf, len, "%.17g", d);
}

/*
 * fork+exec argv[0] in its own process group (relay_spawn_gated), stdin from
 * /dev/null, stdout and stderr to outfd, its group on record in p->pgid
 * before it runs. A failed exec is reported to us, so a wrong agent path is
 * an error here rather than a silent dead board.
 */
static int sim_spawn(struct relay *r, struct sim_priv *p, char *const argv[], int outfd, pid_t *pidp)
{
	const struct relay_spawn_names names = {
		.what = "agent", .whose = "the agent's", .pgid = p->pgid, .setup_note = "",
		.run_what = "agent ", .run_hint = "; give the powercut-agent binary (--agent)",
	};
	struct pc_spawn s;

	pc_spawn_init(&s);
	/* The harness may ignore SIGPIPE or block signals; the agent expects
	 * defaults. Its sockets stay out of the board (CLOEXEC). A real board
	 * has a CPU of its own; the sim board shares the host's with the
	 * harness, and yields it first (nice 10), so a cut is not late because
	 * sixteen boards were busy writing (sim_cut gives it back to the dying
	 * agent). The gate makes it a group leader first. */
	s.flags = PC_SPAWN_SIGDFL | PC_SPAWN_CLOEXEC | PC_SPAWN_NICE | PC_SPAWN_EXEC_ERR;
	s.nice = SIM_AGENT_NICE;
	s.fd_out = s.fd_err = outfd;
	return relay_spawn_gated(r, &names, &s, argv, pidp);
}

/* The last non-empty line of a log file, for error messages. */
static const char *sim_log_tail(const char *path, char *buf, size_t len)
{
	char tail[1024];
	ssize_t n = -1;
	off_t size;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	buf[0] = 0;
	if (fd < 0)
		return buf;
	size = lseek(fd, 0, SEEK_END);
	if (size >= 0)
		n = pread(fd, tail, sizeof(tail) - 1, size > (off_t)sizeof(tail) - 1 ? size - (off_t)sizeof(tail) + 1 : 0);
	close(fd);
	if (n <= 0)
		return buf;
	tail[n] = 0;
	return relay_last_line(tail, buf, len);
}

/* A half-prepared media must not pass for a resumed one next time. */
static void sim_discard_media(struct sim_priv *p)
{
	char truth[PATH_MAX + 16];

	static const char *const side[] = { ".truth.jsonl", ".state", ".stale", ".bricked" };

	unlink(p->media);
	/* the sim's side files belong to the media: none may outlive it */
	for (size_t i = 0; i < sizeof(side) / sizeof(side[0]); i++) {
		snprintf(truth, sizeof(truth), "%s%s", p->media, side[i]);
		unlink(truth);
	}
	unlink(p->preparing);
}

/* fsync the folder holding path, so a created or removed name is durable. */
static int sim_sync_dir(const char *path)
{
	char dir[PATH_MAX];
	char *slash;
	int fd, rc = 0;

	pc_strlcpy(dir, path, sizeof(dir));
	slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = 0;
	else
		pc_strlcpy(dir, slash ? "/" : ".", sizeof(dir));
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0)
		rc = -errno;
	if (fd >= 0)
		close(fd);
	errno = -rc;	/* for callers that report errno */
	return rc;
}

/* Run `agent prepare` synchronously, bounded by prepare_timeout_ms (120 s by
 * default). Preparing the medium is set-up, once per board before the
 * campaign's loop, not a switch: timeout_ms bounds the switches (a test sets
 * it to 1 s to see a hung relay quickly, and a loaded machine takes longer
 * than that to prepare). */
static int sim_prepare(struct relay *r, struct sim_priv *p)
{
	char dev[PATH_MAX + 8], size[32], rs[32], seed[32], last[200];
	char *argv[] = { p->agent, "prepare", "--device", dev, "--size", size, "--record-size", rs,
			 "--seed", seed, "--yes", NULL };
	struct stat st;
	pid_t pid = 0;
	int fd, rc, status = 0;

	snprintf(dev, sizeof(dev), "sim:%s", p->media);
	snprintf(size, sizeof(size), "%" PRIu64, p->size);
	snprintf(rs, sizeof(rs), "%" PRIu64, p->record_size);
	snprintf(seed, sizeof(seed), "%" PRIu64, p->seed);
	/* A harness killed during prepare leaves a media with no superblock (or
	 * half the slots filled) that the next open would take for the device
	 * of a resumed campaign: the marker, durable before prepare starts and
	 * removed once it succeeded, tells the next open to start over. */
	fd = open(p->preparing, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || fsync(fd) < 0 || sim_sync_dir(p->preparing) < 0) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		relay_errf(r, "cannot create %s: %s", p->preparing, strerror(-rc));
		return rc;
	}
	close(fd);
	fd = open(p->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rc = -errno;
		relay_errf(r, "cannot create %s: %s", p->log, strerror(-rc));
		return rc;
	}
	rc = sim_spawn(r, p, argv, fd, &pid);
	close(fd);
	if (rc < 0)
		return rc;
	rc = relay_reap(pid, &status, (uint64_t)p->prepare_timeout_ms);
	if (rc == -ETIMEDOUT) {
		kill(-pid, SIGKILL);
		if (relay_reap(pid, &status, RELAY_REAP_MS) == 0)
			relay_group_forget(p->pgid);
		sim_discard_media(p);
		relay_errf(r,
			   "preparing %s timed out after %d ms (killed); see %s, or raise relay.prepare_timeout_ms",
			   p->media, p->prepare_timeout_ms, p->log);
		return rc;
	}
	if (rc < 0) {
		relay_errf(r, "waiting for '%s prepare': %s", p->agent, strerror(-rc));
		return rc;
	}
	relay_group_forget(p->pgid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		sim_discard_media(p);
		sim_log_tail(p->log, last, sizeof(last));
		relay_errf(r, "preparing %s failed (%s %d): %s; see %s", p->media,
			   WIFEXITED(status) ? "exit status" : "signal",
			   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
			   last[0] ? last : "(no output)", p->log);
		return -EIO;
	}
	if (stat(p->media, &st) < 0) {
		relay_errf(r, "'%s prepare' succeeded but %s does not exist; see %s",
			   p->agent, p->media, p->log);
		return -ENOENT;
	}
	/* the agent synced the media before it exited 0 */
	if (unlink(p->preparing) < 0 || sim_sync_dir(p->preparing) < 0) {
		rc = -errno;
		relay_errf(r, "prepared %s, but cannot remove %s: %s", p->media, p->preparing, strerror(-rc));
		return rc;
	}
	return 0;
}

/* The state folder's files (media, prepare log, process group, prepare marker), agent, address and key into p. */
static int sim_paths(struct relay *r, struct sim_priv *p, const struct relay_ctx *ctx, const char *connect)
{
	if ((size_t)snprintf(p->media, sizeof(p->media), "%s/media.img", ctx->state_dir) >= sizeof(p->media) ||
	    (size_t)snprintf(p->log, sizeof(p->log), "%s/prepare.log", ctx->state_dir) >= sizeof(p->log) ||
	    (size_t)snprintf(p->pgid, sizeof(p->pgid), "%s/" RELAY_GROUP_FILE, ctx->state_dir) >= sizeof(p->pgid) ||
	    (size_t)snprintf(p->preparing, sizeof(p->preparing), "%s/media.preparing", ctx->state_dir) >=
		    sizeof(p->preparing) ||
	    strlen(ctx->agent_path) >= sizeof(p->agent) || strlen(connect) >= sizeof(p->connect)) {
		relay_errf(r, "state folder, agent path or address too long");
		return -ENAMETOOLONG;
	}
	pc_strlcpy(p->agent, ctx->agent_path, sizeof(p->agent));
	pc_strlcpy(p->connect, connect, sizeof(p->connect));
	pc_strlcpy(p->key, ctx->key_path ? ctx->key_path : "", sizeof(p->key));
	return 0;
}

/* Before anything touches the media: an agent an earlier harness left
 * running would write to it, and say HELLO in our board's name. */
static int sim_kill_orphans(struct relay *r, const struct sim_priv *p)
{
	char note[PATH_MAX * 2 + 256], gerr[sizeof(r->err)], match[PATH_MAX + 8];
	int rc;

	snprintf(match, sizeof(match), "sim:%s", p->media);
	rc = relay_group_kill_orphans(p->pgid, match, note, sizeof(note), gerr, sizeof(gerr));
	if (rc < 0) {
		relay_errf(r, "%s", gerr);
		return rc;
	}
	if (note[0])
		pc_warn("board %s: relay sim: %s", r->board, note);
	return 0;
}

/* An existing media is a resumed campaign's device: keep its contents;
 * unless its prepare never finished: no cycle ever ran on it. Else prepare one. */
static int sim_media(struct relay *r, struct sim_priv *p)
{
	struct stat st;
	int rc;

	if (stat(p->media, &st) < 0 && errno != ENOENT) {
		rc = -errno;
		relay_errf(r, "cannot stat %s: %s", p->media, strerror(-rc));
		return rc;
	}
	if (stat(p->media, &st) == 0) {
		if (access(p->preparing, F_OK) < 0)
			return 0;
		pc_warn("board %s: relay sim: %s was being prepared when an earlier powercut stopped; "
			"preparing it again", r->board, p->media);
		sim_discard_media(p);
	}
	rc = sim_prepare(r, p);
	return rc < 0 ? rc : 0;
}

static int sim_open(struct relay *r, json_object *cfg, const struct relay_ctx *ctx)
{
	struct sim_priv *p;
	const char *connect;
	json_object *v;
	int rc;

	if (!ctx || !ctx->agent_path || !ctx->state_dir) {
		relay_errf(r, "needs the agent binary and a state folder");
		return -EINVAL;
	}
	/* No harness address: switched on by hand (`powercut relay`) for a
	 * campaign that picks its port when it runs. The agent still needs
	 * one; port 1 is never a harness, so it boots and waits for none. */
	connect = ctx->connect && ctx->connect[0] ? ctx->connect : "127.0.0.1:1";
	p = calloc(1, sizeof(*p));
	if (!p) {
		relay_errf(r, "out of memory");
		return -ENOMEM;
	}
	p->timeout_ms = 10000;
	p->prepare_timeout_ms = 120000;
	if (cfg && json_object_object_get_ex(cfg, "prepare_timeout_ms", &v))
		p->prepare_timeout_ms = (int)json_object_get_int64(v);
	if (cfg && json_object_object_get_ex(cfg, "timeout_ms", &v))
		p->timeout_ms = (int)json_object_get_int64(v);
	if (cfg && json_object_object_get_ex(cfg, "boot_delay_ms", &v))
		p->boot_delay_ms = (int)json_object_get_int64(v);
	if (cfg && json_object_object_get_ex(cfg, "switch_ms", &v))
		p->switch_ms = (int)json_object_get_int64(v);
	rc = sim_read_device(r, p, ctx->device);
	if (rc >= 0)
		rc = sim_paths(r, p, ctx, connect);
	if (rc >= 0 && (rc = pc_mkdir_p(ctx->state_dir, 0755)) < 0)
		relay_errf(r, "cannot create %s: %s", ctx->state_dir, strerror(-rc));
	if (rc >= 0)
		rc = sim_kill_orphans(r, p);
	if (rc >= 0)
		rc = sim_media(r, p);
	if (rc < 0) {
		free(p);
		return rc;
	}
	r->priv = p;
	return 0;
}

/* Cut: SIGKILL the whole group, then reap the leader. 0 or -ETIMEDOUT. */
static int sim_cut(struct relay *r, struct sim_priv *p)
{
	int rc;

	/* the dying board gets its CPU back (where we may give it: root),
	 * so that it is gone as soon as a real board's power would be */
	(void)setpriority(PRIO_PGRP, (id_t)p->pid, 0);
	rc = relay_kill_group(r, &p->pid, "agent", "");

	if (rc == 0)
		relay_group_forget(p->pgid);
	return rc;
}

static int sim_get(struct relay *r)
{
	struct sim_priv *p = r->priv;

	if (!p->pid)
		return 0;
	if (relay_child_running(p->pid))
		return 1;
	/* The agent exited on its own: take down whatever it left in its group. */
	return sim_cut(r, p) < 0 ? -ETIMEDOUT : 0;
}

static int sim_on(struct relay *r)
{
	struct sim_priv *p = r->priv;
	char dev[PATH_MAX + 8], pus[32], cache[32], seed[32], rate[40], delay[32], cut[32], keep[32];
	char *argv[] = { p->agent, "run", "--device", dev, "--sim-profile", p->profile,
			 "--sim-program-us", pus, "--sim-cache-sectors", cache, "--sim-seed", seed,
			 "--sim-rate", rate, "--connect", p->connect, "--board", r->board,
			 "--boot-delay-ms", delay, "--key", p->key, "--fresh-boot-id", NULL, NULL, NULL, NULL, NULL,
			 NULL, NULL };
	size_t n = 0;
	int fd, rc;

	if (p->switch_ms)
		pc_sleep_us((uint64_t)p->switch_ms * 1000);
	rc = sim_get(r);
	if (rc < 0)
		return rc;
	if (rc == 1) {
		relay_errf(r, "already on (agent pid %d); switch it off first", (int)p->pid);
		return -EBUSY;
	}
	snprintf(dev, sizeof(dev), "sim:%s", p->media);
	snprintf(pus, sizeof(pus), "%" PRIu64, p->program_us);
	snprintf(cache, sizeof(cache), "%" PRIu64, p->cache_sectors);
	snprintf(seed, sizeof(seed), "%" PRIu64, p->seed);
	sim_fmt_double(rate, sizeof(rate), p->rate);
	snprintf(delay, sizeof(delay), "%d", p->boot_delay_ms);
	while (argv[n])
		n++;
	if (p->cut_after) {
		/* the deterministic cut point: the sim cuts itself */
		snprintf(cut, sizeof(cut), "%" PRIu64, p->cut_after);
		argv[n++] = "--sim-cut-after";
		argv[n++] = cut;
	}
	if (r->cut[0]) {
		/* the cut plan's flush or FUA write of this power-on: the sim cuts
		 * itself there, exactly */
		argv[n++] = "--sim-cut-at";
		argv[n++] = r->cut;
	}
	if (p->keep_inputs) {
		/* each power-on's inputs of a crash-state check (docs/sim.md) */
		snprintf(keep, sizeof(keep), "%" PRIu64, p->keep_inputs);
		argv[n++] = "--sim-keep-inputs";
		argv[n++] = keep;
	}
	if (r->console[0])
		fd = open(r->console, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	else
		fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		relay_errf(r, "cannot open console log %s: %s",
			   r->console[0] ? r->console : "/dev/null", strerror(-rc));
		return rc;
	}
	rc = sim_spawn(r, p, argv, fd, &p->pid);
	close(fd);
	return rc;
}

static int sim_off(struct relay *r)
{
	struct sim_priv *p = r->priv;

	/* a slow relay is slow whether or not the board is on */
	if (p->switch_ms)
		pc_sleep_us((uint64_t)p->switch_ms * 1000);
	if (!p->pid)
		return 0;
	return sim_cut(r, p);
}

static void sim_close(struct relay *r)
{
	struct sim_priv *p = r->priv;

	if (!p)
		return;
	if (p->pid)
		sim_cut(r, p);
	free(p);
	r->priv = NULL;
}

/* No lock of its own: the board is our process, in its results folder,
 * and that folder's lock covers it (relay_lock.h). */
static int sim_ident(json_object *cfg, char *buf, size_t len)
{
	return -ENOENT;
}

const struct relay_ops relay_sim_ops = {
	.ident = sim_ident,
	.name = "sim",
	.check = sim_check,
	.open = sim_open,
	.on = sim_on,
	.off = sim_off,
	.get = sim_get,
	.close = sim_close,
	.caps = RELAY_CAP_EXACT_CUT | RELAY_CAP_VIRTUAL | RELAY_CAP_SIM_AGENT,
};
