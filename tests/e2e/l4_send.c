// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* e2e/l4_bypass's helper: crafted TCP SYNs written on a veth through an
 * AF_PACKET socket (a SYN behind 9 IPv6 destination-options headers, a SYN
 * cut into an 8-byte first fragment and its rest, plain SYNs), and a TCP
 * listener that keeps ports open for a bounded time. Addresses only from
 * 198.18.0.0/15 and 2001:2::/48; at most 100 frames of each kind. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "craft.h"

#define MAX_COUNT	100
#define MAX_PORTS	8
#define MAX_SECONDS	60

static void usage(FILE *to)
{
	fprintf(to,
		"usage: l4_send listen SECONDS PORT...\n"
		"       l4_send send IFACE DST_MAC KIND SRC DST DPORT COUNT\n"
		"listen: accept TCP connections on PORT... (IPv4 and IPv6) for SECONDS (1-%d).\n"
		"send: COUNT (1-%d) SYNs of KIND from SRC to DST:DPORT, each from its own\n"
		"source port, written on IFACE to DST_MAC. KIND: syn (a plain SYN),\n"
		"v6ext9 (IPv6, behind 9 destination-options headers), v4tiny (IPv4, an\n"
		"8-byte first fragment, then the other 12 bytes at offset 8).\n"
		"Addresses must lie in 198.18.0.0/15 or 2001:2::/48.\n",
		MAX_SECONDS, MAX_COUNT);
}

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, "l4_send: %s: '%s'\n", what, arg);
	return 2;
}

/* ---- listen ---- */

static int do_listen(int argc, char **argv)
{
	int fds[MAX_PORTS], n = 0, one = 1, zero = 0;
	long secs, port;

	if (argc < 2 || argc - 1 > MAX_PORTS)
		return usage(stderr), 2;
	secs = number(argv[0], 1, MAX_SECONDS);
	if (secs < 0)
		return bad("bad SECONDS", argv[0]);
	for (int i = 1; i < argc; i++) {
		struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_addr = in6addr_any };
		int fd;

		port = number(argv[i], 1, 65535);
		if (port < 0)
			return bad("bad PORT", argv[i]);
		a.sin6_port = htons((uint16_t)port);
		fd = socket(AF_INET6, SOCK_STREAM, 0);
		if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) ||
		    bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 64)) {
			perror("l4_send: listen");
			return 1;
		}
		fds[n++] = fd;
	}
	printf("listening\n");
	fflush(stdout);
	/* The kernel answers SYNs for a listening socket by itself; nothing
	 * is accepted, the connections die with the process. */
	sleep((unsigned int)secs);
	for (int i = 0; i < n; i++)
		close(fds[i]);
	return 0;
}

/* ---- send ---- */

/* A 20-byte TCP SYN header, its checksum over the pseudo-header that
 * src, dst (4 or 16 bytes each) make. */
static void tcp_syn(uint8_t *t, const void *src, const void *dst, size_t alen, uint16_t sport,
		    uint16_t dport, uint32_t seq)
{
	uint8_t pseudo[40] = { 0 };
	uint32_t sum;

	memset(t, 0, 20);
	t[0] = sport >> 8, t[1] = sport & 0xff;
	t[2] = dport >> 8, t[3] = dport & 0xff;
	t[4] = seq >> 24, t[5] = (seq >> 16) & 0xff, t[6] = (seq >> 8) & 0xff, t[7] = seq & 0xff;
	t[12] = 5 << 4;		/* data offset: 5 words */
	t[13] = 0x02;		/* SYN */
	t[14] = 0xfa, t[15] = 0xf0;	/* window 64240 */
	memcpy(pseudo, src, alen);
	memcpy(pseudo + alen, dst, alen);
	sum = sum16(pseudo, 2 * alen, 0);
	sum += IPPROTO_TCP + 20;
	sum = sum16(t, 20, sum);
	sum = fold(sum);
	t[16] = sum >> 8, t[17] = sum & 0xff;
}

/* An IPv4 header of tot_len bytes with fragment field frag (host order). */
static void ipv4_hdr(uint8_t *ip, const struct in_addr *s, const struct in_addr *d,
		     size_t tot_len, uint16_t id, uint16_t frag)
{
	uint16_t c;

	memset(ip, 0, 20);
	ip[0] = 0x45;
	ip[2] = (uint8_t)(tot_len >> 8), ip[3] = tot_len & 0xff;
	ip[4] = id >> 8, ip[5] = id & 0xff;
	ip[6] = frag >> 8, ip[7] = frag & 0xff;
	ip[8] = 64;
	ip[9] = IPPROTO_TCP;
	memcpy(ip + 12, s, 4);
	memcpy(ip + 16, d, 4);
	c = fold(sum16(ip, 20, 0));
	ip[10] = c >> 8, ip[11] = c & 0xff;
}

