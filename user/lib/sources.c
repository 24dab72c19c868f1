// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Tracked-source counts: the source table's (home and keyed buckets
 * alike) from the counters the datapath keeps (src_stats). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "sources.h"
#include "maps.h"
#include "srctab.h"

/* The sum over the CPUs of stat's deltas, clamped to [0, max]. */
static int src_stat_sum(const struct sluice_maps *m, __u32 stat, __u64 max, __u64 *out)
{
	__u64 *vals = calloc((size_t)m->ncpus, sizeof(*vals));
	__u64 sum = 0;
	int err = 0;

	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(m->src_stats, &stat, vals)) {
		err = -errno;
	} else {
		for (int c = 0; c < m->ncpus; c++)
			sum += vals[c];	/* modulo 2^64: a CPU's deltas may sum below 0 */
		*out = (__s64)sum < 0 ? 0 : sum > max ? max : sum;
	}
	free(vals);
	return err;
}

int src_occupancy_read(const struct sluice_maps *m, struct src_occupancy *o)
{
	int err;

	memset(o, 0, sizeof(*o));
	o->slots = (__u64)map_capacity(m->src_table) * SLUICE_SLOTS_PER_BUCKET;
	if (!o->slots)
		return -EINVAL;
	err = src_stat_sum(m, SLUICE_SRC_STAT_LIVE, o->slots, &o->live);
	if (!err)
		err = src_stat_sum(m, SLUICE_SRC_STAT_ESTABLISHED, o->live, &o->established);
	if (!err)
		err = src_stat_sum(m, SLUICE_SRC_STAT_KEYED, o->live, &o->keyed);
	return err;
}

long table_sources(const struct sluice_maps *m)
{
	struct src_occupancy o;
	int err = src_occupancy_read(m, &o);

	return err ? err : (long)o.live;
}

long count_sources(const struct sluice_maps *m)
{
	return table_sources(m);
}
