// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice's XDP program for the benchmark: an IPv4 packet from 198.19.255.0/24
 * gets a random source of 198.18.0.0/15 instead, so one BPF_PROG_TEST_RUN of
 * a repeated frame is a flood of never-seen sources. Every other source is
 * judged as it is, so known and random sources are measured on one program.
 * (No global variable: the skeleton must keep sluice's layout.) */
#include <linux/types.h>

#define SLUICE_SOURCE_HOOK(src)						\
	do {								\
		if ((src)->family == 4 && (src)->a[12] == 198 &&	\
		    (src)->a[13] == 19 && (src)->a[14] == 255) {	\
			__u32 r_ = bpf_get_prandom_u32();		\
			(src)->a[13] = (__u8)(18 + (r_ >> 16 & 1));	\
			(src)->a[14] = (__u8)(r_ >> 8);			\
			(src)->a[15] = (__u8)r_;			\
		}							\
	} while (0)
#include "../../bpf/sluice.bpf.c"
