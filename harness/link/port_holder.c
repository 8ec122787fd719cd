/*
 * Who holds a TCP port on this host: the process listening on it, found
 * as `ss -ltnp` finds it, from /proc/net/tcp and tcp6 (the socket's inode)
 * and /proc/PID/fd (the process holding that inode). For the error of a
 * listen that failed with "Address already in use": a second campaign
 * on the same port names the first (docs/verdicts.md, the first night).
 *
 * Everything read is bounded: a few listening sockets, PROC_MAX processes,
 * FD_MAX descriptors each, the command line cut to its first bytes with
 * anything unprintable shown as '?'.
 */
#include "harness/link/port_holder.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define INODES_MAX 8
#define PROC_MAX 65536
#define FD_MAX 4096
#define TCP_LISTEN 0x0A

/* the inodes of the sockets listening on PORT in one /proc/net table */
static unsigned listen_inodes(const char *table, uint16_t port, unsigned long *ino, unsigned n, unsigned max)
{
	char line[512];
	FILE *f = fopen(table, "re");

	if (!f)
		return n;
	while (n < max && fgets(line, sizeof(line), f)) {
		char local[64];
		unsigned lport, st;
		unsigned long inode;

		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line, " %*[0-9]: %63s %*s %x %*s %*s %*s %*u %*u %lu", local, &st, &inode) != 3)
			continue;
		const char *colon = strrchr(local, ':');

		if (!colon || sscanf(colon + 1, "%x", &lport) != 1)
			continue;
		if (st == TCP_LISTEN && lport == port && inode)
			ino[n++] = inode;
	}
	fclose(f);
	return n;
}

/* PID's command line, NULs as spaces, cut to LEN - 1 bytes */
static void cmdline(long pid, char *buf, size_t len)
{
	char path[64];
	ssize_t r;
	int fd;

	buf[0] = 0;
	snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	r = read(fd, buf, len - 1);
	close(fd);
	if (r <= 0)
		return;
	while (r > 0 && buf[r - 1] == 0)
		r--;
	buf[r] = 0;
	for (ssize_t i = 0; i < r; i++)
		if (!buf[i])
			buf[i] = ' ';
		else if (!isprint((unsigned char)buf[i]))
			buf[i] = '?';
}

/* 1 when one of PID's descriptors is a socket with one of the inodes */
static int holds(long pid, const unsigned long *ino, unsigned n)
{
	char path[64], link[64];
	struct dirent *e;
	unsigned seen = 0;
	int found = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
	if (!(d = opendir(path)))
		return 0;
	while (!found && seen++ < FD_MAX && (e = readdir(d))) {
		char fdpath[128];
		unsigned long x;
		ssize_t r;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(fdpath, sizeof(fdpath), "%s/%s", path, e->d_name);
		r = readlink(fdpath, link, sizeof(link) - 1);
		if (r <= 0)
			continue;
		link[r] = 0;
		if (sscanf(link, "socket:[%lu]", &x) != 1)
			continue;
		for (unsigned i = 0; i < n; i++)
			found |= x == ino[i];
	}
	closedir(d);
	return found;
}

int pc_port_holder(uint16_t port, char *buf, size_t len)
{
	unsigned long ino[INODES_MAX];
	unsigned n = 0, seen = 0;
	struct dirent *e;
	long self = (long)getpid();
	DIR *d;

	if (!len)
		return -1;
	buf[0] = 0;
	n = listen_inodes("/proc/net/tcp", port, ino, n, INODES_MAX);
	n = listen_inodes("/proc/net/tcp6", port, ino, n, INODES_MAX);
	if (!n || !(d = opendir("/proc")))
		return -1;
	while (seen++ < PROC_MAX && (e = readdir(d))) {
		char cmd[256], *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0 || pid == self || !holds(pid, ino, n))
			continue;
		cmdline(pid, cmd, sizeof(cmd));
		snprintf(buf, len, "pid %ld%s%s", pid, cmd[0] ? ": " : "", cmd);
		closedir(d);
		return strstr(cmd, "powercut") ? 1 : 0;
	}
	closedir(d);
	return -1;
}
