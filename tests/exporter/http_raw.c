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
 *   http_raw --trickle N --every SECONDS --hold SECONDS --from FIRST:K ADDR PORT
 *       opens N connections from the K loopback addresses FIRST, FIRST+1, ...
 *       (round robin), each sending one more byte of a request that never
 *       ends every SECONDS (slowloris), and prints after SECONDS
 *       {"open": K, "closed": C, "conns": [{"from": A, "closed_after": S|null}]}:
 *       when the server closed each one, counted from its connect.
 * Only to and from numeric loopback addresses: it refuses anything else. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <fcntl.h>
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

/* A non-blocking connect from the loopback address src (network order). */
static int connect_from(in_addr_t src, const char *addr, const char *port)
{
	struct sockaddr_in from = { .sin_family = AF_INET, .sin_addr.s_addr = src };
	struct sockaddr_in to = { .sin_family = AF_INET };
	int p = atoi(port), fd;

	if (p <= 0 || p > 65535 || inet_pton(AF_INET, addr, &to.sin_addr) != 1 ||
	    (ntohl(to.sin_addr.s_addr) >> 24) != 127 || (ntohl(src) >> 24) != 127)
		return -1;
	to.sin_port = htons((unsigned short)p);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&from, sizeof(from)) ||
	    (connect(fd, (struct sockaddr *)&to, sizeof(to)) && errno != EINPROGRESS)) {
		close(fd);
		return -1;
	}
	return fd;
}

static const char trickle_request[] = "GET /metrics HTTP/1.1\r\nX-Trickle: ";

/* trickle's connections: each one's socket, source, bytes sent, and times. */
struct trickle_conns {
	struct pollfd pfd[STALL_MAX];
	double connected_at[STALL_MAX], closed_after[STALL_MAX];
	size_t sent[STALL_MAX];
	in_addr_t src[STALL_MAX];
	int open_n, closed;
};

/* Opens tc's n connections from the k addresses of from (FIRST:K), round
 * robin: 0, 2 for a bad from, 1 when one cannot connect. */
static int trickle_open(struct trickle_conns *tc, int n, const char *from, const char *addr,
			const char *port)
{
	char first[INET_ADDRSTRLEN], *colon;
	struct in_addr a;
	int k;

	snprintf(first, sizeof(first), "%s", from);
	colon = strchr(first, ':');
	if (!colon)
		return 2;
	*colon = '\0';
	k = atoi(colon + 1);
	if (inet_pton(AF_INET, first, &a) != 1 || k <= 0 || k > 256)
		return 2;
	for (int i = 0; i < n; i++) {
		tc->src[i] = htonl(ntohl(a.s_addr) + (in_addr_t)(i % k));
		tc->pfd[i].fd = connect_from(tc->src[i], addr, port);
		if (tc->pfd[i].fd < 0) {
			fprintf(stderr, "http_raw: cannot connect to %s port %s (loopback only)\n",
				addr, port);
			return 1;
		}
		tc->pfd[i].events = POLLOUT;
		tc->closed_after[i] = -1;
		tc->open_n++;
	}
	return 0;
}

/* One more byte on every connected socket. */
static void trickle_tick(struct trickle_conns *tc, int n)
{
	for (int i = 0; i < n; i++) {
		char c = tc->sent[i] < strlen(trickle_request) ? trickle_request[tc->sent[i]] : 'a';

		if (tc->pfd[i].fd >= 0 && tc->connected_at[i] > 0 &&
		    write(tc->pfd[i].fd, &c, 1) == 1)
			tc->sent[i]++;
	}
}

/* After a poll: a finished connect sends its first byte; a failed connect,
 * the server's EOF or reset closes the connection and notes when. */
static void trickle_events(struct trickle_conns *tc, int n)
{
	for (int i = 0; i < n; i++) {
		char buf[4096];
		int err = 0;
		socklen_t el = sizeof(err);

		if (tc->pfd[i].fd < 0 || !tc->pfd[i].revents)
			continue;
		if (tc->pfd[i].events == POLLOUT) {	/* the connect finished */
			getsockopt(tc->pfd[i].fd, SOL_SOCKET, SO_ERROR, &err, &el);
			tc->connected_at[i] = now_s();
			tc->pfd[i].events = POLLIN;
			if (!err) {
				char c = trickle_request[0];

				if (write(tc->pfd[i].fd, &c, 1) == 1)
					tc->sent[i]++;
				continue;
			}
		} else if (read(tc->pfd[i].fd, buf, sizeof(buf)) > 0) {
			continue;	/* whatever the server says: EOF or reset counts */
		}
		tc->closed_after[i] = now_s() - tc->connected_at[i];
		close(tc->pfd[i].fd);
		tc->pfd[i].fd = -1;
		tc->open_n--;
		tc->closed++;
	}
}

/* Prints the JSON of tc's n connections and closes those still open. */
static void trickle_report(struct trickle_conns *tc, int n)
{
	printf("{\"open\": %d, \"closed\": %d, \"conns\": [", tc->open_n, tc->closed);
	for (int i = 0; i < n; i++) {
		char s[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &tc->src[i], s, sizeof(s));
		if (tc->closed_after[i] < 0)
			printf("%s{\"from\": \"%s\", \"closed_after\": null}", i ? ", " : "", s);
		else
			printf("%s{\"from\": \"%s\", \"closed_after\": %.3f}", i ? ", " : "", s,
			       tc->closed_after[i]);
		if (tc->pfd[i].fd >= 0)
			close(tc->pfd[i].fd);
	}
	printf("]}\n");
}

static int trickle(int n, double every, double hold, const char *from, const char *addr,
		   const char *port)
{
	static struct trickle_conns tc;
	double t0 = now_s(), next_tick;
	int rc = trickle_open(&tc, n, from, addr, port);

	if (rc)
		return rc;
	next_tick = t0;
	while (tc.open_n && now_s() - t0 < hold) {
		double t = now_s();
		int left;

		if (t >= next_tick) {
			trickle_tick(&tc, n);
			next_tick += every;
		}
		left = (int)((next_tick - now_s()) * 1000) + 1;
		if (left > (int)((hold - (now_s() - t0)) * 1000) + 1)
			left = (int)((hold - (now_s() - t0)) * 1000) + 1;
		if (poll(tc.pfd, (nfds_t)n, left < 0 ? 0 : left) <= 0)
			continue;
		trickle_events(&tc, n);
	}
	trickle_report(&tc, n);
	return 0;
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
	if (argc == 11 && !strcmp(argv[1], "--trickle") && !strcmp(argv[3], "--every") &&
	    !strcmp(argv[5], "--hold") && !strcmp(argv[7], "--from")) {
		int n = atoi(argv[2]);
		double every = atof(argv[4]);

		hold = atof(argv[6]);
		if (n <= 0 || n > STALL_MAX || every < 0.1 || hold <= 0 || hold > 120) {
			fprintf(stderr, "http_raw: --trickle 1..%d, --every >= 0.1, "
					"--hold 0..120 seconds\n", STALL_MAX);
			return 2;
		}
		return trickle(n, every, hold, argv[8], argv[9], argv[10]);
	}
	if (argc != 3) {
		fprintf(stderr, "usage: http_raw ADDR PORT < REQUEST\n"
				"       http_raw --stall N --hold SECONDS ADDR PORT\n"
				"       http_raw --trickle N --every SECONDS --hold SECONDS "
				"--from FIRST:K ADDR PORT\n");
		return 2;
	}
	return one_request(argv[1], argv[2]);
}
