/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The one hash userspace uses for its tables (the check server's buckets,
 * the cluster agent's hot set): FNV-1a over the bytes, then a 64-bit
 * finalizer so that the low bits, which pick a slot, depend on every byte.
 * The seed keys it (a random seed per process keeps a client from choosing
 * colliding keys). */
#ifndef SLUICE_HASH_H
#define SLUICE_HASH_H

#include <stddef.h>
#include <linux/types.h>
#include "sluice/srctab.h"

#define SLUICE_FNV_OFFSET	0xcbf29ce484222325ULL
#define SLUICE_FNV_PRIME	0x100000001b3ULL

/* murmur3's fmix64: every input bit reaches every output bit (the source
 * table's own mixer, include/sluice/srctab.h). */
static inline __u64 hash_mix64(__u64 x)
{
	return srctab_mix(x);
}

static inline __u64 hash_bytes(__u64 seed, const void *p, size_t len)
{
	const unsigned char *b = p;
	__u64 h = SLUICE_FNV_OFFSET ^ seed;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * SLUICE_FNV_PRIME;
	return hash_mix64(h);
}

#endif /* SLUICE_HASH_H */
