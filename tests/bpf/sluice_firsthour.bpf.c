// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice's XDP program on clocks that read as the first hour after boot:
 * CLOCK_MONOTONIC modulo 1 h, so now lies in window 0 of a 1 h window
 * (a fixed window's start and a sliding window's tag are 0 there) on a
 * machine up for days, and the wrap falls on the hour, where the tests
 * that use it never run (room_in_window). Only test_algos loads it, to
 * judge new sources where a freshly booted machine judges them. */
#define SLUICE_FIRST_HOUR_NS	(3600ULL * 1000000000ULL)
#define SLUICE_CLOCK_NS()	(bpf_ktime_get_ns() % SLUICE_FIRST_HOUR_NS)
#define SLUICE_COARSE_CLOCK_NS()	(bpf_ktime_get_coarse_ns() % SLUICE_FIRST_HOUR_NS)
#include "../../bpf/sluice.bpf.c"
