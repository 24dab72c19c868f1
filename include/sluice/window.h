/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The counting algorithms (--algo fixed-window, --algo sliding-window) as
 * pure functions of one 64-bit state word and a clock reading in ns,
 * compiled by the XDP program, the CLI and the simulator alike, as gcra.h
 * is. The state word is a bucket's only mutable word: the datapath changes
 * it by one compare-and-swap, so a window's rollover and its count are one
 * atomic step. Two CPUs that roll the same window over at once both compute
 * the rolled word from the same old word; one CAS wins, the other fails,
 * re-reads and counts into the rolled window: no count is lost and no
 * window is reset twice.
 *
 * Windows are aligned to the clock (CLOCK_MONOTONIC, ns): window w covers
 * [w * W, (w + 1) * W). The budget N is what one window admits, in the
 * limit's unit (packets, or bytes); a packet costs `cost` units. A state
 * of 0 is an empty bucket for both algorithms.
 */
#ifndef SLUICE_WINDOW_H
#define SLUICE_WINDOW_H

#include "gcra.h"

/* --window bounds, and the budgets a window may hold. */
#define SLUICE_WINDOW_NS_MIN		1000000ULL			/* 1 ms */
#define SLUICE_WINDOW_NS_MAX		(3600ULL * SLUICE_NS_PER_SEC)	/* 1 h */
#define SLUICE_FW_BUDGET_MAX		SLUICE_RATE_MAX
/* sliding-window keeps two counts beside the window in its word. */
#define SLUICE_SW_COUNT_BITS_MAX	20
#define SLUICE_SW_BUDGET_MAX		((1ULL << SLUICE_SW_COUNT_BITS_MAX) - 1)
/* Fraction bits of "how much of the window is left" (see sw_weight). */
#define SLUICE_SW_FRAC_BITS		20

/* a + b and a * b, saturating (b < 2^32 for the product). */
SLUICE_INLINE __u64 win_add(__u64 a, __u64 b)
{
	return a > SLUICE_U64_MAX - b ? SLUICE_U64_MAX : a + b;
}

SLUICE_INLINE __u64 win_mul(__u64 a, __u64 b)
{
	return gcra_cost(a, b);
}

/* w * W in ns, saturating: W may exceed 2^32 (a window over 4.3 s), which
 * win_mul does not take. */
SLUICE_INLINE __u64 win_time(__u64 w, __u64 window)
{
	return window && w > SLUICE_U64_MAX / window ? SLUICE_U64_MAX : w * window;
}

/* The window now falls in, and where it starts. */
SLUICE_INLINE __u64 win_index(__u64 now, __u64 window)
{
	return window ? now / window : 0;
}

/*
 * Fixed window. The word S is a running count, "window start plus count":
 * window w starts at S = w * N + 1, so S - (w * N + 1) is what window w
 * has admitted (0 when S lies below). A full window w has S = (w + 1) * N
 * + 1, which is also where window w + 1 starts empty, so no window number
 * is stored and none can wrap: S grows by N per window, at most by the
 * rate per ns, so it stays below 2^64 for 584 years at 1e9/s. Past that it
 * saturates and admits nothing. A banned word lies beyond the current
 * window's end.
 *
 * The one unit of offset makes both 0 and 1 empty in every window, the
 * first one included (window 0 is the first W after boot: CLOCK_MONOTONIC
 * starts near 0): the source table (srctab.h) claims a slot by moving its
 * word from one empty value to another, and with windows starting at
 * w * N there was no second empty value in window 0, so a claimed slot
 * started with one unit spent (a fresh source got N - 1 in the first hour
 * of a 1 h window).
 */

/* S at the start of now's window. */
SLUICE_INLINE __u64 fw_start(__u64 now, __u64 window, __u64 budget)
{
	__u64 s = win_mul(win_index(now, window), budget);

	return s + (s != SLUICE_U64_MAX);	/* saturating, without a branch: the
						 * datapath's stack has no room for one */
}

/* Admit a packet of cost units: base = max(S, start); admitted when
 * base + cost <= start + N, and then *next = base + cost. */
SLUICE_INLINE int fw_admit_from(__u64 s, __u64 start, __u64 budget, __u64 cost, __u64 *next)
{
	__u64 end = win_add(start, budget);
	__u64 base = s > start ? s : start;

	if (base > end || end - base < cost || end == SLUICE_U64_MAX)
		return 0;
	*next = base + cost;
	return 1;
}

