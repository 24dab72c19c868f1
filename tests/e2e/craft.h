/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the raw-frame helpers of the e2e tests (l4_send, udp_send) share:
 * number parsing, the Internet checksum, the test-range guard, and an
 * AF_PACKET writer of Ethernet frames (optionally behind VLAN-0 tags). */
#ifndef SLUICE_TESTS_CRAFT_H
#define SLUICE_TESTS_CRAFT_H

#include <errno.h>
#include <net/if.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define CRAFT_TAGS_MAX		16
#define CRAFT_L3_MAX		1500

/* s as a decimal in [lo, hi], or -1. */
static long number(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	return v;
}

static uint32_t sum16(const void *data, size_t len, uint32_t sum)
{
	const uint8_t *p = data;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return sum;
}

static uint16_t fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Whether a (4 or 16 bytes) lies in 198.18.0.0/15 or 2001:2::/48, the only
 * addresses these helpers write. */
static int in_test_range(int v6, const void *a)
{
	const uint8_t *b = a;

	if (!v6)
		return b[0] == 198 && (b[1] & 0xfe) == 18;
	return b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 2 && b[4] == 0 && b[5] == 0;
}

struct out {
	const char *prog;	/* for messages */
	int fd;
	struct sockaddr_ll to;
	uint8_t mac_src[6], mac_dst[6];
};

/* An AF_PACKET socket writing on iface to mac_text: 0, or 2 on bad input,
 * 1 on a failure (a message on stderr either way). */
static int out_open(struct out *o, const char *iface, const char *mac_text)
{
	unsigned int mac[6];
	int used = 0;

	if (sscanf(mac_text, "%2x:%2x:%2x:%2x:%2x:%2x%n", &mac[0], &mac[1], &mac[2], &mac[3],
		   &mac[4], &mac[5], &used) != 6 || mac_text[used]) {
		fprintf(stderr, "%s: bad DST_MAC: '%s'\n", o->prog, mac_text);
		return 2;
	}
	for (int i = 0; i < 6; i++)
		o->mac_dst[i] = (uint8_t)mac[i];
	o->mac_src[0] = 0x02;	/* locally administered */
	o->to.sll_family = AF_PACKET;
	o->to.sll_ifindex = (int)if_nametoindex(iface);
	o->to.sll_halen = 6;
	memcpy(o->to.sll_addr, o->mac_dst, 6);
	if (!o->to.sll_ifindex) {
		fprintf(stderr, "%s: no such interface: '%s'\n", o->prog, iface);
		return 2;
	}
	o->fd = socket(AF_PACKET, SOCK_RAW, 0);
	if (o->fd < 0) {
		fprintf(stderr, "%s: AF_PACKET socket: %s\n", o->prog, strerror(errno));
		return 1;
	}
	return 0;
}

/* Write Ethernet, tags 802.1Q tags of VLAN ID 0, EtherType et and l3. */
static int put(struct out *o, unsigned int tags, uint16_t et, const uint8_t *l3, size_t len)
{
	static uint8_t f[14 + 4 * CRAFT_TAGS_MAX + CRAFT_L3_MAX];
	size_t n = 12;

	if (tags > CRAFT_TAGS_MAX || len > CRAFT_L3_MAX) {
		fprintf(stderr, "%s: frame too long\n", o->prog);
		return -1;
	}
	memcpy(f, o->mac_dst, 6);
	memcpy(f + 6, o->mac_src, 6);
	for (unsigned int i = 0; i < tags; i++, n += 4) {
		f[n] = ETH_P_8021Q >> 8, f[n + 1] = ETH_P_8021Q & 0xff;
		f[n + 2] = 0, f[n + 3] = 0;	/* PCP 0, DEI 0, VLAN ID 0 */
	}
	f[n] = et >> 8, f[n + 1] = et & 0xff;
	memcpy(f + n + 2, l3, len);
	if (sendto(o->fd, f, n + 2 + len, 0, (struct sockaddr *)&o->to, sizeof(o->to)) < 0) {
		fprintf(stderr, "%s: sendto: %s\n", o->prog, strerror(errno));
		return -1;
	}
	return 0;
}

#endif /* SLUICE_TESTS_CRAFT_H */
