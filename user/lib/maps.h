/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The pinned maps of one attached interface: opening, locking and reading
 * them (maps.c). */
#ifndef SLUICE_MAPS_H
#define SLUICE_MAPS_H

#include <stdbool.h>
#include <net/if.h>
#include "sluice/sluice.h"
#include "pins.h"

/* Every map of sluice's BPF object, listed once; X(name) is called for
 * each, the name being both the map's (and its pin's) and the field's. */
#define SLUICE_MAPS(X)							\
	X(src_table)							\
	X(src_counts)							\
	X(src_locks)							\
	X(src_stats)							\
	X(src_seed)							\
	X(policy_lpm)							\
	X(policy_table)							\
	X(config)							\
	X(counters)							\
	X(policy_counters)						\
	X(meta)								\
	X(policy_text)							\
	X(events)							\
	X(bans)								\
	X(ban_state)							\
	X(ban_trie)							\
	X(ban_lists)							\
	X(ban_drops)							\
	X(frag_l4)							\
	X(leases)							\
	X(cluster_hot)							\
	X(cluster_state)
#define SLUICE_MAP_FD_FIELD(name) int name;
struct sluice_maps {
	char iface[IF_NAMESIZE];
	char dir[SLUICE_DIR_MAX];
	SLUICE_MAPS(SLUICE_MAP_FD_FIELD)	/* descriptors, -1 when closed */
	int lock;		/* pins_lock()'s, held while editing policy */
	int ncpus;
};
/* The pin directory of iface, under pin_root(). */
void pin_dir(const char *iface, char *buf, size_t len);
/* Which interface a command acts on: -i, or the only attached one. Prints
 * the error and returns EXIT_USAGE when it cannot tell. */
int pick_iface(char *iface, size_t len);
/* List attached interfaces (pin dirs); returns count, names in out. */
int list_attached(char out[][IF_NAMESIZE], int max);

int maps_open(const char *iface, struct sluice_maps *m);
/* The same with read-only descriptors, for commands that only look. */
int maps_open_ro(const char *iface, struct sluice_maps *m);
/* Bits naming maps of SLUICE_MAPS, e.g. MAP_BIT(bans) | MAP_BIT(config). */
#define SLUICE_MAP_INDEX(name) SLUICE_MAPI_##name,
enum { SLUICE_MAPS(SLUICE_MAP_INDEX) SLUICE_MAPI_COUNT };
#define MAP_BIT(name) (1U << SLUICE_MAPI_##name)
/* The same with only the maps in writable open read-write, the rest
 * read-only: a daemon that writes a few maps holds no other write access. */
int maps_open_writing(const char *iface, struct sluice_maps *m, unsigned int writable);
/* maps_open_ro that prints nothing and returns -1 on failure. */
int maps_try_open_ro(const char *iface, struct sluice_maps *m);
void maps_close(struct sluice_maps *m);
int maps_lock(struct sluice_maps *m);
/* The maps of the interface a command acts on (pick_iface; its name in
 * m->iface): with edit read-write and the writers' lock held, else
 * read-only. 0, or the exit code (printed), nothing left open. */
int maps_open_picked(struct sluice_maps *m, bool edit);

/* Sums over CPUs. */
int read_counters(const struct sluice_maps *m, struct sluice_counter out[SLUICE_R_MAX]);
int read_policy_counter(const struct sluice_maps *m, __u32 idx,
			struct sluice_policy_counter *out);
int read_meta(const struct sluice_maps *m, struct sluice_meta *out);
/* An enum sluice_event's count, summed over CPUs. */
int read_event(const struct sluice_maps *m, __u32 event, __u64 *out);
/* What prefix bans of a list dropped, summed over CPUs: 0 or -1. */
int read_ban_drops(const struct sluice_maps *m, __u32 list, struct sluice_counter *out);
__u32 map_capacity(int fd);
__u32 map_id(int fd);
/* Whether the interface m was opened on still has these maps (it was not
 * detached, or detached and attached afresh, since): the daemons stop when
 * it has not. */
bool maps_still_current(const struct sluice_maps *m);
/* Called for each bucket by walk_buckets (srctab.h); non-zero stops it. */
typedef int (*bucket_fn)(const struct sluice_src_key *key, const struct sluice_bucket *b,
			 void *ctx);

#endif /* SLUICE_MAPS_H */
