/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* An attach over pins another version of sluice made (upgrade.c): the maps
 * whose layout is unchanged are kept as they are; the others are made anew
 * beside them, filled from the old ones before the new program loads, and
 * pinned over the old ones once it runs. */
#ifndef SLUICE_UPGRADE_H
#define SLUICE_UPGRADE_H

#include <stdbool.h>
#include <stddef.h>
#include "maps.h"

struct sluice_bpf;
struct btf;

enum upgrade_fate {
	UPGRADE_KEPT,		/* the pinned map, reused as it is */
	UPGRADE_NEW,		/* no such pin: a map this version adds */
	UPGRADE_REPLACED,	/* its layout changed: made anew */
};

#define UPGRADE_BTFS 4	/* distinct BTF objects among the old maps */

struct upgrade {
	enum upgrade_fate fate[SLUICE_MAPI_COUNT];
	int old[SLUICE_MAPI_COUNT];	/* the pinned map, -1 if none */
	bool any;			/* some map is new or replaced */
	bool recommitted;		/* the policy was re-read from its text */
	bool sources_fresh;		/* per-source state starts over */
	const struct btf *old_btf[SLUICE_MAPI_COUNT];	/* each old map's */
	struct btf *btfs[UPGRADE_BTFS];	/* the distinct ones loaded */
	__u32 btf_ids[UPGRADE_BTFS];
	struct btf *new_btf;
	int btf_fd;			/* the new maps' BTF, in the kernel */
	int lock;			/* pins_lock()'s */
};

/* Compares every pinned map under dir with the skeleton's (sized already)
 * and makes anew those that differ or are missing, unpinned. u->any says
 * whether there is an upgrade to do; then the pin directory stays locked
 * until upgrade_done(). Prints the error and returns its exit code. */
int upgrade_plan(struct sluice_bpf *skel, const char *dir, const char *iface,
		 struct upgrade *u);
/* Fills the new maps from the old: counters, bans, the cluster's and the
 * config's state by their fields' names, and the policy re-committed from
 * the text the old version kept. Before the program loads. */
int upgrade_fill(struct sluice_bpf *skel, struct upgrade *u, const char *iface,
		 const char *dir);
/* The new program runs: pin the new maps over the old ones. */
int upgrade_pin(struct sluice_bpf *skel, const struct upgrade *u, const char *dir);
/* upgrade_bans.c: ban_state made anew from the old config's word, by its
 * field's name (upgrade_fill). */
int upgrade_ban_state(struct sluice_bpf *skel, const struct upgrade *u);
/* How long after the new maps are pinned an old check server may still
 * write its bans into the old ones: it notices within a second (its sweep)
 * and stops, and a request it was answering may finish meanwhile. */
#define UPGRADE_CARRY_NS	(3ULL * 1000 * 1000 * 1000)
/* The new program runs on the pinned new maps: escalation bans an old
 * check server wrote where it does not look (the old ban table, or a
 * table whose word was elsewhere) carried over, until UPGRADE_CARRY_NS
 * has passed, when there can be any. Says what it could not carry. */
int upgrade_carry_bans(struct sluice_bpf *skel, const struct upgrade *u);
/* Lets edits go on (to the new maps) while the rest is still held. */
void upgrade_unlock(struct upgrade *u);
/* ", upgraded in place: kept ...; made anew ..." for attach's message. */
void upgrade_words(const struct upgrade *u, char *buf, size_t len);
/* Nothing held: every fd -1. upgrade_done() frees what is held and inits. */
void upgrade_init(struct upgrade *u);
void upgrade_done(struct upgrade *u);

#endif /* SLUICE_UPGRADE_H */
