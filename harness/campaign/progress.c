/*
 * progress.c - the progress of `powercut run` on stderr (progress.h).
 */
#include "harness/campaign/progress.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "common/util.h"
#include "harness/results/limits.h"

/* ---- the boards' lines ---- */

static int tty = -1;		/* stderr is a terminal we may draw on; -1: not asked yet */

static int is_tty(void)
{
	if (tty < 0) {
		const char *term = getenv("TERM");

		tty = isatty(STDERR_FILENO) && term && *term && strcmp(term, "dumb") != 0;
	}
	return tty;
}

unsigned progress_interval_ms(void)
{
	return is_tty() ? PROGRESS_TTY_MS : PROGRESS_PLAIN_MS;
}

void progress_hmm(double seconds, char *buf, size_t len)
{
	uint64_t m;

	if (!(seconds >= 0)) {
		snprintf(buf, len, "-");
		return;
	}
	if (seconds > PROGRESS_ETA_MAX)
		seconds = PROGRESS_ETA_MAX;
	m = (uint64_t)((seconds + 59.999) / 60.0);
	snprintf(buf, len, "%" PRIu64 ":%02u", m / 60, (unsigned)(m % 60));
}

size_t progress_board_line(const struct progress_board *b, int namew, char *buf, size_t len)
{
	char eta[32];
	int n;

	if (b->given_up)
		snprintf(eta, sizeof(eta), "given up");
	else if (b->done >= b->cycles)
		snprintf(eta, sizeof(eta), "done");
	else {
		memcpy(eta, "ETA ", 4);
		progress_hmm(b->eta_s, eta + 4, sizeof(eta) - 4);
	}
	n = snprintf(buf, len, "%-*s %u/%u PASS %u FAIL %u", namew, b->name, b->done, b->cycles, b->pass, b->fail);
	if (n >= 0 && (size_t)n < len && b->boot)
		n += snprintf(buf + n, len - (size_t)n, " BOOT_FAIL %u", b->boot);
	if (n >= 0 && (size_t)n < len && b->infra)
		n += snprintf(buf + n, len - (size_t)n, " INFRA_ERROR %u", b->infra);
	if (n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " %s", eta);
	if (n < 0)
		return 0;
	return (size_t)n < len ? (size_t)n : len - 1;
}

/* Output built in one buffer, written with one write(). */
struct out {
	char *p;
	size_t n, cap;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->n + n + 1 > o->cap) {
		size_t cap = (o->n + n + 1) * 2;
		char *p = realloc(o->p, cap);

		if (!p)
			return;
		o->p = p;
		o->cap = cap;
	}
	memcpy(o->p + o->n, s, n);
	o->n += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void flush_out(struct out *o)
{
	size_t off = 0;

	while (off < o->n) {
		ssize_t w = write(STDERR_FILENO, o->p + off, o->n - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(o->p);
}

static void terminal_size(unsigned *rows, unsigned *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

void progress_show(const struct progress_board *b, unsigned nb, double elapsed_s, int final)
{
	struct out o = { 0 };
	unsigned rows, cols, s = elapsed_s > 0 ? (unsigned)elapsed_s : 0;
	char line[512], head[32];
	int w = 0;

	if (!is_tty()) {
		snprintf(head, sizeof(head), "[%6.1fs]", elapsed_s);
		puts_(&o, head);
		for (unsigned i = 0; i < nb; i++) {
			puts_(&o, i ? " | " : " ");
			put(&o, line, progress_board_line(&b[i], 0, line, sizeof(line)));
		}
		puts_(&o, "\n");
		flush_out(&o);
		return;
	}
	terminal_size(&rows, &cols);
	for (unsigned i = 0; i < nb; i++)
		w = (int)strlen(b[i].name) > w ? (int)strlen(b[i].name) : w;
	if (cols > sizeof(line))
		cols = sizeof(line);
	/* the first line, where the cursor waits: at most 10 columns, so that
	 * any "powercut: " message written over it covers it */
	if (s < 100 * 3600)
		snprintf(head, sizeof(head), "[%u:%02u:%02u]", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(head, sizeof(head), "[%uh]", s / 3600 < 99999 ? s / 3600 : 99999);
	puts_(&o, "\r");
	puts_(&o, head);
	puts_(&o, "\033[K\n");
	for (unsigned i = 0; i < nb; i++) {
		size_t n;

		if (i + 3 >= rows && i + 1 < nb) {
			/* more boards than the terminal has lines: the rest in one */
			unsigned pass = 0, fail = 0;
			for (unsigned j = i; j < nb; j++) {
				pass += b[j].pass;
				fail += b[j].fail;
			}
			n = (size_t)snprintf(line, sizeof(line), "  (%u more boards: PASS %u FAIL %u)", nb - i, pass, fail);
			put(&o, line, n < cols ? n : cols - 1);
			puts_(&o, "\033[K\n");
			nb = i + 1;
			break;
		}
		line[0] = line[1] = ' ';
		n = 2 + progress_board_line(&b[i], w, line + 2, sizeof(line) - 2);
		put(&o, line, n < cols ? n : cols - 1);	/* never wrapped: the count of lines holds */
		puts_(&o, "\033[K\n");
	}
	if (!final) {
		/* back to the first line */
		snprintf(line, sizeof(line), "\033[%uA", nb + 1);
		puts_(&o, line);
	}
	flush_out(&o);
}

/* ---- FAIL verdicts ---- */

struct fails {
	char board[64];
	unsigned more;			/* FAIL cycles not printed yet */
	uint64_t since, last;		/* the first and the last of them */
	char last_what[256];
	uint64_t printed;		/* when the board's FAIL was last printed (ms) */
};

static struct fails fails[CFG_MAX_BOARDS];
static unsigned nfails;

void progress_fail(const char *board, uint64_t cycle, const char *what)
{
	struct fails *f = NULL;

	for (unsigned i = 0; i < nfails && !f; i++)
		if (!strcmp(fails[i].board, board))
			f = &fails[i];
	if (!f && nfails < PC_ARRAY_SIZE(fails) && strlen(board) < sizeof(fails[0].board)) {
		f = &fails[nfails++];
		pc_strlcpy(f->board, board, sizeof(f->board));
		pc_info("%s cycle %" PRIu64 ": FAIL%s", board, cycle, what);
		f->printed = pc_now_ms();
		return;
	}
	if (!f) {
		pc_info("%s cycle %" PRIu64 ": FAIL%s", board, cycle, what);
		return;
	}
	if (!f->more++)
		f->since = cycle;
	f->last = cycle;
	pc_strlcpy(f->last_what, what, sizeof(f->last_what));
	progress_fail_flush(0);
}

void progress_fail_flush(int final)
{
	uint64_t now = pc_now_ms();

	for (unsigned i = 0; i < nfails; i++) {
		struct fails *f = &fails[i];

		if (!f->more || (!final && now - f->printed < PROGRESS_FAIL_EVERY_MS))
			continue;
		if (f->more == 1)
			pc_info("%s cycle %" PRIu64 ": FAIL%s", f->board, f->last, f->last_what);
		else
			pc_info("board %s: %u more FAIL cycles since cycle %" PRIu64 " (last: cycle %" PRIu64 "%s)",
				f->board, f->more, f->since, f->last, f->last_what);
		f->more = 0;
		f->printed = now;
	}
}
