/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Counting tracked sources: the source table's from the counters the
 * datapath keeps; the keyed buckets' LRU by the kernel's element counter
 * when it has one, else a walk of it. */
#ifndef SLUICE_SOURCES_H
#define SLUICE_SOURCES_H

#include <linux/types.h>
#include "maps.h"

/* The loaded counting iterator (bpf/sources.bpf.c). Loading it needs
 * CAP_BPF and CAP_PERFMON; reading it afterwards needs nothing. */
struct src_counter;

/* NULL when this kernel cannot count (before Linux 6.6, no BTF, or no
 * privilege to load a tracing program); errno says why. */
struct src_counter *src_counter_open(void);
void src_counter_close(struct src_counter *c);
/* Element count of the source table with this map id, -ENOENT if the
 * iterator does not list it, or another -errno. */
long src_counter_get(const struct src_counter *c, __u32 map_id);

/* Every key of a keyed-bucket table, in batches: exact on any kernel, but
 * its cost grows with the table. */
long sources_walk(int map_fd);
/* A keyed-bucket table's count, the cheap way: a walk while the table is
 * small (up to 16384 buckets), else the iterator; used by count_sources(). */
long sources_count(int map_fd);
/* The source table's occupancy, from the counters the datapath keeps
 * (src_stats, per-CPU deltas summed): one lookup per count, whatever the
 * table's size; the table itself is never read. Each count is clamped to
 * [0, slots]: a read of the CPUs one after the other may see a slot's -1
 * before its +1. */
struct src_occupancy {
	__u64 slots;		/* the table's slots */
	__u64 live;		/* held: home and keyed */
	__u64 established;	/* ... by established sources */
	__u64 keyed;		/* ... by keyed buckets */
};

/* 0, or -errno. */
int src_occupancy_read(const struct sluice_maps *m, struct src_occupancy *o);
/* Live slots of m's source table (src_occupancy_read), or -errno. */
long table_sources(const struct sluice_maps *m);
/* Every bucket of m: live slots of the source table (their counters) and
 * the keyed buckets' LRU (sources_count). */
long count_sources(const struct sluice_maps *m);

#endif /* SLUICE_SOURCES_H */
