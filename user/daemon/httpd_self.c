// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* httpd_self_check: a server asks itself one request over a socketpair
 * handed to its own threads, so that the watchdog's WATCHDOG=1 says the
 * server answers, not just that its process runs. */
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "core.h"
#include "httpd.h"

#define STATUS_LINE_MIN	12	/* "HTTP/1.1 200" */

int httpd_self_check(struct httpd *h, const char *path, unsigned int timeout_ms)
{
	/* A peer on no address: httpd_peer() gives all zero, as on a Unix socket. */
	static const struct sockaddr_un self = { .sun_family = AF_UNIX };
	__u64 end = mono_now_ns() + (__u64)timeout_ms * 1000000ULL;
	char req[256], got[STATUS_LINE_MIN];
	size_t have = 0;
	ssize_t n;
	int sv[2], len;

	len = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: localhost\r\n"
		       "Connection: close\r\n\r\n", path);
	if (!h->d || len < 0 || (size_t)len >= sizeof(req) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	/* Closes sv[0] whatever it answers; the server's thread serves it. */
	if (MHD_add_connection(h->d, sv[0], (const struct sockaddr *)&self, sizeof(self)) !=
	    MHD_YES) {
		close(sv[1]);
		return -1;
	}
	if (send(sv[1], req, (size_t)len, MSG_NOSIGNAL) != len) {
		close(sv[1]);
		return -1;
	}
	while (have < sizeof(got)) {
		struct pollfd p = { .fd = sv[1], .events = POLLIN };
		__u64 now = mono_now_ns();

		if (now >= end || poll(&p, 1, (int)((end - now) / 1000000ULL) + 1) <= 0)
			break;
		n = recv(sv[1], got + have, sizeof(got) - have, 0);
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	close(sv[1]);
	return have == sizeof(got) && !memcmp(got, "HTTP/1.", 7) ? 0 : -1;
}
