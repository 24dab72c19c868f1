// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The minimal XDP token bucket (tools/bench_min.bpf.c) for bench_xdp, with
 * the marker sources of sluice's benchmark variant (sluice_random.bpf.c)
 * spread the same way, so both run the same source-table scenarios:
 *   198.19.254.x  one of 1000 (198.18.0.0 to 198.18.3.231)
 *   198.19.253.x  one of 65536 (198.18.0.0/16)
 *   198.19.255.x  any address of 198.18.0.0/15 */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#define BENCH_SOURCES_FEW	1000

static __attribute__((always_inline)) inline void bench_min_source(__u32 *src)
{
	__u8 *a = (__u8 *)src;
	__u32 r;

	if (a[0] != 198 || a[1] != 19 || a[2] < 253)
		return;
	r = bpf_get_prandom_u32();
	if (a[2] == 254)
		r %= BENCH_SOURCES_FEW;
	else if (a[2] == 253)
		r &= 0xffff;
	else
		r &= 0x1ffff;
	a[1] = (__u8)(18 + (r >> 16 & 1));
	a[2] = (__u8)(r >> 8);
	a[3] = (__u8)r;
}

#define BENCH_MIN_SOURCE_HOOK(src) bench_min_source(src)
#include "../../tools/bench_min.bpf.c"
