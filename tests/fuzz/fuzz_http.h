/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The HTTP servers' fuzz targets (fuzz_exporter, fuzz_check): one client's
 * raw bytes to a libmicrohttpd daemon run in this thread, over a socketpair
 * handed to it with MHD_add_connection, and everything it answers back. */
#ifndef SLUICE_FUZZ_HTTP_H
#define SLUICE_FUZZ_HTTP_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <microhttpd.h>
#include "fuzz.h"

#define FUZZ_RESPONSE_MAX	(256 * 1024)
#define FUZZ_CLOSE_DEADLINE_NS	(2ULL * SLUICE_NS_PER_SEC)

/* Sends data to d as one client from peer, shuts the sending side, and
 * reads everything the server answers into resp (FUZZ_RESPONSE_MAX + 1
 * bytes, NUL-terminated) until it closes. The answer's length. */
static inline size_t fuzz_http_exchange(struct MHD_Daemon *d, const struct sockaddr *peer,
					socklen_t peer_len, const uint8_t *data, size_t size,
					char *resp)
{
	__u64 deadline = mono_now_ns() + FUZZ_CLOSE_DEADLINE_NS;
	size_t sent = 0, got = 0;
	unsigned int idle = 0;
	bool eof = false;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		abort();
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	FUZZ_CHECK(MHD_add_connection(d, sv[0], peer, peer_len) == MHD_YES,
		   "MHD_add_connection failed");
	if (!size)
		shutdown(sv[1], SHUT_WR);
	while (!eof) {
		ssize_t n;

		if (sent < size) {
			n = send(sv[1], data + sent, size - sent, MSG_NOSIGNAL);
			if (n > 0)
				sent += (size_t)n;
			else if (n < 0 && errno != EAGAIN)
				sent = size;	/* the server closed already */
			if (sent == size)
				shutdown(sv[1], SHUT_WR);
		}
		MHD_run(d);
		n = read(sv[1], resp + got, FUZZ_RESPONSE_MAX - got);
		if (n > 0) {
			idle = 0;
			got += (size_t)n;
			FUZZ_CHECK(got < FUZZ_RESPONSE_MAX, "more than %d bytes of answer",
				   FUZZ_RESPONSE_MAX);
		} else if (n == 0 || errno != EAGAIN) {
			eof = true;	/* closed (ECONNRESET counts) */
		} else {
			FUZZ_CHECK(mono_now_ns() < deadline, "the connection is still open %llu s "
				   "after the client shut its side",
				   FUZZ_CLOSE_DEADLINE_NS / SLUICE_NS_PER_SEC);
			/* libmicrohttpd may need a few rounds; then wait a little */
			if (++idle > 16)
				poll(&(struct pollfd){ .fd = sv[1], .events = POLLIN }, 1, 1);
		}
	}
	close(sv[1]);
	/* The server's side is gone too (its CLOSED notice ran). */
	MHD_run(d);
	resp[got] = '\0';
	return got;
}

#endif /* SLUICE_FUZZ_HTTP_H */
