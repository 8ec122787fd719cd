/*
 * listen.c - the TCP listener the boards' agents connect to (listen.h): a
 * port in use is named by its holder (port_holder.c).
 */
#include "harness/link/listen.h"
#include "harness/link/port_holder.h"

#include <errno.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/util.h"

int link_listen(const char *listen_on, int *lfd, char *connect, size_t connlen, char *err, size_t errlen)
{
	char host[128];
	uint16_t port;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char ports[8], hbuf[NI_MAXHOST];
	int fd, one = 1, ret;

	if (pc_parse_hostport(listen_on, host, sizeof(host), &port)) {
		return pc_fail(err, errlen, -EINVAL, "listen address '%s' is not HOST:PORT", listen_on);
	}
	snprintf(ports, sizeof(ports), "%u", port);
	ret = getaddrinfo(host, ports, &hints, &ai);
	if (ret) {
		return pc_fail(err, errlen, -EINVAL, "listen address '%s': %s", listen_on, gai_strerror(ret));
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0) {
		int e = errno, who;
		char holder[320];

		/* a port in use: name its holder, another campaign most often */
		if (e == EADDRINUSE && port && (who = pc_port_holder(port, holder, sizeof(holder))) >= 0)
			snprintf(err, errlen, "cannot listen on %s: %s: %s holds port %u (%s); %s", listen_on,
				 strerror(e), who ? "another powercut" : "another program", port, holder,
				 who ? "one campaign a port: give this one another listen port (and its agents that "
				       "--connect), or stop that one first" :
				       "give another listen port (and the agents' --connect), or stop that program");
		else
			snprintf(err, errlen, "cannot listen on %s: %s", listen_on, strerror(e));
		freeaddrinfo(ai);
		if (fd >= 0)
			close(fd);
		return -e;
	}
	freeaddrinfo(ai);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	getnameinfo((struct sockaddr *)&ss, sl, hbuf, sizeof(hbuf), ports, sizeof(ports), NI_NUMERICHOST | NI_NUMERICSERV);
	if (strchr(hbuf, ':'))
		snprintf(connect, connlen, "[%s]:%s", hbuf, ports);
	else
		snprintf(connect, connlen, "%s:%s", strcmp(hbuf, "0.0.0.0") ? hbuf : "127.0.0.1", ports);
	*lfd = fd;
	return 0;
}
