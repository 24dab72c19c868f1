/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The XDP program's counting: per reason, per policy, per source and per
 * event. Part of sluice.bpf.c, included by it after maps.h. */
#ifndef SLUICE_BPF_COUNTERS_H
#define SLUICE_BPF_COUNTERS_H

static __always_inline int count(__u32 reason, __u64 bytes)
{
	struct sluice_counter *c = bpf_map_lookup_elem(&counters, &reason);

	if (c) {
		c->packets++;
		c->bytes += bytes;
	}
	return sluice_reason_is_drop(reason) ? XDP_DROP : XDP_PASS;
}

/* A monitored packet passed, and is counted apart as well: the dry run's
 * would-drops, per rule. */
static __always_inline void count_policy(__u32 policy, __u32 reason, __u64 bytes)
{
	struct sluice_policy_counter *pc;

	pc = bpf_map_lookup_elem(&policy_counters, &policy);
	if (!pc)
		return;
	if (sluice_reason_is_drop(reason)) {
		pc->drop_packets++;
		pc->drop_bytes += bytes;
		return;
	}
	pc->pass_packets++;
	pc->pass_bytes += bytes;
	if (reason == SLUICE_R_MONITORED) {
		pc->monitor_packets++;
		pc->monitor_bytes += bytes;
	}
}

/* One more packet on a bucket's passed or dropped, which saturate. */
static __always_inline void count_source(__u32 *n)
{
	if (READ_ONCE(*n) < SLUICE_SRC_COUNT_MAX)
		__sync_fetch_and_add(n, 1);
}

static __always_inline void count_event(__u32 event)
{
	__u64 *n = bpf_map_lookup_elem(&events, &event);

	if (n)
		(*n)++;
}

/* The source table's count stat (enum sluice_src_stat) moves by delta. */
static __always_inline void src_stat_add(__u32 stat, __s64 delta)
{
	__u64 *n = bpf_map_lookup_elem(&src_stats, &stat);

	if (n)
		*n += (__u64)delta;
}

#endif /* SLUICE_BPF_COUNTERS_H */
