/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Counting tracked sources: the source table's, home and keyed buckets
 * alike, from the counters the datapath keeps. */
#ifndef SLUICE_SOURCES_H
#define SLUICE_SOURCES_H

#include <linux/types.h>
#include "maps.h"

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
/* Every bucket of m, home or keyed: table_sources. */
long count_sources(const struct sluice_maps *m);

#endif /* SLUICE_SOURCES_H */