SLUICE_INLINE int fw_admit(__u64 s, __u64 now, __u64 window, __u64 budget, __u64 cost,
			   __u64 *next)
{
	return fw_admit_from(s, fw_start(now, window, budget), budget, cost, next);
}

/* Units the current window has admitted (N while banned). */
SLUICE_INLINE __u64 fw_count(__u64 s, __u64 now, __u64 window, __u64 budget)
{
	__u64 start = fw_start(now, window, budget);

	if (s <= start)
		return 0;
	return s - start > budget ? budget : s - start;
}

SLUICE_INLINE int fw_banned(__u64 s, __u64 now, __u64 window, __u64 budget)
{
	return s > win_add(fw_start(now, window, budget), budget);
}

/* The word that bans for ban_ns from now: rejected until the end of the
 * window now + ban_ns falls in, reported as banned until that window
 * begins (a ban ends with that window spent). */
SLUICE_INLINE __u64 fw_ban_state(__u64 now, __u64 window, __u64 budget, __u64 ban_ns)
{
	__u64 s = win_mul(win_add(win_index(win_add(now, ban_ns), window), 1), budget);

	return s + (s != SLUICE_U64_MAX);
}

/* ns until a ban ends (0 when not banned). */
SLUICE_INLINE __u64 fw_ban_left(__u64 s, __u64 now, __u64 window, __u64 budget)
{
	__u64 w;

	if (!fw_banned(s, now, window, budget) || !budget)
		return 0;
	/* Banned until the window w where S = (w + 1) * N + 1, that is
	 * until window (S - 1) / N - 1 begins (S > N + 1: banned). */
	w = (s - 1) / budget - 1;
	return win_time(w, window) > now ? win_time(w, window) - now : 0;
}

/* ns until a packet of cost units would be admitted: 0 now, U64_MAX never
 * (cost over the budget, or a saturated clock). */
SLUICE_INLINE __u64 fw_wait(__u64 s, __u64 now, __u64 window, __u64 budget, __u64 cost)
{
	__u64 next, w, t;

	if (fw_admit(s, now, window, budget, cost, &next))
		return 0;
	if (cost > budget || !budget)
		return SLUICE_U64_MAX;
	/* Admitted in the first window w with S + cost <= (w + 1) * N + 1
	 * (S lies in or beyond this window, or the packet would fit now: so
	 * S + cost > N + 1 >= 2, unless now's window saturates, where w
	 * wraps high and the clock's end answers never). */
	w = (win_add(s, cost) - 2) / budget;
	if (w <= win_index(now, window))
		w = win_index(now, window) + 1;
	t = win_time(w, window);
	if (t == SLUICE_U64_MAX || win_add(fw_start(t, window, budget), budget) == SLUICE_U64_MAX)
		return SLUICE_U64_MAX;	/* past the clock's end, or S saturates */
	return t - now;
}

/*
 * Sliding window, the counter approximation: the estimate at offset e into
 * window w is cur + prev * (W - e) / W, where cur counts window w and prev
 * counted window w - 1; a packet is admitted when estimate + cost <= N.
 * The word holds [tag | prev | cur]: cur and prev in `bits` bits each (the
 * rule's budget fits; at most SLUICE_SW_COUNT_BITS_MAX) and the low
 * 64 - 2 * bits bits of the window number as the tag, which is at least
 * 24 bits. The weight of prev is rounded up to 2^-20 of the window and its
 * product up to a whole unit, so the estimate is never below the exact one
 * and less than two units above it: the rounding never admits what the
 * exact estimate rejects, and admits whenever that one has two units to
 * spare.
 *
 * The bound: in any interval of length L <= W it admits at most
 * N * (1 + L / W) units. By offset e, window w admits at most
 * N - prev * (W - e) / W, so an interval from window w - 1 into w, ending
 * at offset e < L, holds at most N + prev * e / W. Over a window-long
 * interval that is 2N, as for a fixed window, and it is reached (to within
 * 2 units: N in the last ns of a window, then a sender paced by the
 * retry-after through the next); but where a fixed window admits 2N within
 * 2 ns, this one admits N + 2N/W there. The sliding log it approximates
 * admits at most N in any window-long interval.
 *
 * The tag wraps every 2^tagbits windows (at least 2^24: 4.6 hours of 1 ms
 * windows, 194 days of 1 s ones): a word last written in window t reads its
 * old counts again in windows t + k * 2^tagbits and the one after, and with
 * a --ban it reads as banned in the ban_windows windows before those. That
 * only rejects more. A ban keeps the tag of the window it ends in, ahead of
 * now; the zero word (a new bucket) is empty at any window.
 */
