/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The prefix ban table in userspace (bantab.c): the live trie in slot 0 of
 * the ban_trie map, its named lists, and the writes ban add, ban del and
 * ban load make to them (sluice/bans.h). Every writer holds the interface's
 * policy lock (maps_lock), so the table and the lists' tallies change in
 * one order. */
#ifndef SLUICE_BANTAB_H
#define SLUICE_BANTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <bpf/libbpf.h>
#include "sluice/sluice.h"
#include "maps.h"
#include "parse.h"

struct bantab {
	int trie;		/* the live trie, -1 while none is installed */
	__u32 capacity;		/* --max-bans */
	struct sluice_ban_list lists[SLUICE_BAN_LISTS];
};

/* One walked entry. */
struct ban_entry {
	struct sluice_ban_key key;
	struct sluice_pfx_ban v;
};

/* The default list's name (ban add, ban load without --list). */
#define BANTAB_DEFAULT_LIST	"default"

/* After the load: a table without a capacity gets max_bans. The tries
 * userspace makes have it; the kernel matches an inner map to the array
 * of maps' template by type, key, value and flags, not by size. */
int bantab_init(const struct sluice_maps *m, __u64 max_bans);

/* Reads the capacity, the lists and the live trie of m into t. */
int bantab_open(const struct sluice_maps *m, struct bantab *t);
void bantab_close(struct bantab *t);
/* A new, empty trie of t's capacity: its fd, or -errno. */
int bantab_new_trie(const struct bantab *t);
/* Makes fd the live trie (fd < 0: none), and t's. */
int bantab_install(const struct sluice_maps *m, struct bantab *t, int fd);
/* Writes t's lists back. A list left without prefixes is freed: its name
 * and index go back (its drop counters zeroed) for the next new list. */
int bantab_lists_write(const struct sluice_maps *m, struct bantab *t);
/* The prefixes list l holds. */
__u64 bantab_list_size(const struct sluice_ban_list *l);

/* Every entry of trie fd, read into *out (malloc'd, *n of them). */
int bantab_read(int fd, struct ban_entry **out, size_t *n);
/* Whether trie fd holds no entry. */
bool bantab_empty(int fd);

/* A list's index by name, -1 when there is none; bantab_list_take makes
 * one when missing (-ENOSPC when all SLUICE_BAN_LISTS are in use). */
int bantab_list_find(const struct bantab *t, const char *name);
int bantab_list_take(struct bantab *t, const char *name);
/* Whether name may name a list: 1-31 of [A-Za-z0-9._-]. */
bool bantab_list_name_ok(const char *name);
/* Counts v's memberships into its lists' tallies (sign +1 or -1), and its
 * expiry into their next_expiry. */
void bantab_tally(struct bantab *t, const struct sluice_pfx_ban *v, int sign);
/* The lowest list of a set of lists (0 for none). */
__u32 bantab_first_list(__u64 lists);

/* Each list's own end of a prefix's ban (sluice/bans.h): list li's end in
 * v (0: forever, or li does not hold it). */
__u64 bantab_end_of(const struct sluice_pfx_ban *v, int li);
/* List li bans v's prefix until `until` (0: forever), by ban load when
 * loaded; v's until_ns and list follow. -EMLINK when SLUICE_BAN_ENDS
 * lists hold it already. */
int bantab_end_set(struct sluice_pfx_ban *v, int li, __u64 until, bool loaded);
/* The lists of mask drop let v's prefix go; until_ns and list follow. */
void bantab_end_drop(struct sluice_pfx_ban *v, __u64 drop);
/* until_ns and list from the lists' ends: the latest end, and the list
 * that has it (the lowest on a tie), which the datapath counts drops to. */
void bantab_settle(struct sluice_pfx_ban *v);
/* The lists of v whose own ban has ended by now. */
__u64 bantab_ended(const struct sluice_pfx_ban *v, __u64 now);

/* A prefix as the trie keys it. */
void bantab_key(const struct cidr *c, struct sluice_ban_key *k);
void bantab_format(const struct sluice_ban_key *k, char *buf, size_t len);

