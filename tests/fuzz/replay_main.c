/*
 * replay_main.c - run fuzz inputs through a target once each, without libFuzzer.
 *
 *   replay-<target> PATH...
 *
 * Each PATH is a file, or a folder whose regular files are run in name order
 * (dot files skipped). A crash or a broken invariant ends it with the
 * sanitizer's or the target's report, followed by the name of the input;
 * otherwise it prints how many inputs ran and exits 0. It is what `make
 * fuzz-replay` (and so `make check`) runs over tests/fuzz/corpus/ and
 * tests/fuzz/regress/, built with gcc or clang and ASan/UBSan, so CI needs
 * no libFuzzer runtime.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/fuzz/fuzz.h"

/* Corpus files are KBs; a file this large is a mistake, not an input. */
#define MAX_FILE (16u << 20)

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static const char *prog = "replay";
static const char *current;	/* the input being run */

/* The sanitizers' hook, when they are linked in: called before they exit. */
void __sanitizer_set_death_callback(void (*cb)(void)) __attribute__((weak));

static void say_input(void)
{
	const char *pfx = "replay: the input was ";

	if (!current)
		return;
	/* async-signal-safe: this runs from a signal handler too */
	if (write(2, pfx, strlen(pfx)) < 0 || write(2, current, strlen(current)) < 0 || write(2, "\n", 1) < 0)
		return;
}

/* FUZZ_CHECK aborts: name the input, then die of the same signal. */
static void on_abort(int sig)
{
	say_input();
	signal(sig, SIG_DFL);
	raise(sig);
}

static int run_file(const char *path, unsigned *count)
{
	struct stat st;
	uint8_t *buf;
	size_t len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) != 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > MAX_FILE) {
		fprintf(stderr, "%s: %s: not a regular file of at most %u bytes\n", prog, path, MAX_FILE);
		close(fd);
		return -1;
	}
	/* libFuzzer hands over a buffer of exactly the input's size: so do we, so
	 * that ASan sees a read one byte past the end */
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return -1;
	}
	while (len < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + len, (size_t)st.st_size - len);
		if (n <= 0) {
			fprintf(stderr, "%s: %s: short read\n", prog, path);
			free(buf);
			close(fd);
			return -1;
		}
		len += (size_t)n;
	}
	close(fd);
	current = path;
	LLVMFuzzerTestOneInput(buf, len);
	current = NULL;
	free(buf);
	(*count)++;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, unsigned *count)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int ret = 0;

	if (!d) {
		fprintf(stderr, "%s: %s: %s\n", prog, dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(*names));
			if (!nn) {
				ret = -1;
				break;
			}
			names = nn;
		}
		if (!(names[n] = strdup(e->d_name))) {
			ret = -1;
			break;
		}
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (!ret && run_file(path, count))
			ret = -1;
		free(names[i]);
	}
	free(names);
	return ret;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	int ret = 0;

	if (argc > 0) {
		const char *s = strrchr(argv[0], '/');
		prog = s ? s + 1 : argv[0];
	}
	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", prog);
		return 2;
	}
	/* (not SIGSEGV: that is ASan's to catch and report) */
	signal(SIGABRT, on_abort);
	if (__sanitizer_set_death_callback)
		__sanitizer_set_death_callback(say_input);
	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc && !ret; i++) {
		struct stat st;

		if (stat(argv[i], &st) != 0) {
			fprintf(stderr, "%s: %s: %s\n", prog, argv[i], strerror(errno));
			ret = -1;
		} else if (S_ISDIR(st.st_mode)) {
			ret = run_dir(argv[i], &count);
		} else {
			ret = run_file(argv[i], &count);
		}
	}
	if (ret)
		return 1;
	printf("%s: %u inputs, no crash, no broken invariant\n", prog, count);
	return 0;
}
