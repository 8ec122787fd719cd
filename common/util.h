/*
 * util.h - small helpers shared by host and agent: logging, clocks, I/O.
 */
#ifndef PC_UTIL_H
#define PC_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PC_VERSION "0.1.0"

#define PC_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

enum pc_log_level { PC_LOG_ERR, PC_LOG_WARN, PC_LOG_INFO, PC_LOG_DEBUG };

/* Messages go to stderr as "prog: message". The level threshold starts at INFO. */
void pc_log_init(const char *prog, enum pc_log_level level);
void pc_log(enum pc_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define pc_err(...)   pc_log(PC_LOG_ERR, __VA_ARGS__)
#define pc_warn(...)  pc_log(PC_LOG_WARN, __VA_ARGS__)
#define pc_info(...)  pc_log(PC_LOG_INFO, __VA_ARGS__)
#define pc_debug(...) pc_log(PC_LOG_DEBUG, __VA_ARGS__)

/* Monotonic milliseconds and microseconds; wall-clock seconds with fraction. */
uint64_t pc_now_ms(void);
uint64_t pc_now_us(void);
double pc_wall_time(void);
void pc_sleep_us(uint64_t us);

/* write()/pwrite() until done or error; 0 or -errno. On a non-blocking
 * descriptor write() may stop at -EAGAIN with part of buf written: a link
 * that may be slow queues what it cannot take (harness/link/outq.c). */
int pc_write_all(int fd, const void *buf, size_t len);
int pc_pwrite_all(int fd, const void *buf, size_t len, off_t off);
/* The same through pwritev2 with RWF_* flags (RWF_DSYNC: a FUA write). */
int pc_pwritev2_all(int fd, const void *buf, size_t len, off_t off, int flags);
int pc_pread_all(int fd, void *buf, size_t len, off_t off);

/* Parse an unsigned decimal (or 0x hex) with optional K/M/G (binary) suffix
 * when suffixes is set; 0 or -EINVAL. */
int pc_parse_u64(const char *s, int suffixes, uint64_t *out);

/* Parse "host:port"; host may be empty (meaning 127.0.0.1). 0 or -EINVAL. */
int pc_parse_hostport(const char *s, char *host, size_t hostlen, uint16_t *port);

/* snprintf into a fixed buffer, always terminated; returns buf. */
char *pc_strlcpy(char *dst, const char *src, size_t n);

/* Read a small text file (sysfs) into buf, trailing newline stripped. 0 or -errno. */
int pc_read_text(const char *path, char *buf, size_t len);

/* The message fmt into err (errlen bytes), and rc returned: an error said
 * and passed up in one statement (return pc_fail(err, errlen, -EIO, ...)). */
int pc_fail(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* pc_fail with a va_list, for a filler of its own (relay_errf): the one
 * place an error buffer is filled. */
int pc_vfail(char *err, size_t errlen, int rc, const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));

/* mkdir -p; 0 or -errno. */
int pc_mkdir_p(const char *path, mode_t mode);

/*
 * A file replaced whole: written under PATH.tmp, then renamed over PATH, so
 * a reader (or a run after a kill) sees the old file or the new one, never a
 * part. pc_tmp_open opens the temporary (its name into tmp; O_NOFOLLOW) and
 * returns its fd or -errno. pc_tmp_commit takes ret, the writing's result:
 * when it is 0 the file is (with PC_FILE_SYNC) fsync'd, closed, renamed over
 * path, and (with PC_FILE_SYNC) its folder fsync'd; otherwise, or when a step
 * fails, the temporary is closed and removed. 0 or -errno. pc_write_file
 * does both around buf[0..len).
 */
#define PC_FILE_SYNC 1
int pc_tmp_open(const char *path, char *tmp, size_t tmplen);
int pc_tmp_commit(int fd, const char *tmp, const char *path, int ret, int flags);
int pc_write_file(const char *path, const void *buf, size_t len, int flags);

/* fsync of the folder that holds path. 0 or -errno. */
int pc_fsync_dir_of(const char *path);

/* A folder of files removed: its entries (files only: unlinkat), then itself. */
void pc_remove_flat_dir(const char *dir);

#endif
