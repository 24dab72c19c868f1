// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* http_raw: bytes curl will not send, for the exporter tests.
 *
 *   http_raw ADDR PORT < REQUEST
 *       sends REQUEST as one write, then prints the status line of the
 *       answer, "closed" if the server closed without one, or "timeout".
 *   http_raw --stall N --hold SECONDS ADDR PORT
 *       opens N connections, sends each half a request and never the rest,
 *       and prints {"open": K, "closed": C, "max_closed_after": S} after
 *       SECONDS: how many the server closed, and when the last one went.
 * Only to numeric loopback addresses: it refuses anything else. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define REQ_MAX		65536
#define REPLY_TIMEOUT_MS 3000
#define STALL_MAX	512

static const char half_request[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Ag";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_to(const char *addr, const char *port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int p = atoi(port), fd;

	if (p <= 0 || p > 65535)
		return -1;
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		if ((ntohl(s4->sin_addr.s_addr) >> 24) != 127)
			return -1;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((unsigned short)p);
		len = sizeof(*s4);
	} else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1) {
		if (!IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
			return -1;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((unsigned short)p);
		len = sizeof(*s6);
	} else {
		return -1;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int one_request(const char *addr, const char *port)
{
	static char req[REQ_MAX], reply[4096];
	size_t len = fread(req, 1, sizeof(req), stdin), got = 0;
	struct pollfd pfd;
	char *eol;
	int fd = connect_to(addr, port);

	if (fd < 0) {
		fprintf(stderr, "http_raw: cannot connect to %s port %s (loopback only)\n", addr, port);
		return 1;
	}
	if (write(fd, req, len) != (ssize_t)len) {
		perror("http_raw: write");
		return 1;
	}
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (got < sizeof(reply) - 1) {
		ssize_t n;

		if (poll(&pfd, 1, REPLY_TIMEOUT_MS) <= 0) {
			if (!got) {
				puts("timeout");
				close(fd);
				return 0;
			}
			break;
		}
		n = read(fd, reply + got, sizeof(reply) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		reply[got] = '\0';
		if (strstr(reply, "\r\n"))
			break;
	}
	close(fd);
	if (!got) {
		puts("closed");
		return 0;
	}
	reply[got] = '\0';
	eol = strstr(reply, "\r\n");
	if (eol)
		*eol = '\0';
	puts(reply);
	return 0;
}

static int stall(int n, double hold, const char *addr, const char *port)
{
	static struct pollfd pfd[STALL_MAX];
	static double closed_at[STALL_MAX];
	double t0 = now_s(), last = 0;
	int open_n = n, closed = 0;

	for (int i = 0; i < n; i++) {
		pfd[i].fd = connect_to(addr, port);
		pfd[i].events = POLLIN;
		if (pfd[i].fd < 0) {
			fprintf(stderr, "http_raw: cannot connect to %s port %s\n", addr, port);
			return 1;
		}
		if (write(pfd[i].fd, half_request, strlen(half_request)) < 0) {
			perror("http_raw: write");
			return 1;
		}
	}
	while (open_n && now_s() - t0 < hold) {
		int left = (int)((hold - (now_s() - t0)) * 1000) + 1;

		if (poll(pfd, (nfds_t)n, left) <= 0)
			continue;
		for (int i = 0; i < n; i++) {
			char buf[4096];

			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			/* Whatever the server says, EOF or reset is what counts. */
			if (read(pfd[i].fd, buf, sizeof(buf)) > 0)
				continue;
			closed_at[i] = now_s() - t0;
			if (closed_at[i] > last)
				last = closed_at[i];
			close(pfd[i].fd);
			pfd[i].fd = -1;
			open_n--;
			closed++;
		}
	}
	for (int i = 0; i < n; i++)
		if (pfd[i].fd >= 0)
			close(pfd[i].fd);
	printf("{\"open\": %d, \"closed\": %d, \"max_closed_after\": %.3f}\n", open_n, closed, last);
	return 0;
}

int main(int argc, char **argv)
{
	int nstall = 0;
	double hold = 0;

	if (argc == 7 && !strcmp(argv[1], "--stall") && !strcmp(argv[3], "--hold")) {
		nstall = atoi(argv[2]);
		hold = atof(argv[4]);
		if (nstall <= 0 || nstall > STALL_MAX || hold <= 0 || hold > 120) {
			fprintf(stderr, "http_raw: --stall 1..%d, --hold 0..120 seconds\n", STALL_MAX);
			return 2;
		}
		return stall(nstall, hold, argv[5], argv[6]);
	}
	if (argc != 3) {
		fprintf(stderr, "usage: http_raw ADDR PORT < REQUEST\n"
				"       http_raw --stall N --hold SECONDS ADDR PORT\n");
		return 2;
	}
	return one_request(argv[1], argv[2]);
}
