/*
 * results.c - append-only result files.
 */
#include "results.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/util.h"

/* Cut a file back to its last newline; returns bytes removed or -errno. */
static long trim_torn(int fd)
{
	struct stat st;
	char buf[4096];
	off_t end, pos;

	if (fstat(fd, &st) < 0)
		return -errno;
	end = st.st_size;
	pos = end;
	while (pos > 0) {
		size_t n = pos > (off_t)sizeof(buf) ? sizeof(buf) : (size_t)pos;
		if (pc_pread_all(fd, buf, n, pos - (off_t)n))
			return -EIO;
		for (size_t i = n; i-- > 0;) {
			if (buf[i] == '\n') {
				off_t keep = pos - (off_t)n + (off_t)i + 1;
				if (keep == end)
					return 0;
				if (ftruncate(fd, keep) < 0 || fsync(fd) < 0)
					return -errno;
				return (long)(end - keep);
			}
		}
		pos -= (off_t)n;
	}
	if (end && (ftruncate(fd, 0) < 0 || fsync(fd) < 0))
		return -errno;
	return (long)end;
}

static int open_append(struct results *r, const char *name, int *fdp, char *note, size_t notelen,
		       char *err, size_t errlen)
{
	char path[PATH_MAX + 32];
	long cut;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", r->dir, name);
	fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -errno;
	}
	cut = trim_torn(fd);
	if (cut < 0) {
		snprintf(err, errlen, "%s: cannot repair: %s", path, strerror((int)-cut));
		close(fd);
		return (int)cut;
	}
	if (cut > 0 && note) {
		size_t l = strlen(note);
		snprintf(note + l, notelen - l, "%s: removed a torn last line of %ld bytes (the harness "
			 "was killed while writing it); ", path, cut);
	}
	*fdp = fd;
	return 0;
}

int results_open(struct results *r, const char *dir, char *note, size_t notelen, char *err, size_t errlen)
{
	char path[PATH_MAX + 32];
	int ret;

	memset(r, 0, sizeof(*r));
	r->ev_fd = r->v_fd = -1;
	if (note && notelen)
		note[0] = 0;
	pc_strlcpy(r->dir, dir, sizeof(r->dir));
	ret = pc_mkdir_p(dir, 0755);
	if (ret) {
		snprintf(err, errlen, "%s: cannot create: %s", dir, strerror(-ret));
		return ret;
	}
	snprintf(path, sizeof(path), "%s/console", dir);
	pc_mkdir_p(path, 0755);
	ret = open_append(r, "events.jsonl", &r->ev_fd, note, notelen, err, errlen);
	if (!ret)
		ret = open_append(r, "verdicts.jsonl", &r->v_fd, note, notelen, err, errlen);
	if (ret)
		results_close(r);
	return ret;
}

void results_close(struct results *r)
{
	if (r->ev_fd >= 0) {
		results_sync(r);
		close(r->ev_fd);
	}
	if (r->v_fd >= 0)
		close(r->v_fd);
	r->ev_fd = r->v_fd = -1;
}

static int append_line(int fd, json_object *obj)
{
	const char *s = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	size_t n = strlen(s);
	char *line = malloc(n + 1);
	int ret;

	if (!line)
		return -ENOMEM;
	memcpy(line, s, n);
	line[n] = '\n';
	/* one write() with O_APPEND: a crash leaves a whole line or a torn tail */
	ret = pc_write_all(fd, line, n + 1);
	free(line);
	return ret;
}

int results_event(struct results *r, json_object *ev)
{
	int ret = append_line(r->ev_fd, ev);

	if (!ret) {
		r->events++;
		r->dirty = 1;
	}
	return ret;
}

int results_sync(struct results *r)
{
	if (!r->dirty)
		return 0;
	if (fdatasync(r->ev_fd) < 0)
		return -errno;
	r->dirty = 0;
	return 0;
}

int results_verdict(struct results *r, json_object *v)
{
	int ret = results_sync(r);

	if (!ret)
		ret = append_line(r->v_fd, v);
	if (!ret && fdatasync(r->v_fd) < 0)
		ret = -errno;
	return ret;
}

int results_each_line(const char *path, results_line_fn fn, void *arg, int *torn, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned lineno = 0;
	int ret = 0;

	if (torn)
		*torn = 0;
	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -errno;
	}
	while ((n = getline(&line, &cap, f)) > 0) {
		json_tokener *tok;
		json_object *obj;

		lineno++;
		if (line[n - 1] != '\n') {
			if (torn)
				*torn = 1;
			break;
		}
		line[--n] = 0;
		if (n == 0)
			continue;
		tok = json_tokener_new();
		obj = json_tokener_parse_ex(tok, line, (int)n);
		if (!obj || json_tokener_get_parse_end(tok) != (size_t)n || !json_object_is_type(obj, json_type_object)) {
			snprintf(err, errlen, "%s:%u: not a JSON object", path, lineno);
			json_object_put(obj);
			json_tokener_free(tok);
			ret = -EINVAL;
			break;
		}
		json_tokener_free(tok);
		ret = fn(obj, lineno, arg);
		json_object_put(obj);
		if (ret) {
			if (!err[0])
				snprintf(err, errlen, "%s:%u: rejected", path, lineno);
			break;
		}
	}
	free(line);
	fclose(f);
	return ret;
}

int results_write_json(const char *dir, const char *name, json_object *obj, char *err, size_t errlen)
{
	char tmp[PATH_MAX + 64], path[PATH_MAX + 64];
	const char *s = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
	int fd, ret;

	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		return -errno;
	}
	ret = pc_write_all(fd, s, strlen(s));
	if (!ret)
		ret = pc_write_all(fd, "\n", 1);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	close(fd);
	if (!ret && rename(tmp, path) < 0)
		ret = -errno;
	if (!ret) {
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
	if (ret)
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	return ret;
}
