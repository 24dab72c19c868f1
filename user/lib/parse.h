/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Strict parsing shared by the CLI and policy files (parse.c). */
#ifndef SLUICE_PARSE_H
#define SLUICE_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <netinet/in.h>
#include "sluice/sluice.h"

#define SLUICE_CIDR_STR_MAX	(INET6_ADDRSTRLEN + 8)	/* "addr/len" and a NUL */
struct cidr {
	struct sluice_addr addr;	/* IPv4 stored IPv4-mapped */
	__u32 prefixlen;		/* in the 128-bit space: v4 /24 is 120 */
};
/* Parse "a.b.c.d[/n]" or "x::y[/n]"; NULL on success, else a message. */
const char *parse_cidr(const char *s, struct cidr *out, char *why, size_t len);
void format_cidr(const struct cidr *c, char *buf, size_t len);
void format_addr(const struct sluice_addr *a, char *buf, size_t len);
const char *parse_addr(const char *s, struct sluice_addr *out);
/* A source as the datapath keys it. An IPv4-mapped ::ffff:a.b.c.d is the
 * IPv4 source a.b.c.d (how dual-stack gateways name IPv4 clients). */
const char *parse_source(const char *s, struct sluice_src_key *out);
/* A bucket key as text: the address, or ADDR/LEN (the family's own terms)
 * for a keyed bucket shorter than an address. */
void format_source(const struct sluice_src_key *k, char *buf, size_t len);
/* k as address/len in its family's terms, the length always written (the
 * cluster agent's Redis keys name buckets so). */
void format_source_prefix(const struct sluice_src_key *k, char *buf, size_t len);
/* src masked to key_len bits of its 128-bit form, keyed to rule idx. */
void source_key_mask(const struct sluice_src_key *src, __u32 key_len, __u16 idx,
		     struct sluice_src_key *out);
bool addr_is_v4(const struct sluice_addr *a);
__u8 cidr_family(const struct cidr *c);
/* Whole-string unsigned decimal in [min, max]; false on anything else. */
bool parse_u64(const char *s, __u64 min, __u64 max, __u64 *out);
/* Prints and returns EXIT_USAGE unless name could be a Linux interface
 * name (it also names a directory under SLUICE_PIN_ROOT). */
int validate_ifname(const char *name);

#endif /* SLUICE_PARSE_H */
