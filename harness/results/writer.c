/*
 * writer.c - the results writer (results.h): events appended by the
 * caller, syncs and verdicts on a thread of its own, so that a slow results
 * disk never holds up the campaign's poll loop, and the first failure kept.
 *
 * The loop appends each event with one write() (cheap: the page cache) and
 * asks for syncs; each request gets the next number (req). The thread takes
 * every request queued so far as one batch: fdatasync(events.jsonl) when
 * events were written since the last batch, then the verdicts queued, one
 * write() each, then fdatasync(verdicts.jsonl); then it marks the batch's
 * last number done and writes its eventfd, which the loop polls. A verdict
 * is thereby never on disk before the events it was computed from, and a
 * board waits for results_durable() of its last request before its next
 * power-on.
 *
 * A failure (a failed or short write, a failed fdatasync) is kept, named,
 * in r->failed and r->failure, under the writer's mutex, and is sticky: the
 * thread stops working, every later call returns it, nothing is durable
 * any more (see results.h, "fsyncgate").
 */
#include "harness/results/results.h"
#include "harness/results/verdict.h"
#include "harness/results/writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/util.h"

struct results_writer {
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t wake;	/* a request, or stop */
	pthread_cond_t done;	/* a batch done, or a failure */
	char **q;		/* verdict lines queued, each with its newline */
	size_t qn, qcap;
	int want_ev;		/* events written since the last batch took the request */
	int stop;
	uint64_t req, done_seq;
	int efd;		/* eventfd: written after each batch or failure */
};

static int failed_now(const struct results *r)
{
	return __atomic_load_n(&r->failed, __ATOMIC_ACQUIRE);
}

static void writer_signal(struct results_writer *w)
{
	uint64_t one = 1;

	if (write(w->efd, &one, sizeof(one)) < 0)
		return;	/* EAGAIN: the counter is already set */
}

/* The first failure of a results file, kept (see results.h). ret: -errno. */
static int results_fail(struct results *r, const char *file, const char *op, int ret)
{
	struct results_writer *w = r->w;

	if (w)
		pthread_mutex_lock(&w->mu);
	if (!r->failed) {
		snprintf(r->failure, sizeof(r->failure), "%s/%s: %s failed: %s", r->dir, file, op, strerror(-ret));
		__atomic_store_n(&r->failed, ret, __ATOMIC_RELEASE);
	}
	if (w) {
		pthread_cond_broadcast(&w->done);
		pthread_mutex_unlock(&w->mu);
		writer_signal(w);
	}
	return ret;
}

/* One batch, on the thread: 0 or the failure. items are freed. */
static int writer_batch(struct results *r, char **items, size_t n, int want_ev)
{
	int ret = 0;

	if (want_ev && fdatasync(r->ev_fd) < 0)
		ret = results_fail(r, PC_FILE_EVENTS, "fdatasync", -errno);
	for (size_t i = 0; i < n; i++) {
		if (!ret && (ret = pc_write_all(r->v_fd, items[i], strlen(items[i]))) != 0)
			results_fail(r, PC_FILE_VERDICTS, "write", ret);
		free(items[i]);
	}
	free(items);
	if (!ret && n && fdatasync(r->v_fd) < 0)
		ret = results_fail(r, PC_FILE_VERDICTS, "fdatasync", -errno);
	return ret;
}

static void *writer_main(void *arg)
{
	struct results *r = arg;
	struct results_writer *w = r->w;

	for (;;) {
		char **items;
		size_t n;
		int want, ret;
		uint64_t seq;

		pthread_mutex_lock(&w->mu);
		while (!w->qn && !w->want_ev && !w->stop)
			pthread_cond_wait(&w->wake, &w->mu);
		if ((!w->qn && !w->want_ev) || r->failed) {
			pthread_mutex_unlock(&w->mu);
			break;	/* stopped with nothing left, or failed: nothing more */
		}
		items = w->q;
		n = w->qn;
		want = w->want_ev;
		seq = w->req;
		w->q = NULL;
		w->qn = w->qcap = 0;
		w->want_ev = 0;
		pthread_mutex_unlock(&w->mu);
		ret = writer_batch(r, items, n, want);
		pthread_mutex_lock(&w->mu);
		if (!ret)
			w->done_seq = seq;
		pthread_cond_broadcast(&w->done);
		pthread_mutex_unlock(&w->mu);
		writer_signal(w);
		if (ret)
			break;
	}
	return NULL;
}

