/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The Prometheus text writer: one scrape's samples in, exposition text
 * (format 0.0.4) out. Pure: it reads no map, no clock, no network, so
 * tests/unit/test_prom.c checks it byte for byte against golden files. */
#ifndef SLUICE_PROM_H
#define SLUICE_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <net/if.h>
#include "sluice/sluice.h"

#define PROM_POLICY_LEN		64	/* a CIDR, or "default" */

/* One reason's counters; names come from the caller (reason_name()). */
struct prom_reason {
	const char *name;
	bool drop;
	struct sluice_counter c;
};

/* One rule of the live policy: its identity (policy and match), what it
 * does, and its counters. */
struct prom_rule {
	char policy[PROM_POLICY_LEN];	/* the CIDR as `limit list` prints it, or "default" */
	__u8 match_flags;		/* SLUICE_MATCH_* */
	__u8 proto;			/* IPPROTO_*, with SLUICE_MATCH_PROTO */
	__u16 dport_lo, dport_hi;	/* with SLUICE_MATCH_PORT */
	__u32 action;			/* enum sluice_action */
	const char *kind;		/* its name, action_name(action) */
	__u32 unit;			/* enum sluice_unit */
	__u64 rate;			/* units per period */
	__u32 period;			/* SLUICE_PERIOD_*; 0 is per second */
	__u64 burst;
	__u32 per;			/* enum sluice_per */
	__u32 per_len;			/* --per /LEN */
	__u64 ban_ns;			/* 0 for none */
	bool monitor;
	const char *algo;		/* algo_name(): NULL is token-bucket */
	__u64 window_ns;		/* window algorithms: the window */
	struct sluice_policy_counter c;
};

/* An interface's cluster agent (cluster join), as its state map holds it. */
struct prom_cluster {
	bool present;			/* an agent has run on it */
	bool alive;			/* cluster_agent_alive() */
	struct sluice_cluster_state st;
	double fallback_s;		/* the current period included */
};

/* A list of prefix bans in use (ban add, ban load). */
struct prom_ban_list {
	char name[SLUICE_BAN_LIST_NAME];
	__u64 added, loaded;		/* its prefixes by kind */
	struct sluice_counter dropped;	/* what its prefixes dropped */
};

/* One interface, sampled in one go: its series are all or nothing. One
 * that could not be read (read_ok false) has only sluice_interface_up 0. */
struct prom_iface {
	char name[IF_NAMESIZE];
	bool read_ok;			/* its maps were read: every field below is set */
	bool multiprog;			/* libxdp dispatcher */
	__u32 prog_id;
	const char *mode;		/* mode_name() */
	struct prom_reason reasons[SLUICE_R_MAX];
	unsigned int nreasons;
	__u32 capacity;
	long sources;			/* tracked now */
	__u64 established;		/* slots held by established sources now */
	__u64 probation;		/* ... by sources on probation */
	__u64 new_sources;		/* entries taken for new sources, ever */
	__u64 reclaimed;		/* slots taken from another source, any kind */
	__u64 established_reclaimed;	/* ... of which an established one's */
	__u64 lock_gave_up;		/* claims that gave up on a held stripe lock */
	__u64 refused;			/* new sources refused: every slot established */
	__u64 budget_rate;		/* new-source budget per period, 0 off */
	__u64 budget_burst;
	__u32 budget_period;		/* SLUICE_PERIOD_*, 0 when off */
	unsigned int nrules;
	struct prom_rule *rules;	/* the default first, then the rules */
	struct prom_cluster cluster;
	__u64 escalated;		/* the check server's bans now */
	__u32 ban_capacity;		/* attach --max-bans */
	unsigned int nban_lists;
	struct prom_ban_list ban_lists[SLUICE_BAN_LISTS];
};

/* One whole scrape. */
struct prom_scrape {
	const char *version;		/* sluice_build_info */
	const struct prom_iface *ifaces;
	size_t nifaces;
	unsigned int skipped;		/* interfaces that could not be read (read_ok false) */
	double duration_s;		/* time taken to sample */
};

/* One label NAME="VALUE" (backslash, quote and newline escaped), followed
 * by a comma unless last; and a family's HELP and TYPE lines. For the
 * check server's page too. */
void prom_label(FILE *f, const char *name, const char *val, bool last);
void prom_family(FILE *f, const char *name, const char *type, const char *help);

/* One sample: NAME{LABEL="VALUE",...} then the value as fmt prints it;
 * labels are name, value pairs ending with NULL (PROM_LABELS), and NULL
 * or none gives NAME VALUE. */
#define PROM_LABELS(...)	((const char *const[]){ __VA_ARGS__, NULL })
void prom_sample(FILE *f, const char *name, const char *const *labels, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Writes the exposition text of s to f; 0, or -1 if f reports an error. */
int prom_write(FILE *f, const struct prom_scrape *s);

#endif /* SLUICE_PROM_H */