/* A table this full (percent of --max-bans) is said to be near full. */
#define BANTAB_FULL_PCT		90
/* A warning on stderr (log_event) when t's trie is BANTAB_FULL_PCT full
 * or more: for the commands that have just written it. */
void bantab_warn_full(const struct sluice_maps *m, const struct bantab *t);

/* Removes every list's expired ban, when a list says one may have expired:
 * a prefix goes with its last list; logs each, or one line per list with a
 * count and samples when more than a few of a list expire at once;
 * uninstalls an emptied trie. Returns how many went, or
 * -errno. who names the command, for the log. */
int bantab_sweep(const struct sluice_maps *m, struct bantab *t, const char *who);

/* ---- bantab_prefix.c: one prefix ban at a time ---- */
/* The value's exact entry at k in trie fd: 1 and *v, 0 when k is not an
 * entry (only a shorter prefix, or nothing), or -errno. */
int prefix_exact(int fd, const struct sluice_ban_key *k, struct sluice_pfx_ban *v);
/* Puts prefix k into list li of trie fd, ending at until (0: forever), as
 * kind; the other lists that hold it keep their own ends. t's tallies
 * follow. 0, or -errno (-ENOSPC: the table is full; -EMLINK: it is in
 * SLUICE_BAN_ENDS lists already). */
int prefix_put(struct bantab *t, int fd, const struct sluice_ban_key *k, int li, __u64 until,
	       __u32 kind);
/* Whether c is 0.0.0.0/0 or ::/0, which bans every source: refused
 * without --force, by prefix_everything_err (where: a prefix for the line,
 * "FILE:N: "). */
bool prefix_everything(const struct cidr *c);
int prefix_everything_err(const struct cidr *c, const char *where);
/* List name's index in t, made if missing; -1 (printed) when all are in use. */
int prefix_list_take(struct bantab *t, const char *name);
/* A ban's ADDR[/LEN]: parse_cidr's, and IPv4-mapped forms as IPv4. */
int parse_ban_prefix(const char *s, struct cidr *c, char *why, size_t len);
/* --for DURATION (or a list entry's duration) into an until_ns. */
int parse_ban_for(const char *opt, const char *s, __u64 *until_ns, char *why, size_t len);

/* ---- bantab_escalated.c: the ban table of request rules, written by the
 * check server's escalation (a hash of sources, and the ban_state word
 * that tells the datapath whether to look) ---- */
struct ban_writer {
	int fd;				/* the ban table (a dup: outlives the maps) */
	struct sluice_ban_state *state; /* the ban_state map, shared mapping */
	size_t len;
};
/* Opens what ban_put needs from m: bans and ban_state, opened writable (as
 * root: before the server drops privileges); nothing of the policy.
 * Prints the error and returns its exit code. */
int ban_writer_open(const struct sluice_maps *m, struct ban_writer *w);
void ban_writer_close(struct ban_writer *w);
/* Bans src (its home key, as parse_source gives it) in XDP until until_ns
 * (CLOCK_MONOTONIC) on behalf of request rule idx. Thread-safe. 0, or
 * -errno (-E2BIG: the table is full). */
int ban_put(struct ban_writer *w, const struct sluice_src_key *src, __u32 idx, __u64 until_ns);
/* Deletes the ban table's expired entries and, when none is left, lets
 * the datapath stop looking (unless a ban was added meanwhile). One
 * thread at a time. Returns the live bans, or -errno. */
int ban_sweep(struct ban_writer *w);
/* Called by a sweep between reading an entry as expired and taking it out
 * of the table. sluice defines none; a test defines one to ban the same
 * source again right there. */
void ban_sweep_window(const struct sluice_src_key *key) __attribute__((weak));
/* Calls fn for each entry of the ban table fd, read in batches, until fn
 * returns non-zero: 0, fn's value, or -errno. */
typedef int (*ban_fn)(const struct sluice_src_key *key, const struct sluice_ban *v, void *ctx);
int ban_walk(int fd, ban_fn fn, void *ctx);

#endif /* SLUICE_BANTAB_H */
