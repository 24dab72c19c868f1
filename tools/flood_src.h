/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* sluice-flood --random: the source of frame i, shared by the socket sender
 * and the XDP_TX program so both walk the same addresses. Frame i gets
 * host part perm(i) of a CIDR, perm a seeded bijection of 0..2^bits-1, so
 * the sources look random yet any 2^bits frames in a row use every host
 * part exactly once. A sub-range to skip is folded onto the other half of
 * the CIDR: a whole cycle then covers every address outside it. */
#ifndef SLUICE_FLOOD_SRC_H
#define SLUICE_FLOOD_SRC_H

struct flood_random {
	__u32 net;		/* host order, host bits clear */
	__u32 bits;		/* host bits: 0..32 */
	__u32 seed;
	__u32 skip_net;		/* host order; skip_mask 0: nothing skipped */
	__u32 skip_mask;
};

static inline __u32 flood_host_mask(__u32 bits)
{
	return bits >= 32 ? 0xffffffffU : (1U << bits) - 1;
}

/* Odd multipliers and right xorshifts are bijections mod 2^bits (the
 * shifted value stays below 2^bits), so their composition is one too. */
static inline __u32 flood_perm(__u32 i, __u32 bits, __u32 seed)
{
	__u32 mask = flood_host_mask(bits), shift = (bits + 1) / 2;
	__u32 x = (i + seed) & mask;

	if (!bits)
		return 0;
	x = (x * 0x9e3779b1U) & mask;
	x ^= x >> shift;
	x = (x * 0x85ebca6bU) & mask;
	x ^= x >> shift;
	return x;
}

/* Host order source address of frame i. */
static inline __u32 flood_random_src(const struct flood_random *r, __u32 i)
{
	__u32 a = r->net | flood_perm(i, r->bits, r->seed);

	/* The skipped range is strictly inside the CIDR, so it lies within one
	 * half of it: flipping the top host bit moves a hit to the other half. */
	if (r->bits && r->skip_mask && (a & r->skip_mask) == r->skip_net)
		a ^= 1U << (r->bits - 1);
	return a;
}

#endif
