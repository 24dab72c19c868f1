// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* e2e/vlan_stack's, e2e/v6_frag_proto's and e2e/frag's helper: UDP datagrams
 * written on a veth through an AF_PACKET socket, either behind a stack of
 * VLAN priority tags (VLAN ID 0) or as IPv6 fragments whose later fragments
 * may name another protocol; large datagrams from a plain UDP socket, for
 * the kernel to fragment; and a UDP receiver that counts whole datagrams per port
 * for a bounded time. Addresses only from 198.18.0.0/15 and 2001:2::/48; at
 * most 100 datagrams a run. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "craft.h"

#define MAX_COUNT	100
#define MAX_PORTS	8
#define MAX_SECONDS	60
#define MAX_TAGS	CRAFT_TAGS_MAX
#define MAX_DGRAM	9000	/* UDP payload bytes */
#define MIN_FRAG	96	/* IPv6 bytes of one fragment */
#define MAX_FRAG	CRAFT_L3_MAX

static void usage(FILE *to)
{
	fprintf(to,
		"usage: udp_send recv SECONDS PORT...\n"
		"       udp_send vlan IFACE DST_MAC TAGS SRC DST DPORT COUNT\n"
		"       udp_send frag IFACE DST_MAC SRC DST DPORT COUNT SIZE FRAG LATER_NH\n"
		"       udp_send sock DST DPORT COUNT SIZE SECONDS\n"
		"recv: count the UDP datagrams to each PORT (IPv4 and IPv6) for SECONDS\n"
		"(1-%d); prints 'listening', then 'PORT DATAGRAMS BYTES' per port.\n"
		"vlan: COUNT (1-%d) 16-byte UDP datagrams from SRC to DST:DPORT behind TAGS\n"
		"(0-%d) 802.1Q tags of VLAN ID 0.\n"
		"frag: COUNT IPv6 UDP datagrams of SIZE (8-%d) payload bytes, each sent as\n"
		"fragments of FRAG (%d-%d) IPv6 bytes; the later fragments' header says\n"
		"next header LATER_NH (0-255; 17 is honest). Prints 'sent N SECONDS'.\n"
		"sock: COUNT datagrams of SIZE payload bytes from a UDP socket to DST:DPORT,\n"
		"evenly over SECONDS (1-%d): the kernel fragments them past the MTU.\n"
		"Prints 'sent N SECONDS'.\n"
		"Addresses must lie in 198.18.0.0/15 or 2001:2::/48.\n",
		MAX_SECONDS, MAX_COUNT, MAX_TAGS, MAX_DGRAM, MIN_FRAG, MAX_FRAG, MAX_SECONDS);
}

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, "udp_send: %s: '%s'\n", what, arg);
	return 2;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- recv ---- */

static int do_recv(int argc, char **argv)
{
	struct pollfd pfd[MAX_PORTS];
	long secs, port[MAX_PORTS], got[MAX_PORTS] = { 0 }, bytes[MAX_PORTS] = { 0 };
	int n = 0, zero = 0, size = 4 << 20;
	static char buf[65536];
	double end;

	if (argc < 2 || argc - 1 > MAX_PORTS)
		return usage(stderr), 2;
	secs = number(argv[0], 1, MAX_SECONDS);
	if (secs < 0)
		return bad("bad SECONDS", argv[0]);
	for (int i = 1; i < argc; i++, n++) {
		struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = in6addr_any };
		int fd;

		port[n] = number(argv[i], 1, 65535);
		if (port[n] < 0)
			return bad("bad PORT", argv[i]);
		a.sin6_port = htons((uint16_t)port[n]);
		fd = socket(AF_INET6, SOCK_DGRAM, 0);
		/* room for every datagram a run may send before one is read */
		if (fd < 0 || setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) ||
		    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) ||
		    bind(fd, (struct sockaddr *)&a, sizeof(a))) {
			perror("udp_send: recv socket");
			return 1;
		}
		pfd[n].fd = fd;
		pfd[n].events = POLLIN;
	}
	printf("listening\n");
	fflush(stdout);
	end = now_s() + (double)secs;
	for (double left; (left = end - now_s()) > 0;) {
		if (poll(pfd, (nfds_t)n, (int)(left * 1000) + 1) < 0 && errno != EINTR) {
			perror("udp_send: poll");
			return 1;
		}
		for (int i = 0; i < n; i++) {
			ssize_t r;

			if (!(pfd[i].revents & POLLIN))
				continue;
			r = recv(pfd[i].fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (r >= 0) {
				got[i]++;
				bytes[i] += r;
			}
		}
	}
	for (int i = 0; i < n; i++) {
		printf("%ld %ld %ld\n", port[i], got[i], bytes[i]);
		close(pfd[i].fd);
	}
	return 0;
}

/* ---- sending ---- */

/* A UDP datagram (header and len - 8 payload bytes) at u, its checksum
 * over the pseudo-header of src and dst (alen bytes each). */
