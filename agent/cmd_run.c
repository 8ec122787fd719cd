/*
 * cmd_run.c - powercut-agent run: reach the host, authenticate, say HELLO,
 * then scan and write as the host asks until it hangs up (docs/protocol.md).
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
#include "agent/cmd.h"

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

json_object *agent_identity(struct region *r, const struct writer_io *io)
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
		id = agent_identity(r, io);
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

/* WORK: the writer's run, its lines on the link with the AUDIT lines, then
 * DONE, or the refused write (a finding), or the error. */
static int serve_work(struct region *r, struct writer_io *io, struct link *l, const struct pc_msg *m)
{
	struct audited aud = { .l = l, .last_ms = pc_now_ms() };
	char err[1024] = "";
	struct writer_result res;
	int ret;

	memset(&res, 0, sizeof(res));
	audit_reset(&g_audit);
	/* the audit is on: the host knows from the start (a cut before
	 * the first request leaves an empty count, not none) */
	audit_send(&aud, 1);
	/* the writer's lines of one reap go out in one write */
	link_cork(l);
	ret = writer_run(r, io, &m->u.work, &(struct writer_sink){ sink_line, sink_flush, &aud }, &res,
			 err, sizeof(err));
	{
		int u = link_uncork(l);

		if (!ret && u) {
			ret = pc_fail(err, sizeof(err), u, "sending to the host failed: %s", strerror(-u));
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
		json_object_object_add(we, "mode", json_object_new_string(pc_mode_name(m->u.work.mode)));
		json_object_object_add(e, "write_error", we);
		link_send(l, e);
	} else {
		pc_err("%s", err);
		audit_send(&aud, 1);
		link_send(l, pc_msg_error("%s", err));
	}
	return ret;
}

/* VERIFY: the region scanned, damage the host knows (from KNOWN lines) not sent again; kn is used up. */
static int serve_verify(struct region *r, struct link *l, const struct pc_msg *m, struct scan_known *kn)
{
	struct scan_stats st;
	int ret = region_scan_known(r, m->u.verify.pattern, m->u.verify.full ? NULL : m->u.verify.ranges,
				    m->u.verify.nranges, kn, emit_link, l, &st);

	free(kn->k);
	free(kn->slots);
	memset(kn, 0, sizeof(*kn));
	if (ret == -ERANGE) {
		link_send(l, pc_msg_error("verify asks for positions past the region's %u slots", r->g.nslots));
	} else if (ret) {
		link_send(l, pc_msg_error("scan of %s failed: %s", r->path, strerror(-ret)));
	} else {
		pc_debug("scanned %u slots: %u not whole, %u raw sectors sent, %u known, %" PRIu64 " ms",
			 st.slots, st.anomalies, st.raw_sent, st.known, st.ms);
	}
	return ret;
}

/* One message from the host: 0 to read the next, or why this session ends. */
static int serve_msg(struct opts *o, struct region *r, struct writer_io *io, struct link *l, struct pc_msg *m,
		     struct scan_known *kn, int have_region)
{
	int ret;

	if (m->type == PC_MSG_ERROR) {
		/* the host ends this boot and says why (its hello refused: a
		 * region it cannot use, another device, ...): nothing to retry */
		json_object *t;

		json_object_object_get_ex(m->obj, "msg", &t);
		pc_err("the host ended this session: %s", json_object_get_string(t));
		return -ECONNABORTED;
	}
	if (!have_region && (m->type == PC_MSG_VERIFY || m->type == PC_MSG_WORK)) {
		/* never adopt a geometry: no superblock of our own, no I/O */
		link_send(l, pc_msg_error("no usable powercut region on %s: refusing to %s", o->ro.spec,
					  m->type == PC_MSG_WORK ? "write" : "scan"));
		return -EPERM;
	}
	switch (m->type) {
	case PC_MSG_CRASH:
		return crash(o, have_region ? r : NULL, l);
	case PC_MSG_KNOWN:
		/* bounded: past the limits old damage is sent again, as before */
		ret = known_add(kn, m);
		if (ret)
			link_send(l, pc_msg_error("out of memory for the host's known damage"));
		return ret;
	case PC_MSG_VERIFY:
		return serve_verify(r, l, m, kn);
	case PC_MSG_WORK:
		return serve_work(r, io, l, m);
	default:
		link_send(l, pc_msg_error("agent does not accept '%s' messages", pc_msg_type_name(m->type)));
		return -EINVAL;
	}
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

		ret = link_recv(l, &m, err, sizeof(err));
		if (ret == -EPIPE) {
			ret = 0;	/* the host hung up: the cycle is over */
			break;
		}
		if (ret) {
			pc_err("bad message from the host: %s", err);
			link_send(l, pc_msg_error("agent cannot use host message: %s", err));
			break;
		}
		pc_debug("host asks: %s", pc_msg_type_name(m.type));
		ret = serve_msg(o, r, io, l, &m, &kn, have_region);
		pc_msg_clear(&m);
		if (ret)
			break;
	}
	free(kn.k);
	free(kn.slots);
	return ret;
}

