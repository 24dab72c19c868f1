/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The source table's arithmetic, shared by the XDP program (bpf/srctab.h)
 * and userspace (user/lib/srctab.c): its size, where a source may live,
 * and when a slot may change hands without changing any decision.
 *
 * A bucket, a source's home one or a keyed one (--per /LEN, --per rule, or
 * a rule that matches on L4), lives in one of the SLUICE_SLOTS_PER_BUCKET
 * slots of one of two buckets of the table, chosen by a hash of its key
 * seeded at random when the table is made (struct sluice_src_seed,
 * root's alone), so nobody outside can aim a flood at one bucket. The table
 * has --max-sources / SLUICE_SRC_LOAD slots, so 44 bytes a slot (the slot
 * and its counts) cost 68.75 bytes a bucket, home or keyed.
 */
#ifndef SLUICE_SRCTAB_H
#define SLUICE_SRCTAB_H

#include "sluice/algo.h"

/* The table's load at --max-sources live sources: 16/25 = 0.64. */
#define SLUICE_SRC_LOAD_NUM		16ULL
#define SLUICE_SRC_LOAD_DEN		25ULL

/* Buckets of a table for max_sources live sources. */
SLUICE_INLINE __u32 srctab_buckets(__u64 max_sources)
{
	__u64 slots = (max_sources * SLUICE_SRC_LOAD_DEN + SLUICE_SRC_LOAD_NUM - 1) /
		      SLUICE_SRC_LOAD_NUM;

	return (__u32)((slots + SLUICE_SLOTS_PER_BUCKET - 1) / SLUICE_SLOTS_PER_BUCKET);
}

/* A 64-bit finaliser (MurmurHash3's fmix64): every input bit reaches
 * every output bit. */
SLUICE_INLINE __u64 srctab_mix(__u64 x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/* 64 bits of hash of an address (as two words) and its tag (srctab_key),
 * seeded; the two halves pick the two buckets. Each word is mixed whole: an
 * IPv4 address (IPv4-mapped) sits in the high half of a1. */
SLUICE_INLINE __u64 srctab_hash(__u64 a0, __u64 a1, __u64 tag, __u64 seed)
{
	return srctab_mix(a1 ^ srctab_mix(a0 ^ seed ^ tag));
}

/* A keyed key's hash tag: its family, key length and policy, apart from
 * every home key's (its family alone), so a source's home slot and its
 * keyed ones land apart. */
#define SRCTAB_TAG_KEYED		(1ULL << 32)
#define SRCTAB_TAG_LEN_SHIFT		40
#define SRCTAB_TAG_POLICY_SHIFT		48

/*
 * Key k as the table stores it: *a0 and *a1 the slot's address words, *tag
 * its hash tag, and *id the bits of a live slot's ctl that say whose it is
 * (SLUICE_SLOT_V6, SLUICE_SLOT_KEY_MASK, and a keyed key's policy, which is
 * its slot's bound index). A keyed key shorter than the address carries a
 * sentinel bit at bit key_len of the 128-bit form (its masked address is 0
 * there), so keys of one address and two lengths differ.
 */
SLUICE_INLINE void srctab_key(const struct sluice_src_key *k, __u64 *a0, __u64 *a1, __u64 *tag,
			      __u64 *id)
{
	__u32 len = k->key_len, byte = len / 8, shift;
	__u64 bit;

	__builtin_memcpy(a0, k->a, sizeof(*a0));
	__builtin_memcpy(a1, k->a + sizeof(*a0), sizeof(*a1));
	*tag = k->family;
	*id = k->family == SLUICE_FAMILY_V6 ? SLUICE_SLOT_V6 : 0;
	if (k->policy == SLUICE_KEY_HOME)
		return;
	*tag |= SRCTAB_TAG_KEYED | (__u64)k->key_len << SRCTAB_TAG_LEN_SHIFT |
		(__u64)k->policy << SRCTAB_TAG_POLICY_SHIFT;
	*id |= SLUICE_SLOT_KEYED | (k->policy & SLUICE_BOUND_IDX_MASK);
	if (len >= SLUICE_KEY_LEN_SOURCE) {
		*id |= SLUICE_SLOT_KEY_FULL;
		return;
	}
	/* Byte `byte` of the address, within its word in memory order. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	shift = (byte & 7) * 8;
#else
	shift = (7 - (byte & 7)) * 8;
#endif
	bit = (__u64)(0x80U >> (len & 7)) << shift;
	if (byte < 8)
		*a0 |= bit;
	else
		*a1 |= bit;
}

/* The ctl bits a live slot of a key whose srctab_key id is id must match:
 * its state and id, and for a keyed key its bound index. */
SLUICE_INLINE __u64 srctab_id_mask(__u64 id)
{
	return SLUICE_SLOT_STATE_MASK | SLUICE_SLOT_V6 | SLUICE_SLOT_KEY_MASK |
	       ((id & SLUICE_SLOT_KEYED) ? SLUICE_BOUND_IDX_MASK : 0);
}

/* The two candidate buckets of hash h in a table of n buckets (n > 1):
 * distinct, so a source always has 2 x SLUICE_SLOTS_PER_BUCKET slots. */
SLUICE_INLINE void srctab_pick(__u64 h, __u32 n, __u32 *b1, __u32 *b2)
{
	*b1 = (__u32)(((h & 0xffffffffULL) * n) >> 32);
	*b2 = (__u32)(((h >> 32) * (n - 1)) >> 32);
	if (*b2 >= *b1)
		(*b2)++;
}

/* The stripe lock of hash h (SLUICE_SRC_LOCKS of them). */
SLUICE_INLINE __u32 srctab_stripe(__u64 h)
{
	return (__u32)((h >> 20) ^ (h >> 44)) & (SLUICE_SRC_LOCKS - 1);
}

/*
 * Whether a bucket of limit l in state st would judge every packet from
 * now on exactly as a fresh bucket (state 0) does: then its slot may be
 * given to another source, and if its source comes back it starts fresh
 * with no decision changed. A token bucket whose TAT is behind now; a
 * fixed window with nothing spent in the current window; a sliding window
 * with nothing in this window or the one before, not banned.
 */
SLUICE_INLINE int limit_idle(const struct sluice_limit *l, __u64 st, __u64 now)
{
	__u64 w, prev, cur;

	if (l->algo == SLUICE_ALGO_FIXED_WINDOW)
		return st <= fw_start(now, l->interval, l->tolerance);
	if (l->algo == SLUICE_ALGO_SLIDING_WINDOW) {
		w = win_index(now, l->interval);
		if (sw_ahead(st, w, l->bits, l->ban_windows))
			return 0;
		sw_counts(st, w, l->bits, &prev, &cur);
		return !prev && !cur;
	}
	return st < gcra_now(now);
}

/*
 * The state a slot claimed at now for a source of limit l starts with:
 * fresh at now and after, and never old, the state of the slot's last
 * source, so a CAS its last packets began never lands on the new one. 0 is
 * empty for every algorithm; so are a token bucket's 1, an instant long
 * past, a fixed window's 1 (window.h: every window starts at S >= 1, the
 * first one after boot included), and a sliding window's empty counts
 * tagged with a window before now's. Tagged with a constant window (1), they
 * read as a ban ahead of now in the windows before it under a rule with
 * --ban: in window 0, the first W after boot, and again where the tag
 * wraps.
 */
SLUICE_INLINE __u64 srctab_fresh_nonzero(const struct sluice_limit *l, __u64 now)
{
	__u64 w, st;

	if (l->algo != SLUICE_ALGO_SLIDING_WINDOW)
		return 1;
	/* The tag of window w - 1, or of w - 2 where that one's is 0 (the
	 * zero word): behind now by one or two windows, counts empty. */
	w = win_index(now, l->interval) - 1;
	st = sw_make(w, 0, 0, l->bits);
	return st ? st : sw_make(w - 1, 0, 0, l->bits);
}

/*
 * The state a claim writes over a slot's old state old, fresh the value
 * srctab_fresh_claim gave: itself when it differs from old, else another
 * empty value (0, or 1 over 0). With carry, a state carried from
 * elsewhere (a keyed bucket started from its source's home slot,
 * carry_home): that, or one unit more debt where it equals old (as a
 * re-bind's conversion does). It must differ from old: a CAS of the old
 * source's packet that read old then fails (slot_take).
 */
SLUICE_INLINE __u64 srctab_fresh_state(__u64 fresh, __u64 carry, __u64 old)
{
	if (carry)
		return carry != old ? carry : carry == ~0ULL ? carry - 1 : carry + 1;
	return fresh != old ? fresh : !old;
}

/* The span of token-bucket states below the coarse clock that claims draw
 * their fresh state from (srctab_fresh_claim): 2^24 GCRA units, 262 us. */
#define SLUICE_FRESH_SPAN		(1ULL << 24)

/*
 * The fresh state of one claim for a source of limit l, at now (the
 * precise clock) and coarse (the coarse clock, never ahead of it): a
 * token bucket's is an instant just behind the coarse clock, offset by
 * the precise one's low bits, so it is empty on either clock from now on,
 * and no two claims of a slot write the same state unless they read the
 * same precise nanosecond (modulo 262 us within one coarse tick): a CAS
 * a packet of an old source began never lands on a state some later
 * claim wrote (the ABA of two reclaims). A window's is
 * srctab_fresh_nonzero's (windows have as few empty values as a window 0
 * has, see doc/caveats.md).
 */
SLUICE_INLINE __u64 srctab_fresh_claim(const struct sluice_limit *l, __u64 now, __u64 coarse)
{
	__u64 c = gcra_now(coarse);

	if (l->algo == SLUICE_ALGO_FIXED_WINDOW || l->algo == SLUICE_ALGO_SLIDING_WINDOW ||
	    c <= 2 * SLUICE_FRESH_SPAN)
		return srctab_fresh_nonzero(l, now);
	return c - SLUICE_FRESH_SPAN + (gcra_now(now) & (SLUICE_FRESH_SPAN - 1));
}

/*
 * Whether a slot in state st at now, after k admissions since it was
 * claimed (its passed count, read before st), proves that its source came
 * back: an admission lay at least one emission interval T before now (a
 * token bucket: each admission moves the state by T or more from the
 * first one's instant on, so the first lay at or before st - k T, and
 * now - (st - k T) >= T is the test: exact when they came back to back,
 * never early), or in an earlier window than now's (windows: fewer units
 * in now's window than admissions, or any in the window before; a rule in
 * bytes counts more units than packets, so its sources qualify only
 * through the window before). Never with one admission: a one-packet
 * source, as a spoofed one is, never qualifies.
 */
SLUICE_INLINE int limit_returned(const struct sluice_limit *l, __u64 st, __u64 now, __u32 k)
{
	__u64 w, prev, cur, start;

	if (k < 2)
		return 0;
	if (k > SLUICE_EST_ADMITS_MAX)
		k = SLUICE_EST_ADMITS_MAX;
	if (l->algo == SLUICE_ALGO_FIXED_WINDOW) {
		start = fw_start(now, l->interval, l->tolerance);
		return st <= start || st - start < k;
	}
	if (l->algo == SLUICE_ALGO_SLIDING_WINDOW) {
		w = win_index(now, l->interval);
		if (sw_ahead(st, w, l->bits, l->ban_windows))
			return 0;
		sw_counts(st, w, l->bits, &prev, &cur);
		return prev || cur < k;
	}
	return st <= gcra_now(now) + (__u64)(k - 1) * l->interval;
}

#endif /* SLUICE_SRCTAB_H */