static void udp_dgram(uint8_t *u, size_t len, const void *src, const void *dst, size_t alen,
		      uint16_t sport, uint16_t dport, unsigned int seq)
{
	uint8_t pseudo[32] = { 0 };
	uint32_t sum;
	uint16_t c;

	u[0] = sport >> 8, u[1] = sport & 0xff;
	u[2] = dport >> 8, u[3] = dport & 0xff;
	u[4] = (uint8_t)(len >> 8), u[5] = len & 0xff;
	u[6] = u[7] = 0;
	for (size_t i = 8; i < len; i++)
		u[i] = (uint8_t)(seq + i);
	memcpy(pseudo, src, alen);
	memcpy(pseudo + alen, dst, alen);
	sum = sum16(pseudo, 2 * alen, 0);
	sum += IPPROTO_UDP + (uint32_t)len;
	c = fold(sum16(u, len, sum));
	if (!c)
		c = 0xffff;
	u[6] = c >> 8, u[7] = c & 0xff;
}

/* addresses: SRC DST of one family, both in the test ranges */
static int addrs(const char *s, const char *d, int *v6, struct in6_addr *s6, struct in6_addr *d6,
		 struct in_addr *s4, struct in_addr *d4)
{
	*v6 = strchr(s, ':') != NULL;
	if (*v6 ? inet_pton(AF_INET6, s, s6) != 1 : inet_pton(AF_INET, s, s4) != 1)
		return bad("bad SRC", s);
	if (*v6 ? inet_pton(AF_INET6, d, d6) != 1 : inet_pton(AF_INET, d, d4) != 1)
		return bad("bad DST (same family as SRC)", d);
	if (!in_test_range(*v6, *v6 ? (void *)s6 : (void *)s4) ||
	    !in_test_range(*v6, *v6 ? (void *)d6 : (void *)d4))
		return bad("address outside 198.18.0.0/15 and 2001:2::/48", s);
	return 0;
}

static void ipv6_hdr(uint8_t *ip, const struct in6_addr *s, const struct in6_addr *d,
		     size_t payload, uint8_t nh)
{
	memset(ip, 0, 40);
	ip[0] = 0x60;
	ip[4] = (uint8_t)(payload >> 8), ip[5] = payload & 0xff;
	ip[6] = nh;
	ip[7] = 64;
	memcpy(ip + 8, s, 16);
	memcpy(ip + 24, d, 16);
}

static int do_vlan(int argc, char **argv)
{
	struct in6_addr s6, d6;
	struct in_addr s4, d4;
	struct out o = { .prog = "udp_send", .fd = -1 };
	uint8_t l3[64];
	long tags, dport, count;
	int v6, err, sent = 0;

	if (argc != 7)
		return usage(stderr), 2;
	tags = number(argv[2], 0, MAX_TAGS);
	if (tags < 0)
		return bad("bad TAGS", argv[2]);
	err = addrs(argv[3], argv[4], &v6, &s6, &d6, &s4, &d4);
	if (err)
		return err;
	dport = number(argv[5], 1, 65535);
	if (dport < 0)
		return bad("bad DPORT", argv[5]);
	count = number(argv[6], 1, MAX_COUNT);
	if (count < 0)
		return bad("bad COUNT", argv[6]);
	err = out_open(&o, argv[0], argv[1]);
	if (err)
		return err;
	for (long i = 0; i < count; i++, sent++) {
		uint16_t sport = (uint16_t)(42000 + i);

		if (v6) {
			ipv6_hdr(l3, &s6, &d6, 24, IPPROTO_UDP);
			udp_dgram(l3 + 40, 24, &s6, &d6, 16, sport, (uint16_t)dport, (unsigned int)i);
			err = put(&o, (unsigned int)tags, ETH_P_IPV6, l3, 64);
		} else {
			uint16_t c;

			memset(l3, 0, 20);
			l3[0] = 0x45;
			l3[3] = 44;	/* 20 + 24 */
			l3[4] = 0x52, l3[5] = (uint8_t)i;
			l3[6] = 0x40;	/* DF */
			l3[8] = 64;
			l3[9] = IPPROTO_UDP;
			memcpy(l3 + 12, &s4, 4);
			memcpy(l3 + 16, &d4, 4);
			c = fold(sum16(l3, 20, 0));
			l3[10] = c >> 8, l3[11] = c & 0xff;
			udp_dgram(l3 + 20, 24, &s4, &d4, 4, sport, (uint16_t)dport, (unsigned int)i);
			err = put(&o, (unsigned int)tags, ETH_P_IP, l3, 44);
		}
		if (err)
			break;
	}
	close(o.fd);
	printf("sent %d\n", sent);
	return sent == count ? 0 : 1;
}

