/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Every test seam of the datapath, in one list: a macro that sluice's own
 * build leaves as below and a build under tests/bpf/ or tools/ defines
 * before including bpf/sluice.bpf.c, to swap one step for a broken,
 * instrumented or randomised one. Nothing else in bpf/ may be switched by
 * a test. Part of sluice.bpf.c, included by it first.
 *
 *   SLUICE_CAS(ptr, old, new)  the atomic step of admission. Racy builds
 *       (sluice_racy, sluice_lease_racy) put a plain store here, which the
 *       race tests must catch as over-admission.
 *   SLUICE_CLOCK_NS(), SLUICE_COARSE_CLOCK_NS()  the clocks rules are judged
 *       by (policy_clock), both CLOCK_MONOTONIC. sluice_firsthour reads
 *       them as the first hour after boot, window 0 of a 1 h window,
 *       whatever the machine's uptime.
 *   SLUICE_SOURCE_HOOK(src)  after parsing. The benchmarks (sluice_random,
 *       bench_min_random) give each packet a random source; sluice_churn
 *       draws it from a set.
 *   SLUICE_VERDICT_HOOK(src, reason)  at the verdict. sluice_churn counts
 *       admissions per source (the insert race).
 *   SLUICE_TABLE_OFF  1: a source table that never gives a slot
 *       (sluice_nobucket: every new source is no_bucket).
 *   SLUICE_EVICT_IGNORES_ESTABLISHED  1: an eviction that takes
 *       established sources as probation ones (sluice_churn_evict, and
 *       build/tests/sluice-evict for the e2e and soak tests), which
 *       bpf/srctab and the flood tests must catch.
 *   SLUICE_MAX_IPV6_EXT_HDRS  (sluice/bounds.h) the parser's walk of IPv6
 *       extension headers; sluice_shortext cuts it to 4, which the packet
 *       fuzzer must catch.
 */
#ifndef SLUICE_BPF_SEAMS_H
#define SLUICE_BPF_SEAMS_H

#ifndef SLUICE_CAS
#define SLUICE_CAS(ptr, old, new) __sync_val_compare_and_swap(ptr, old, new)
#endif
#ifndef SLUICE_CLOCK_NS
#define SLUICE_CLOCK_NS() bpf_ktime_get_ns()
#endif
#ifndef SLUICE_COARSE_CLOCK_NS
#define SLUICE_COARSE_CLOCK_NS() bpf_ktime_get_coarse_ns()
#endif
#ifndef SLUICE_SOURCE_HOOK
#define SLUICE_SOURCE_HOOK(src) ((void)(src))
#endif
#ifndef SLUICE_VERDICT_HOOK
#define SLUICE_VERDICT_HOOK(src, reason) ((void)(src), (void)(reason))
#endif
#ifndef SLUICE_TABLE_OFF
#define SLUICE_TABLE_OFF 0
#endif
#ifndef SLUICE_EVICT_IGNORES_ESTABLISHED
#define SLUICE_EVICT_IGNORES_ESTABLISHED 0
#endif

#endif /* SLUICE_BPF_SEAMS_H */
