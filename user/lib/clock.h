/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The clocks the datapath judges by, read from userspace (clock.c). */
#ifndef SLUICE_CLOCK_H
#define SLUICE_CLOCK_H

#include "sluice/sluice.h"

/* CLOCK_MONOTONIC, the datapath's bpf_ktime_get_ns(). */
__u64 mono_now_ns(void);
/* The clock the datapath judges policy p by (SLUICE_POLICY_COARSE_CLOCK). */
__u64 policy_now_ns(const struct sluice_policy *p);
/* CLOCK_MONOTONIC_COARSE, the datapath's bpf_ktime_get_coarse_ns(). */
__u64 coarse_now_ns(void);
/* The coarse clock's tick, ns (0 if unknown). */
__u64 coarse_tick_ns(void);

#endif /* SLUICE_CLOCK_H */