static int do_frag(int argc, char **argv)
{
	static uint8_t dgram[8 + MAX_DGRAM], l3[MAX_FRAG];
	struct in6_addr s6, d6;
	struct in_addr s4, d4;
	struct out o = { .prog = "udp_send", .fd = -1 };
	long dport, count, size, frag, later_nh;
	size_t len, per, off, n;
	int v6, err = 0, sent = 0;
	double t0;

	if (argc != 9)
		return usage(stderr), 2;
	err = addrs(argv[2], argv[3], &v6, &s6, &d6, &s4, &d4);
	if (err)
		return err;
	if (!v6)
		return bad("frag sends IPv6 only", argv[2]);
	dport = number(argv[4], 1, 65535);
	if (dport < 0)
		return bad("bad DPORT", argv[4]);
	count = number(argv[5], 1, MAX_COUNT);
	if (count < 0)
		return bad("bad COUNT", argv[5]);
	size = number(argv[6], 8, MAX_DGRAM);
	if (size < 0)
		return bad("bad SIZE", argv[6]);
	frag = number(argv[7], MIN_FRAG, MAX_FRAG);
	if (frag < 0)
		return bad("bad FRAG", argv[7]);
	later_nh = number(argv[8], 0, 255);
	if (later_nh < 0)
		return bad("bad LATER_NH", argv[8]);
	err = out_open(&o, argv[0], argv[1]);
	if (err)
		return err;
	len = 8 + (size_t)size;
	/* fragment data: a multiple of 8 octets but the last (RFC 8200 4.5) */
	per = ((size_t)frag - 40 - 8) & ~(size_t)7;
	t0 = now_s();
	for (long i = 0; i < count && !err; i++, sent++) {
		uint32_t id = 0x51000 + (uint32_t)i;

		udp_dgram(dgram, len, &s6, &d6, 16, (uint16_t)(43000 + i), (uint16_t)dport,
			  (unsigned int)i);
		for (off = 0; off < len && !err; off += n) {
			n = len - off < per ? len - off : per;
			ipv6_hdr(l3, &s6, &d6, 8 + n, IPPROTO_FRAGMENT);
			l3[40] = off ? (uint8_t)later_nh : IPPROTO_UDP;
			l3[41] = 0;
			l3[42] = (uint8_t)(off >> 8);
			l3[43] = (uint8_t)((off & 0xf8) | (off + n < len ? 1 : 0));
			l3[44] = (uint8_t)(id >> 24), l3[45] = (uint8_t)(id >> 16);
			l3[46] = (uint8_t)(id >> 8), l3[47] = (uint8_t)id;
			memcpy(l3 + 48, dgram + off, n);
			err = put(&o, 0, ETH_P_IPV6, l3, 48 + n);
		}
		if (err)
			sent--;
	}
	close(o.fd);
	printf("sent %d %.6f\n", sent, now_s() - t0);
	return sent == count ? 0 : 1;
}

static int do_sock(int argc, char **argv)
{
	static uint8_t payload[MAX_DGRAM];
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	struct sockaddr *to;
	socklen_t tolen;
	long dport, count, size, secs;
	int fd, v6, sent = 0;
	double t0;

	if (argc != 5)
		return usage(stderr), 2;
	v6 = strchr(argv[0], ':') != NULL;
	if (v6 ? inet_pton(AF_INET6, argv[0], &a6.sin6_addr) != 1
	       : inet_pton(AF_INET, argv[0], &a4.sin_addr) != 1)
		return bad("bad DST", argv[0]);
	if (!in_test_range(v6, v6 ? (void *)&a6.sin6_addr : (void *)&a4.sin_addr))
		return bad("address outside 198.18.0.0/15 and 2001:2::/48", argv[0]);
	dport = number(argv[1], 1, 65535);
	count = number(argv[2], 1, MAX_COUNT);
	size = number(argv[3], 1, MAX_DGRAM);
	secs = number(argv[4], 1, MAX_SECONDS);
	if (dport < 0 || count < 0 || size < 0 || secs < 0)
		return bad("bad DPORT, COUNT, SIZE or SECONDS", argv[1]);
	a6.sin6_port = a4.sin_port = htons((uint16_t)dport);
	to = v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4;
	tolen = v6 ? sizeof(a6) : sizeof(a4);
	fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("udp_send: socket");
		return 1;
	}
	memset(payload, 0x5a, sizeof(payload));
	t0 = now_s();
	for (long i = 0; i < count; i++) {
		double due = t0 + (double)secs * (double)i / (double)count, wait = due - now_s();
		struct timespec ts = { .tv_sec = (time_t)wait,
				       .tv_nsec = (long)((wait - (double)(time_t)wait) * 1e9) };

		if (wait > 0)
			nanosleep(&ts, NULL);
		if (sendto(fd, payload, (size_t)size, 0, to, tolen) == size)
			sent++;
	}
	close(fd);
	printf("sent %d %.6f\n", sent, now_s() - t0);
	return sent == count ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return usage(stdout), 0;
	if (argc >= 2 && !strcmp(argv[1], "recv"))
		return do_recv(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "vlan"))
		return do_vlan(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "frag"))
		return do_frag(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "sock"))
		return do_sock(argc - 2, argv + 2);
	usage(stderr);
	return 2;
}