/* The i-th IPv6 SYN of KIND from sport: put's answer, 0 when written. */
static int send_v6(struct out *o, const char *kind, const struct in6_addr *s6,
		   const struct in6_addr *d6, uint16_t sport, uint16_t dport, long i)
{
	uint8_t l3[256], tcp[20];
	size_t n;

	tcp_syn(tcp, s6, d6, 16, sport, dport, 1000u + (uint32_t)i);
	memset(l3, 0, 40);
	l3[0] = 0x60;
	l3[7] = 64;
	memcpy(l3 + 8, s6, 16);
	memcpy(l3 + 24, d6, 16);
	n = 40;
	if (!strcmp(kind, "v6ext9")) {
		l3[6] = 60;	/* destination options */
		for (int h = 0; h < 9; h++, n += 8) {
			memset(l3 + n, 0, 8);
			l3[n] = h < 8 ? 60 : IPPROTO_TCP;
			l3[n + 2] = 1;	/* PadN, 4 octets */
			l3[n + 3] = 4;
		}
	} else {
		l3[6] = IPPROTO_TCP;
	}
	memcpy(l3 + n, tcp, 20);
	n += 20;
	l3[4] = (uint8_t)((n - 40) >> 8), l3[5] = (n - 40) & 0xff;
	return put(o, 0, ETH_P_IPV6, l3, n);
}

/* The i-th IPv4 SYN of KIND from sport (two fragments for v4tiny): put's
 * answer, 0 when all written. */
static int send_v4(struct out *o, const char *kind, const struct in_addr *s4,
		   const struct in_addr *d4, uint16_t sport, uint16_t dport, long i)
{
	uint8_t l3[256], tcp[20];
	uint16_t id = (uint16_t)(0x5100 + i);

	tcp_syn(tcp, s4, d4, 4, sport, dport, 1000u + (uint32_t)i);
	if (!strcmp(kind, "v4tiny")) {
		ipv4_hdr(l3, s4, d4, 28, id, 0x2000);	/* MF, offset 0 */
		memcpy(l3 + 20, tcp, 8);
		if (put(o, 0, ETH_P_IP, l3, 28))
			return 1;
		ipv4_hdr(l3, s4, d4, 32, id, 1);	/* offset 8 octets */
		memcpy(l3 + 20, tcp + 8, 12);
		return put(o, 0, ETH_P_IP, l3, 32);
	}
	ipv4_hdr(l3, s4, d4, 40, id, 0);
	memcpy(l3 + 20, tcp, 20);
	return put(o, 0, ETH_P_IP, l3, 40);
}

static int do_send(int argc, char **argv)
{
	struct in6_addr s6, d6;
	struct in_addr s4, d4;
	struct out o = { .prog = "l4_send", .fd = -1 };
	long dport, count;
	const char *kind;
	int v6, sent = 0, used;

	if (argc != 7)
		return usage(stderr), 2;
	kind = argv[2];
	if (strcmp(kind, "syn") && strcmp(kind, "v6ext9") && strcmp(kind, "v4tiny"))
		return bad("bad KIND", kind);
	v6 = strchr(argv[3], ':') != NULL;
	if (v6 ? inet_pton(AF_INET6, argv[3], &s6) != 1 : inet_pton(AF_INET, argv[3], &s4) != 1)
		return bad("bad SRC", argv[3]);
	if (v6 ? inet_pton(AF_INET6, argv[4], &d6) != 1 : inet_pton(AF_INET, argv[4], &d4) != 1)
		return bad("bad DST (same family as SRC)", argv[4]);
	if (!in_test_range(v6, v6 ? (void *)&s6 : (void *)&s4) ||
	    !in_test_range(v6, v6 ? (void *)&d6 : (void *)&d4))
		return bad("address outside 198.18.0.0/15 and 2001:2::/48", argv[3]);
	if ((!strcmp(kind, "v6ext9") && !v6) || (!strcmp(kind, "v4tiny") && v6))
		return bad("KIND does not fit the address family", kind);
	dport = number(argv[5], 1, 65535);
	if (dport < 0)
		return bad("bad DPORT", argv[5]);
	count = number(argv[6], 1, MAX_COUNT);
	if (count < 0)
		return bad("bad COUNT", argv[6]);
	used = out_open(&o, argv[0], argv[1]);
	if (used)
		return used;
	for (long i = 0; i < count; i++) {
		uint16_t sport = (uint16_t)(41000 + i);

		if (v6 ? send_v6(&o, kind, &s6, &d6, sport, (uint16_t)dport, i) :
			 send_v4(&o, kind, &s4, &d4, sport, (uint16_t)dport, i))
			break;
		sent++;
	}
	close(o.fd);
	printf("sent %d\n", sent);
	return sent == count ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return usage(stdout), 0;
	if (argc >= 2 && !strcmp(argv[1], "listen"))
		return do_listen(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "send"))
		return do_send(argc - 2, argv + 2);
	usage(stderr);
	return 2;
}
