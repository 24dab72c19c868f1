/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Counters the datapath keeps (per reason, per policy, events) and
 * attach's record for status and the exporter. */
#ifndef SLUICE_ABI_COUNTERS_H
#define SLUICE_ABI_COUNTERS_H

#include <linux/types.h>

/* Events counted beside the reasons (per CPU): what happened to the source
 * table, not to a packet. */
enum sluice_event {
	SLUICE_EV_NEW_SOURCE_ADMITTED = 0,	/* a new entry was taken */
	SLUICE_EV_SOURCE_RECLAIMED = 1,		/* ... by reclaiming an idle source's slot */
	SLUICE_EV_SOURCE_REFUSED = 2,		/* a new source found both its buckets
						 * full of sources in debt: dropped */
	SLUICE_EV_SOURCE_ESTABLISHED = 3,	/* a slot's source became established */
	SLUICE_EV_ESTABLISHED_RECLAIMED = 4,	/* an established source's slot was
						 * reclaimed (idle past its time) */
	SLUICE_EV_LOCK_GAVE_UP = 5,		/* a claim found its stripe lock held
						 * and gave up after bounded tries */
	SLUICE_EV_MAX,
};

/* Per-CPU counters, indexed by enum sluice_reason. */
struct sluice_counter {
	__u64 packets;
	__u64 bytes;
};

/* Per-CPU counters per policy index. */
struct sluice_policy_counter {
	__u64 pass_packets;
	__u64 drop_packets;
	__u64 pass_bytes;
	__u64 drop_bytes;
	/* Of the passed: those a --monitor rule would have dropped. */
	__u64 monitor_packets;
	__u64 monitor_bytes;
};

/* Written by `sluice attach` so status and the exporter can report it. */
struct sluice_meta {
	__u32 ifindex;
	__u32 xdp_mode;		/* enum xdp_attach_mode actually used */
	__u32 multiprog;	/* 1 = libxdp dispatcher, 0 = single program */
	__u32 prog_id;
	__u64 attached_at;	/* CLOCK_REALTIME seconds */
};

#endif /* SLUICE_ABI_COUNTERS_H */
