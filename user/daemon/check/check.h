/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the check server's parts share: the server, its policy of request
 * rules, its source table and the answers it gives. server.c serves them,
 * rules.c loads the rules, entries.c keeps the table, judge.c and
 * escalation.c decide, metrics.c writes the /metrics page. */
#ifndef SLUICE_CHECK_H
#define SLUICE_CHECK_H

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include "core.h"
#include "sluice/algo.h"
#include "httpd.h"
#include "metrics.h"
#include "lru.h"

#define HEADER_DEFAULT		"X-Real-IP"
#define TRUST_DEFAULT		"127.0.0.0/8,::1/128"
#define TRUST_MAX		32
#define SWEEP_NS		SLUICE_NS_PER_SEC	/* expired bans, a detached interface */
/* X-Request-ID: nginx runs auth_request again after an internal redirect
 * (index, error_page) with the same $request_id; with --trust-request-id
 * such a repeat within REPEAT_NS gets the first answer again, uncharged. */
#define REPEAT_SLOTS		4096U
#define REPEAT_NS		(5ULL * SLUICE_NS_PER_SEC)
#define REQUEST_ID_MAX		64
#define ADDRESS_MAX		64	/* an address header's value, blanks trimmed */
#define NIL			TABLE_NIL
/* The fairness cap of the source table: the entries of one prefix (an
 * IPv6 /48, a site's usual allocation; an IPv4 /24) may hold at most
 * 1/PREFIX_SHARE_DIV of it, and never less than PREFIX_SHARE_MIN, so one
 * network's many addresses cannot take the others' room. */
#define PREFIX_BITS_V6		48U
#define PREFIX_BITS_V4		(SLUICE_V4_MAPPED_PREFIX + 24U)
#define PREFIX_SHARE_DIV	8U
#define PREFIX_SHARE_MIN	16U

/* One answer to GET /check, kept for repeats of its X-Request-ID. */
struct answer {
	unsigned int status;
	enum outcome outcome;
	bool fields;			/* with RateLimit-Policy and RateLimit */
	char name[SLUICE_CIDR_STR_MAX];	/* the rule's CIDR */
	__u64 quota, window_s, remaining, reset_s;
	__u64 retry_s;			/* Retry-After, 0 for none */
};

/* A request rule as the server judges it, at its table index. */
struct check_rule {
	bool in_use;
	struct cidr cidr;
	__u8 family;
	__u32 key_len;			/* buckets key the source masked to this */
	struct sluice_limit l;		/* ban 0: --ban is the XDP escalation */
	bool monitor;
	__u64 ban_ns;			/* 0: no escalation */
	__u32 ban_after;
	char name[SLUICE_CIDR_STR_MAX];
	__u64 quota, window_s;		/* RateLimit-Policy */
};

struct check_policy {
	__u64 gen;			/* SLUICE_GEN of the config it was read under */
	unsigned int n;			/* request rules */
	__u32 order[SLUICE_MAX_POLICIES];	/* their indexes, longest prefix first */
	struct check_rule rules[SLUICE_MAX_POLICIES];
};

/* An entry of the source table (lru.h): a bucket (a source masked to
 * its rule's key length, keyed with the rule's index, as the datapath keys
 * buckets), or, for a rule whose buckets are wider than one address, one
 * address's streak of rejected requests (the escalation counts per
 * address). */
enum { KIND_BUCKET, KIND_STREAK };
struct check_key {
	struct sluice_src_key src;
	__u32 kind;
};
struct check_entry {
	__u64 state;			/* the algorithm's word (bucket) */
	__u64 idle_at;			/* from then on it holds nothing worth keeping */
	__u32 rejected;			/* requests rejected in a row */
	__u32 prefix;			/* its prefix's entry in s->prefixes */
};

/* The entries of one prefix (PREFIX_BITS_*), keyed by a struct
 * sluice_src_key masked to it with policy 0. */
struct prefix_entry {
	__u32 n;			/* entries of the source table */
	__u64 no_idle_until;		/* none of them is idle before then */
};

/* A repeat's slot: the answer given to (id, source). */
struct repeat_slot {
	char id[REQUEST_ID_MAX + 1];
	struct sluice_src_key src;
	__u64 at;
	struct answer a;
};