/*
 * Reach the host and authenticate, then serve it; start over when the host
 * drops the link before it has spoken, until --connect-timeout-ms. The exit
 * status: 0 served, 1 not.
 */
static int run_sessions(struct opts *o, struct region *r, struct writer_io *io, int have_region,
			const char *region_err, struct pc_auth_key *key, struct link *l)
{
	char err[1024] = "";
	const char *cause = "no_challenge";
	uint64_t deadline;
	int ret, rc = 1, tries = 0;

	/* reach the host and authenticate; start over when the host drops the
	 * link before it has spoken (a full queue, a restart) */
	deadline = pc_now_ms() + o->connect_timeout_ms;
	for (;;) {
		uint64_t now = pc_now_ms();
		uint32_t left = now < deadline ? (uint32_t)(deadline - now) : 0;

		if (o->console) {
			ret = link_open_serial(l, o->console, (uint32_t)o->baud, err, sizeof(err));
			if (ret) {
				setup_said(o, "console", "%s", err);
				return rc;
			}
			/* the agent's own messages belong on the console */
			if (dup2(l->fd, STDERR_FILENO) >= 0)
				g_console_on_stderr = 1;
		} else {
			/* one try first: a refusal is said at once (the console
			 * shows it while the host still waits), then the rest */
			ret = link_connect(l, o->connect, 0, err, sizeof(err));
			if (ret && ret != -EINVAL && left) {
				setup_said(o, "connect", "%s; trying for %u ms more", err, left);
				ret = link_connect(l, o->connect, left, err, sizeof(err));
			}
			if (ret) {
				setup_said(o, "connect", "%s", err);
				return rc;
			}
		}
		tries++;
		ret = link_handshake(l, key, hello_msg(have_region ? r : NULL, r, io, o->board, region_err),
				     left < CHALLENGE_WAIT_MS ? (left ? left : 1) : CHALLENGE_WAIT_MS, err, sizeof(err));
		if (ret == 0) {
			ret = serve(o, r, io, l, have_region);
			if (ret == 0 && !l->confirmed) {
				ret = -EPIPE;
				cause = "key_refused";
				snprintf(err, sizeof(err), "the host at %s closed the link without an authenticated word "
					 "after the proof: it did not accept it (is --key the campaign's key?)", l->peer);
			} else {
				if (ret == 0)
					rc = have_region ? 0 : 1;
				break;
			}
		} else {
			cause = ret == -EPIPE ? "hello_refused" : "no_challenge";
		}
		link_close(l);
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
			return rc;
		}
		if (tries == 1)
			/* said at once, marked: the host may judge the boot before
			 * the agent gives up */
			setup_said(o, cause, "%s; trying again for %" PRIu64 " ms", err, deadline - pc_now_ms());
		else
			pc_info("%s; trying again", err);
		pc_sleep_us(100000);
	}
	return rc;
}

int cmd_run(struct opts *o)
{
	struct region r;
	struct writer_io io = { 0 };
	struct pc_auth_key key;
	struct link l = { .fd = -1 };
	char err[1024] = "";
	char *region_err = NULL;
	const char *keyfile = o->key ? o->key : getenv("PC_KEY_FILE");
	const char *cause;
	int ret, rc, have_region = 0;

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
	rc = run_sessions(o, &r, &io, have_region, region_err, &key, &l);
	explicit_bzero(&key, sizeof(key));
	free(region_err);
	link_close(&l);
	audit_close(&g_audit);
	if (have_region)
		region_close(&r);
	writer_release(&io);	/* after the close: nothing is in flight any more */
	return rc;
}

