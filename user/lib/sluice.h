/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The CLI's shared core, for the commands and daemons: the headers of the
 * core modules of user/lib/ in layer order (tests/lint/layers.sh; rule.h,
 * cli.h, prom.h, hash.h and hooks.h are included by name where used), and
 * the declarations of what cmd/ and daemon/ files share. Files of user/lib/
 * include only the headers they use, never this one. */
#ifndef SLUICE_USER_H
#define SLUICE_USER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <net/if.h>
#include <netinet/in.h>
#include "sluice/sluice.h"
#include "opts.h"
#include "output.h"
#include "clock.h"
#include "parse.h"
#include "map_write.h"
#include "pins.h"
#include "maps.h"
#include "names.h"
#include "srctab.h"
#include "bantab.h"
#include "sources.h"
#include "cluster_state.h"
#include "policy.h"
#include "store.h"
#include "live.h"

/* --- lease.c: the cluster agent's lease writer and notices --- */
struct lease_writer;
/* Loads bpf/cluster.bpf.c's lease writer on m's leases map. */
int lease_writer_open(const struct sluice_maps *m, struct lease_writer **out);
/* Writes n leases (any n, in batches): each g[i].credit replaces its
 * lease's credit (expires_ns 0 releases it) and comes back as the credit
 * it had left, SLUICE_GRANT_FAILED when the map had no room. 0 or -errno. */
int lease_grant(struct lease_writer *w, struct sluice_grant *g, unsigned int n);
void lease_writer_close(struct lease_writer *w);
/* Deletes every lease (an agent starting: none is its own). */
int leases_clear(const struct sluice_maps *m);
/* The next hot notice: 0, or -ENOENT when there is none. */
int hot_pop(const struct sluice_maps *m, struct sluice_hot *h);

/* --- ban.c: the ban table, written by the check server's escalation --- */
struct ban_writer {
	int fd;				/* the ban table (a dup: outlives the maps) */
	struct sluice_ban_state *state;	/* the ban_state map, shared mapping */
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

/* A live ban of a --ban rule's bucket, or of a request rule (escalated),
 * that holds a source: query shows them, as ban list does. */
struct source_ban {
	struct sluice_src_key key;	/* the bucket: the source's own, or its prefix's */
	const struct rule *rule;	/* of p, or NULL: a rule since deleted */
	__u64 left_ns;
	bool escalated;
};
/* Every live rule ban holding addr, longest first, malloc'd into *out (n
 * of them). Prints the error and returns its exit code. */
int source_bans(const struct sluice_maps *m, const struct policy *p,
		const struct sluice_src_key *addr, struct source_ban **out, size_t *n);

/* --- ban_prefix.c: prefix bans (ban add, ban load, their part of ban
 * del and ban list) --- */
/* Opens the picked interface's maps and ban table; edit: writable and
 * locked, with expired bans swept. */
int prefix_bans_open(struct sluice_maps *m, struct bantab *t, bool edit);
void prefix_bans_close(struct sluice_maps *m, struct bantab *t);
/* The same read-only and unlocked, for ban list: 0; 1 when the trie may
 * not be read (not root: nothing printed, the maps closed, t's lists as
 * read, which the pins' group may); -1 after an error (printed). */
int prefix_bans_peek(struct sluice_maps *m, struct bantab *t);
/* Lifts the ban on exactly prefix c (from list `list`, or from every list
 * when list < 0): 1 when there was one, 0 when not, or an exit status. */
int prefix_ban_del(const struct sluice_maps *m, struct bantab *t, const struct cidr *c, int list);
/* Appends every prefix ban of t (of list `list`, or all when list < 0) to
 * ban list's output. */
int prefix_bans_list(const struct bantab *t, int list, struct json *j);
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
extern const struct cli_cmd ban_add_cmd, ban_load_cmd;

/* --- limit.c --- */
/* The keys of a rule's new fields in JSON (limit list -j, query -j). */
void rule_json_fields(struct json *j, const struct rule *r, bool is_default);

/* The commands (cli.h), each in its object's file. */
struct cli_cmd;
extern const struct cli_cmd attach_cmd, detach_cmd, status_cmd, limit_obj, policy_obj,
	stats_cmd, top_cmd, query_cmd, ban_obj, exporter_cmd, check_cmd;

#endif /* SLUICE_USER_H */