/* Per rule index, atomically added. */
struct rule_counts {
	__u64 pass, limited, bans;
};

struct check_server {
	struct httpd http;
	struct sluice_maps m;
	struct ban_writer bans;
	const char *header;
	bool repeat_ids;		/* --trust-request-id */
	struct cidr trust[TRUST_MAX];
	unsigned int ntrust;
	__u64 seed;
	/* Everything below, and the policy, under lock. */
	pthread_mutex_t lock;
	struct check_policy *pol;
	struct table t;			/* struct check_key to struct check_entry */
	struct table prefixes;		/* the entries' prefixes: struct prefix_entry */
	__u32 prefix_share;		/* entries one prefix may hold */
	__u64 no_idle_until;		/* none of the full table is idle before then */
	__u64 said_ns[REFUSE_MAX];	/* when a refusal was last said (0: never) */
	__u64 unsaid[REFUSE_MAX];	/* new sources refused since */
	struct repeat_slot *repeats;
	/* Atomic counters. */
	__u64 answers[OUT_MAX];
	__u64 ban_failures;		/* ban_put refused: the ban table is full */
	__u64 refused[REFUSE_MAX];	/* new sources refused, by reason */
	struct rule_counts counts[SLUICE_MAX_POLICIES];
};

static inline __u64 div_up(__u64 a, __u64 b)
{
	return a / b + (a % b ? 1 : 0);
}

static inline __u64 ns_to_s_up(__u64 ns)
{
	return div_up(ns, SLUICE_NS_PER_SEC);
}

/* Whether the first plen bits of a and b agree. */
static inline bool prefix_match(const __u8 *a, const __u8 *b, __u32 plen)
{
	__u32 full = plen / 8, rest = plen % 8;

	if (memcmp(a, b, full) != 0)
		return false;
	return !rest || !((a[full] ^ b[full]) & (0xff << (8 - rest)));
}

static inline bool cidr_has(const struct cidr *c, __u8 family, const __u8 *addr)
{
	return cidr_family(c) == family && prefix_match(c->addr.a, addr, c->prefixlen);
}

static inline void count(__u64 *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

/* rules.c: the interface's request rules. */
void check_policy_add(struct check_policy *out, const struct rule *r);
int check_policy_load(const struct sluice_maps *m, struct check_policy *out);
const struct check_rule *check_rule_for(const struct check_policy *p,
					const struct sluice_src_key *src, __u32 *idx);
void check_policy_apply(struct check_server *s, struct check_policy *np, __u64 now);

/* entries.c: the source table, under the lock. */
int check_table_init(struct check_server *s, __u32 cap);
void check_table_free(struct check_server *s);
__u32 check_entry_get(struct check_server *s, const struct check_key *k, __u64 now);
void check_entry_remove(struct check_server *s, __u32 i);
void check_entry_idle_now(struct check_server *s, struct check_entry *e, __u64 now);
__u64 check_idle_time(const struct sluice_limit *l, __u64 st, __u64 now);

static inline struct check_entry *check_entry_at(const struct check_server *s, __u32 i)
{
	return table_val(&s->t, i);
}

/* bucket.c: one request judged against a bucket's state st, with
 * s->lock held; SLUICE_JUDGE_*, the new state in *next. */
int check_bucket_judge(struct check_server *s, const struct sluice_limit *l, __u64 st,
		       __u64 now, __u64 *next);

/* judge.c and escalation.c: the answer to one check. */
void check_source(struct check_server *s, const struct sluice_src_key *src, const char *id,
		  bool status403, __u64 ban_left, struct answer *a);
__u64 check_ban_left(const struct check_server *s, const struct sluice_src_key *src);
void check_escalate(struct check_server *s, const struct check_rule *r, __u32 idx,
		    const struct sluice_src_key *src, struct check_entry *streak, __u64 now,
		    struct answer *a);

/* server.c: the HTTP side. */
const char *check_one_header(struct MHD_Connection *conn, const char *name);
int check_parse_trust(const char *spec, struct check_server *s);
bool check_gateway_peer(void *cls, const struct in6_addr *peer);
enum MHD_Result check_on_request(void *cls, struct MHD_Connection *conn, const char *url);

#endif /* SLUICE_CHECK_H */
