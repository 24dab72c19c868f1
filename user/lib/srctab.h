/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The source table in userspace (srctab.c): sizing it, and reading and
 * writing its slots in place, through an mmap of the pinned array, by the
 * protocol the XDP program uses (include/sluice/srctab.h). Every bucket,
 * slot or keyed, is seen here as a key and a struct sluice_bucket. */
#ifndef SLUICE_SRCTAB_USER_H
#define SLUICE_SRCTAB_USER_H

#include <stdbool.h>
#include <stddef.h>
#include <bpf/libbpf.h>
#include "sluice/sluice.h"
#include "maps.h"

/* One interface's table, mapped. */
struct srctab {
	struct sluice_slot_bucket *tab;
	struct sluice_slot_counts *cnt;
	size_t tab_len, cnt_len;
	__u32 nbuckets;
	__u64 seed;
	bool seeded;		/* seed read: false for a reader of the group */
	bool writable;		/* mapped in place and writable */
	bool tab_copied, cnt_copied;	/* a read-only descriptor's copies */
};

/* Size the table for max_sources before the object is loaded: the slots
 * (home and keyed buckets alike) and their counts. */
int srctab_size(struct bpf_map *table, struct bpf_map *counts, __u64 max_sources);
/* After the load: a table that has no seed yet gets one at random (the
 * src_seed map), then its size in the config map. 0, or -errno. */
int srctab_init(const struct sluice_maps *m, __u64 max_sources);
/* The seed of m's table (struct sluice_src_seed): 0, -EACCES when m holds
 * no descriptor of it (a reader of the pins' group may not open its pin),
 * or another -errno. */
int srctab_seed(const struct sluice_maps *m, __u64 *seed);
/* A fresh seed at random into the src_seed map at fd, for a table made
 * anew, before the program places any source in it. 0, or -errno. */
int srctab_seed_new(int fd);
/* The idle time after which an established source's slot may be reused
 * (--established-idle): idle_ns when nonzero, else the table's own, or
 * SLUICE_EST_IDLE_NS_DEFAULT for a table that has none. Written under the
 * maps lock, and only when it changes (the datapath changes another word
 * of the config, the budget's, meanwhile). 0, or -errno. */
int srctab_set_idle(const struct sluice_maps *m, __u64 idle_ns);
/* --max-sources of m's table, from the config map (0 if unset). */
__u32 srctab_capacity(const struct sluice_maps *m);

/* Map m's table in place, writable, when m's descriptors are writable;
 * else (a reader of the pins' group) a copy read in batches, each slot
 * read whole but the table not at one instant. 0, or -errno. */
int srctab_open(const struct sluice_maps *m, struct srctab *t);
void srctab_close(struct srctab *t);
/* Slot at, read as a bucket of key: true when it holds a live source. */
bool srctab_read(const struct srctab *t, __u32 at, struct sluice_src_key *key,
		 struct sluice_bucket *b);
/* The live slot of key (a home key or a keyed one), or -1: in its two
 * buckets, or by a walk of the whole table when t has no seed. */
long srctab_find(const struct srctab *t, const struct sluice_src_key *key);
/* Live slots. */
long srctab_live(const struct srctab *t);

/* Calls fn (if any) for every bucket of m (every live slot, home or keyed)
 * until fn returns non-zero. Returns the buckets visited, or -errno. */
long walk_buckets(const struct sluice_maps *m, bucket_fn fn, void *ctx);
/* The bucket of key: 0, -ENOENT, or another -errno. */
int bucket_lookup(const struct sluice_maps *m, const struct sluice_src_key *key,
		  struct sluice_bucket *b);
/* Move the bucket of key from state b->tat, bound b->bound, to state tat,
 * by CAS: 1 if it moved, 0 if the slot changed meanwhile (or is gone);
 * -errno on failure. */
int bucket_set_state(const struct sluice_maps *m, const struct sluice_src_key *key,
		     const struct sluice_bucket *b, __u64 tat);

#endif