SLUICE_INLINE __u32 sw_tag_bits(__u32 bits)
{
	return 64 - 2 * bits;
}

SLUICE_INLINE __u64 sw_mask(__u32 n)
{
	return n >= 64 ? SLUICE_U64_MAX : (1ULL << n) - 1;
}

SLUICE_INLINE __u64 sw_make(__u64 w, __u64 prev, __u64 cur, __u32 bits)
{
	return ((w & sw_mask(sw_tag_bits(bits))) << (2 * bits)) | (prev << bits) | cur;
}

/* Windows from the word's tag to window w, modulo the tag's range. */
SLUICE_INLINE __u64 sw_age(__u64 st, __u64 w, __u32 bits)
{
	return (w - (st >> (2 * bits))) & sw_mask(sw_tag_bits(bits));
}

/* Whether the word's tag lies ahead of window w, by at most ban_windows
 * (only a ban puts it there). */
SLUICE_INLINE int sw_ahead(__u64 st, __u64 w, __u32 bits, __u64 ban_windows)
{
	__u64 age = sw_age(st, w, bits);

	/* The zero word, a new bucket's, is empty at any window. */
	return st && age && sw_mask(sw_tag_bits(bits)) - age < ban_windows;
}

/* The counts as of window w: *cur of window w, *prev of window w - 1. */
SLUICE_INLINE void sw_counts(__u64 st, __u64 w, __u32 bits, __u64 *prev, __u64 *cur)
{
	__u64 age = sw_age(st, w, bits), m = sw_mask(bits);

	*cur = age == 0 ? st & m : 0;
	*prev = age == 0 ? (st >> bits) & m : age == 1 ? st & m : 0;
}

/* Weight of prev at now: ceil((W - e) * 2^20 / W), e the offset into the
 * window (W <= 1 h < 2^42 ns, so the product fits). */
SLUICE_INLINE __u64 sw_weight_in(__u64 now, __u64 w, __u64 window)
{
	__u64 left = window - (now - w * window);

	return ((left << SLUICE_SW_FRAC_BITS) + window - 1) / window;
}

SLUICE_INLINE __u64 sw_weight(__u64 now, __u64 window)
{
	return sw_weight_in(now, win_index(now, window), window);
}

/* prev's share of the estimate, rounded up. */
SLUICE_INLINE __u64 sw_share(__u64 prev, __u64 weight)
{
	__u64 one = 1ULL << SLUICE_SW_FRAC_BITS;

	return (prev * weight + one - 1) >> SLUICE_SW_FRAC_BITS;
}

/* The estimate at now (units), as the admission sees it. ban_windows: the
 * rule's ban in windows, rounded up (0 without one); a banned word reads as
 * the budget plus one. */
SLUICE_INLINE __u64 sw_estimate(__u64 st, __u64 now, __u64 window, __u32 bits,
				__u64 ban_windows)
{
	__u64 w = win_index(now, window), prev, cur;

	if (sw_ahead(st, w, bits, ban_windows))
		return sw_mask(bits) + 1;
	sw_counts(st, w, bits, &prev, &cur);
	return cur + sw_share(prev, sw_weight(now, window));
}

/* sw_admit in window w = win_index(now, window), already divided out. */
SLUICE_INLINE int sw_admit_in(__u64 st, __u64 now, __u64 w, __u64 window, __u64 budget,
			      __u32 bits, __u64 ban_windows, __u64 cost, __u64 *next)
{
	__u64 prev, cur;

	if (bits == 0 || bits > SLUICE_SW_COUNT_BITS_MAX || sw_ahead(st, w, bits, ban_windows))
		return 0;
	sw_counts(st, w, bits, &prev, &cur);
	/* Each division costs a few ns per packet: now's window is divided
	 * out once, and prev is weighed only when that decides: prev's share
	 * lies in [0, prev], so cur alone over the room rejects (a flood's
	 * common case) and cur + prev within it admits (a source well under
	 * its limit). */
	if (cost > budget || cur > budget - cost)
		return 0;
	if (cur + prev > budget - cost &&
	    cur + sw_share(prev, sw_weight_in(now, w, window)) > budget - cost)
		return 0;
	*next = sw_make(w, prev, cur + cost, bits);
	return 1;
}