int results_writer_start(struct results *r, char *err, size_t errlen)
{
	struct results_writer *w = calloc(1, sizeof(*w));
	int ret;

	if (!w)
		return pc_fail(err, errlen, -ENOMEM, "%s: out of memory", r->dir);
	w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (w->efd < 0) {
		ret = -errno;
		free(w);
		return pc_fail(err, errlen, ret, "%s: eventfd: %s", r->dir, strerror(-ret));
	}
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->wake, NULL);
	pthread_cond_init(&w->done, NULL);
	r->w = w;
	ret = -pthread_create(&w->thr, NULL, writer_main, r);
	if (ret) {
		close(w->efd);
		free(w);
		r->w = NULL;
		return pc_fail(err, errlen, ret, "%s: cannot start the results writer: %s", r->dir, strerror(-ret));
	}
	return 0;
}

void results_writer_stop(struct results *r)
{
	struct results_writer *w = r->w;

	if (!w)
		return;
	results_flush(r);
	pthread_mutex_lock(&w->mu);
	w->stop = 1;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thr, NULL);
	for (size_t i = 0; i < w->qn; i++)
		free(w->q[i]);	/* left by a failure: never written */
	free(w->q);
	close(w->efd);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->wake);
	pthread_cond_destroy(&w->done);
	free(w);
	r->w = NULL;
}

static char *line_of(json_object *obj)
{
	const char *s = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t n = strlen(s);
	char *line = malloc(n + 2);

	if (line) {
		memcpy(line, s, n);
		line[n] = '\n';
		line[n + 1] = 0;
	}
	return line;
}

int results_event(struct results *r, json_object *ev)
{
	char *line;
	int ret;

	if (failed_now(r))
		return r->failed;
	line = line_of(ev);
	if (!line)
		return -ENOMEM;
	/* one write() with O_APPEND: a crash leaves a whole line or a torn tail */
	ret = pc_write_all(r->ev_fd, line, strlen(line));
	free(line);
	if (ret)
		return results_fail(r, PC_FILE_EVENTS, "write", ret);
	r->events++;
	r->dirty = 1;
	return 0;
}

/* Queue a request (line: a verdict, or NULL); under no lock. */
static int writer_ask(struct results *r, char *line)
{
	struct results_writer *w = r->w;
	int ret = 0;

	pthread_mutex_lock(&w->mu);
	if (r->failed) {
		ret = r->failed;
	} else if (line && w->qn == w->qcap) {
		size_t cap = w->qcap ? 2 * w->qcap : 16;
		char **q = realloc(w->q, cap * sizeof(*q));

		if (q) {
			w->q = q;
			w->qcap = cap;
		} else {
			ret = -ENOMEM;
		}
	}
	if (!ret) {
		if (line)
			w->q[w->qn++] = line;
		if (r->dirty)
			w->want_ev = 1;
		r->dirty = 0;
		w->req++;
		pthread_cond_signal(&w->wake);
	}
	pthread_mutex_unlock(&w->mu);
	if (ret)
		free(line);
	return ret;
}

int results_sync(struct results *r)
{
	if (failed_now(r))
		return r->failed;
	return r->dirty ? writer_ask(r, NULL) : 0;
}

int results_verdict(struct results *r, json_object *v)
{
	char *line;

	if (failed_now(r))
		return r->failed;
	line = line_of(v);
	return line ? writer_ask(r, line) : -ENOMEM;
}

uint64_t results_requested(const struct results *r)
{
	uint64_t n;

	pthread_mutex_lock(&r->w->mu);
	n = r->w->req;
	pthread_mutex_unlock(&r->w->mu);
	return n;
}

int results_durable(struct results *r, uint64_t seq)
{
	int yes;

	pthread_mutex_lock(&r->w->mu);
	yes = !r->failed && r->w->done_seq >= seq;
	pthread_mutex_unlock(&r->w->mu);
	return yes;
}

int results_fd(const struct results *r)
{
	return r->w ? r->w->efd : -1;
}

int results_poll(struct results *r)
{
	uint64_t n;

	if (r->w && read(r->w->efd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		return -errno;
	return failed_now(r);
}

int results_flush(struct results *r)
{
	struct results_writer *w = r->w;
	int ret = results_sync(r);

	if (ret || !w)
		return ret;
	pthread_mutex_lock(&w->mu);
	while (!r->failed && w->done_seq < w->req)
		pthread_cond_wait(&w->done, &w->mu);
	ret = r->failed;
	pthread_mutex_unlock(&w->mu);
	return ret;
}
