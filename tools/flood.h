/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* sluice-flood's limits, its options (struct flood_opts, parsed by
 * flood_opts.c) and what its two files share. */
#ifndef SLUICE_FLOOD_H
#define SLUICE_FLOOD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <net/ethernet.h>
#include "flood_src.h"

#define PROG			"sluice-flood"
#define EXIT_RUNTIME		1
#define EXIT_USAGE		2

#define COUNT_MAX		100000000ULL	/* 1e8 packets */
#define PPS_MAX			100000000ULL
#define SECONDS_DEFAULT		10.0
#define SECONDS_MAX		120.0
#define ALIGN_MAX		60.0		/* --align's period, s */
#define SOURCES_MAX		16777216ULL
#define RANDOM_BITS_MAX		17		/* 198.18.0.0/15 holds 2^17 */
#define BATCH			32		/* frames per sendmmsg */
#define FRAME_MAX		9014		/* Ethernet without FCS, MTU 9000 */
#define FRAME_MIN		60		/* shorter frames get padded anyway */
#define FRAME_SLOT		9024		/* per buffer, a multiple of 8 */
#define FRAME_ALIGN		2		/* so the IP header is 4-byte aligned */
#define SPORT			40000
#define TCP_SEQ			1000000		/* any: nothing tracks these flows */
#define TCP_ACK_SEQ		2000000
#define TCP_WINDOW		65535
#define DPORT_DEFAULT		9		/* discard */
#define NS_PER_SEC		1000000000ULL
#define ENOBUFS_BACKOFF_NS	50000		/* 50 us, when the device is full */
#define XDP_CHUNK_MAX		262144		/* frames per live-frames run; --seconds is checked between runs */
#define XDP_BATCH		64		/* frames the kernel sends at once */
#define XDP_PACED_RUN		256		/* with --pps: one veth ring of frames per run */

struct addr {
	int family;		/* AF_INET or AF_INET6 */
	uint8_t a[16];		/* network order; IPv4 in the first 4 bytes */
};

struct flood_opts {
	const char *iface;
	uint8_t dst_mac[ETH_ALEN];
	struct addr src, dst;
	uint64_t sources, src_step, count, pps;
	double seconds;
	unsigned int dport, size;
	uint8_t proto;		/* IPPROTO_UDP or IPPROTO_TCP */
	uint8_t tcp_flags;	/* TH_*, with IPPROTO_TCP */
	bool xdp;
	bool random;		/* sources from rnd (--random) */
	struct flood_random rnd;
	const char *timestamps;	/* --timestamps FILE, or NULL */
	uint64_t align_ns, align_off_ns;	/* --align, 0 for none */
};

/* An error line "sluice-flood: ..." on stderr; returns EXIT_USAGE. */
int usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define runtime_err(...) (usage_err(__VA_ARGS__), EXIT_RUNTIME)

/* The command line into o: 0, or the exit status (help: exits 0). */
int parse_opts(int argc, char **argv, struct flood_opts *o);
/* The address n after a (within its family's width). */
void addr_add(const struct addr *a, uint64_t n, struct addr *out);

/* flood.c */
uint64_t now_ns(void);
size_t headers_len(int family, uint8_t proto);

#endif /* SLUICE_FLOOD_H */