SLUICE_INLINE int sw_admit(__u64 st, __u64 now, __u64 window, __u64 budget, __u32 bits,
			   __u64 ban_windows, __u64 cost, __u64 *next)
{
	return sw_admit_in(st, now, win_index(now, window), window, budget, bits, ban_windows,
			   cost, next);
}

SLUICE_INLINE int sw_banned(__u64 st, __u64 now, __u64 window, __u32 bits,
			    __u64 ban_windows)
{
	return sw_ahead(st, win_index(now, window), bits, ban_windows);
}

/* The rule's --ban in windows, rounded up, plus the one a ban ends in. */
SLUICE_INLINE __u64 sw_ban_windows(__u64 ban_ns, __u64 window)
{
	if (!ban_ns || !window)
		return 0;
	return (ban_ns + window - 1) / window + 1;
}

/* The word that bans for ban_ns from now: banned until the window now +
 * ban_ns falls in begins; that window and the next then count it as full
 * (cur, then prev, at the budget), as a fixed window's ban ends spent. */
SLUICE_INLINE __u64 sw_ban_state(__u64 now, __u64 window, __u64 budget, __u32 bits,
				 __u64 ban_ns)
{
	return sw_make(win_index(win_add(now, ban_ns), window), budget, budget, bits);
}

/* ns until a ban ends (0 when not banned). */
SLUICE_INLINE __u64 sw_ban_left(__u64 st, __u64 now, __u64 window, __u32 bits,
				__u64 ban_windows)
{
	__u64 w = win_index(now, window);

	if (!sw_ahead(st, w, bits, ban_windows))
		return 0;
	/* Ahead by mask + 1 - age windows: the ban's window starts then. */
	return (sw_mask(sw_tag_bits(bits)) + 1 - sw_age(st, w, bits)) * window -
	       (now - w * window);
}

/* The smallest offset e into a window at which prev's share, rounded as
 * sw_share and sw_weight round it, is at most room: exact, so a wait is
 * neither early nor late. */
SLUICE_INLINE __u64 sw_offset_for(__u64 prev, __u64 room, __u64 window)
{
	__u64 one = 1ULL << SLUICE_SW_FRAC_BITS, rmax;

	if (!prev || room >= prev)
		return 0;
	/* share <= room  <=>  prev * weight <= room * 2^20
	 *                <=>  weight <= floor(room * 2^20 / prev) = rmax
	 *                <=>  (W - e) * 2^20 <= rmax * W  (weight rounds up)
	 *                <=>  e >= W - floor(rmax * W / 2^20) */
	rmax = room * one / prev;
	return window - (rmax * window >> SLUICE_SW_FRAC_BITS);
}

/* ns until a packet of cost units would be admitted: 0 now, U64_MAX never.
 * Tried in now's window, from now on; else in the next, where cur has
 * become prev; else in the one after, empty. */
SLUICE_INLINE __u64 sw_wait(__u64 st, __u64 now, __u64 window, __u64 budget, __u32 bits,
			    __u64 ban_windows, __u64 cost)
{
	__u64 w, start, prev, cur, e, left;

	if (cost > budget || bits == 0 || bits > SLUICE_SW_COUNT_BITS_MAX || !window)
		return SLUICE_U64_MAX;
	left = sw_ban_left(st, now, window, bits, ban_windows);
	if (left) {
		/* At the ban's window the counts read full; go on from there. */
		now += left;
		st = sw_make(win_index(now, window), budget, budget, bits);
	}
	w = win_index(now, window);
	start = w * window;
	sw_counts(st, w, bits, &prev, &cur);
	if (cur + cost <= budget) {
		e = sw_offset_for(prev, budget - cost - cur, window);
		if (e < now - start)
			e = now - start;
		if (e < window && e <= SLUICE_U64_MAX - start)
			return left + start + e - now;
	}
	/* Never when the clock ends first. */
	if (start > SLUICE_U64_MAX - window)
		return SLUICE_U64_MAX;
	start += window;
	e = sw_offset_for(cur, budget - cost, window);
	if (e < window && e <= SLUICE_U64_MAX - start)
		return left + start + e - now;
	if (start > SLUICE_U64_MAX - window)
		return SLUICE_U64_MAX;
	return left + start + window - now;
}

#endif /* SLUICE_WINDOW_H */
