// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* check: `sluice check-server`, the answer to "may this client make one
 * more request?" for a gateway (nginx auth_request, Envoy ext_authz):
 * the interface's request rules (limit set CIDR --requests) judged per
 * source with the datapath's math (algo.h), 200 or 429 with Retry-After
 * and the RateLimit fields, and a source that keeps going after its 429s
 * banned in XDP (ban_put). Served by libmicrohttpd's thread pool (httpd.c)
 * as an unprivileged user; GET /metrics tells what it answered. */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/un.h>
#include <bpf/bpf.h>
#include "sluice.h"
#include "sluice/algo.h"
#include "cli.h"
#include "httpd.h"
#include "privdrop.h"
#include "prom.h"
#include "hash.h"

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.0.0"
#endif

/* By default a Unix socket that only root and the gateway's group may
 * connect to: on TCP every local process that reaches the port could name
 * any client and have it banned. */
#define SOCKET_DEFAULT		"/run/sluice/check.sock"
#define SOCKET_GROUP_DEFAULT	"www-data"	/* Debian's nginx workers */
#define SOCKET_MODE		0660
#define LISTEN_EXAMPLE		"127.0.0.1:9465"
#define CHECK_THREADS		4
#define HEADER_DEFAULT		"X-Real-IP"
#define HEADER_NAME_MAX		64
#define TRUST_DEFAULT		"127.0.0.0/8,::1/128"
#define TRUST_MAX		32
#define SOURCES_DEFAULT		65536ULL
#define SOURCES_MIN		1ULL
#define SOURCES_MAX		16777216ULL
#define POLICY_POLL_NS		(100ULL * 1000 * 1000)	/* a commit is seen this soon */
#define SWEEP_NS		SLUICE_NS_PER_SEC	/* expired bans, a detached interface */
/* X-Request-ID: nginx runs auth_request again after an internal redirect
 * (index, error_page) with the same $request_id; such a repeat within
 * REPEAT_NS gets the first answer again, uncharged. */
#define REPEAT_SLOTS		4096U
#define REPEAT_NS		(5ULL * SLUICE_NS_PER_SEC)
#define REQUEST_ID_MAX		64
#define NIL			0xffffffffU

static const char metrics_type[] = "text/plain; version=0.0.4; charset=utf-8";

/* How a check was answered: the outcome label of sluice_check_answers_total. */
enum outcome {
	OUT_OK,			/* 200: within a request rule */
	OUT_LIMITED,		/* 429 (403): over it */
	OUT_UNLIMITED,		/* 200: no request rule covers the client */
	OUT_MONITORED,		/* 200: over a --monitor rule */
	OUT_BANNED,		/* 429 (403): banned in XDP by the escalation */
	OUT_BAD_REQUEST,	/* 400: no usable address header */
	OUT_UNTRUSTED,		/* 403: the peer is not in --trust */
	OUT_TABLE_FULL,		/* 429 (403): no room to track a new source */
	OUT_REPEAT,		/* a repeated X-Request-ID, answered as before */
	OUT_MAX,
};
static const char *const outcome_names[OUT_MAX] = {
	"ok", "limited", "unlimited", "monitored", "banned", "bad_request", "untrusted",
	"table_full", "repeat",
};

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

/* An entry of the source table: a bucket (a source masked to its rule's
 * key length, keyed with the rule's index, as the datapath keys buckets),
 * or, for a rule whose buckets are wider than one address, one address's
 * streak of rejected requests (the escalation counts per address). */
enum { KIND_BUCKET, KIND_STREAK };
struct check_key {
	struct sluice_src_key src;
	__u32 kind;
};
struct check_entry {
	struct check_key key;
	__u64 state;			/* the algorithm's word (bucket) */
	__u64 idle_at;			/* from then on it holds nothing worth keeping */
	__u32 rejected;			/* requests rejected in a row */
	__u32 hnext;			/* hash chain */
	__u32 prev, next;		/* LRU list, or the free list (next) */
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
	struct cidr trust[TRUST_MAX];
	unsigned int ntrust;
	__u64 seed;
	/* Everything below, and the policy, under lock. */
	pthread_mutex_t lock;
	struct check_policy *pol;
	struct check_entry *e;
	__u32 cap, used, free_head;
	__u32 *heads;
	__u32 hmask;
	__u32 lru_head, lru_tail;	/* most and least recently used */
	__u64 no_idle_until;		/* none of the full table is idle before then */
	struct repeat_slot *repeats;
	/* Atomic counters. */
	__u64 answers[OUT_MAX];
	__u64 ban_failures;		/* ban_put refused: the ban table is full */
	struct rule_counts counts[SLUICE_MAX_POLICIES];
};

/* --- small helpers --- */

static __u64 div_up(__u64 a, __u64 b)
{
	return a / b + (a % b ? 1 : 0);
}

static __u64 ns_to_s_up(__u64 ns)
{
	return div_up(ns, SLUICE_NS_PER_SEC);
}

/* Whether the first plen bits of a and b agree. */
static bool prefix_match(const __u8 *a, const __u8 *b, __u32 plen)
{
	__u32 full = plen / 8, rest = plen % 8;

	if (memcmp(a, b, full) != 0)
		return false;
	return !rest || !((a[full] ^ b[full]) & (0xff << (8 - rest)));
}

static bool cidr_has(const struct cidr *c, __u8 family, const __u8 *addr)
{
	return cidr_family(c) == family && prefix_match(c->addr.a, addr, c->prefixlen);
}

/* The bits of the 128-bit form a rule's buckets keep (the datapath's key_len). */
static __u32 rule_key_bits(const struct rule *r)
{
	if (r->per == SLUICE_PER_RULE)
		return r->cidr.prefixlen;
	if (r->per == SLUICE_PER_PREFIX)
		return (cidr_family(&r->cidr) == SLUICE_FAMILY_V4 ? SLUICE_V4_MAPPED_PREFIX : 0) +
		       r->per_len;
	return SLUICE_KEY_LEN_SOURCE;
}

static void count(__u64 *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

/* --- the policy: the interface's request rules --- */

/* Adds request rule r to out at its table index, kept longest prefix
 * first (the first rule covering a source decides); any other rule is
 * left out. */
static void policy_add(struct check_policy *out, const struct rule *r)
{
	struct check_rule *c;
	unsigned int j;

	if (!rule_is_request(r) || r->action != SLUICE_ACT_LIMIT ||
	    r->index >= SLUICE_MAX_POLICIES)
		return;
	c = &out->rules[r->index];
	c->in_use = true;
	c->cidr = r->cidr;
	c->family = cidr_family(&r->cidr);
	c->key_len = rule_key_bits(r);
	rule_limit(r, &c->l);
	c->l.ban = 0;
	c->monitor = r->monitor;
	c->ban_ns = r->ban_ns;
	c->ban_after = r->ban_after;
	rule_cidr_str(r, c->name, sizeof(c->name));
	c->quota = limit_capacity(&c->l);
	if (r->algo == SLUICE_ALGO_TOKEN_BUCKET) {	/* empty to full: burst x period / rate */
		unsigned __int128 t = (unsigned __int128)r->burst * (r->period ? r->period : 1);

		c->window_s = (__u64)(t / r->rate + (t % r->rate ? 1 : 0));
	} else {
		c->window_s = ns_to_s_up(r->window_ns);
	}
	j = out->n++;
	for (; j && out->rules[out->order[j - 1]].cidr.prefixlen < r->cidr.prefixlen; j--)
		out->order[j] = out->order[j - 1];
	out->order[j] = r->index;
}

/* The request rules of the live policy into *out; 0, or the exit code
 * (policy_read said why). */
static int policy_load(const struct sluice_maps *m, struct check_policy *out)
{
	struct policy *p = malloc(sizeof(*p));
	struct sluice_config cfg;
	int err;

	memset(out, 0, sizeof(*out));
	if (!p)
		return runtime_err("out of memory");
	live_config(m, &cfg);
	out->gen = SLUICE_GEN(cfg.gen_slot);
	err = policy_read(m, p);
	if (!err)
		for (unsigned int i = 0; i < p->n; i++)
			policy_add(out, &p->rules[i]);
	free(p);
	return err;
}

/* The most specific request rule covering src, or NULL. */
static const struct check_rule *rule_for(const struct check_policy *p,
					 const struct sluice_src_key *src, __u32 *idx)
{
	for (unsigned int i = 0; i < p->n; i++) {
		const struct check_rule *r = &p->rules[p->order[i]];

		if (cidr_has(&r->cidr, src->family, src->a)) {
			*idx = p->order[i];
			return r;
		}
	}
	return NULL;
}

static bool same_limit(const struct sluice_limit *a, const struct sluice_limit *b)
{
	return a->algo == b->algo && a->interval == b->interval && a->tolerance == b->tolerance &&
	       a->bits == b->bits && a->ban_windows == b->ban_windows;
}

/* --- the source table --- */

static __u32 key_hash(const struct check_server *s, const struct check_key *k)
{
	return (__u32)hash_bytes(s->seed, k, sizeof(*k)) & s->hmask;
}

static void lru_unlink(struct check_server *s, __u32 i)
{
	struct check_entry *e = &s->e[i];

	if (e->prev != NIL)
		s->e[e->prev].next = e->next;
	else
		s->lru_head = e->next;
	if (e->next != NIL)
		s->e[e->next].prev = e->prev;
	else
		s->lru_tail = e->prev;
}

static void lru_push(struct check_server *s, __u32 i)
{
	struct check_entry *e = &s->e[i];

	e->prev = NIL;
	e->next = s->lru_head;
	if (s->lru_head != NIL)
		s->e[s->lru_head].prev = i;
	else
		s->lru_tail = i;
	s->lru_head = i;
}

static __u32 lookup(const struct check_server *s, const struct check_key *k)
{
	for (__u32 i = s->heads[key_hash(s, k)]; i != NIL; i = s->e[i].hnext)
		if (!memcmp(&s->e[i].key, k, sizeof(*k)))
			return i;
	return NIL;
}

/* Takes entry i out of the table, onto the free list. */
static void release(struct check_server *s, __u32 i)
{
	__u32 *pp = &s->heads[key_hash(s, &s->e[i].key)];

	while (*pp != i)
		pp = &s->e[*pp].hnext;
	*pp = s->e[i].hnext;
	lru_unlink(s, i);
	s->e[i].next = s->free_head;
	s->free_head = i;
	s->used--;
}

/* An entry for a new key: a free one, or the least recently used idle one
 * (walked from the LRU end; when none is idle, none will be before the
 * earliest idle_at seen, and no walk is made until then). NIL when the
 * table is full of live entries. */
static __u32 claim(struct check_server *s, const struct check_key *k, __u64 now)
{
	__u64 soonest = SLUICE_U64_MAX;
	__u32 i = NIL, h;

	if (s->free_head == NIL) {
		if (now < s->no_idle_until)
			return NIL;
		for (__u32 j = s->lru_tail; j != NIL; j = s->e[j].prev) {
			if (s->e[j].idle_at <= now) {
				i = j;
				break;
			}
			if (s->e[j].idle_at < soonest)
				soonest = s->e[j].idle_at;
		}
		if (i == NIL) {
			s->no_idle_until = soonest;
			return NIL;
		}
		release(s, i);
	}
	i = s->free_head;
	s->free_head = s->e[i].next;
	s->used++;
	memset(&s->e[i], 0, sizeof(s->e[i]));
	s->e[i].key = *k;
	h = key_hash(s, k);
	s->e[i].hnext = s->heads[h];
	s->heads[h] = i;
	lru_push(s, i);
	return i;
}

/* The entry of k, made (empty) if there was none; NIL when the table is full. */
static __u32 entry_get(struct check_server *s, const struct check_key *k, __u64 now)
{
	__u32 i = lookup(s, k);

	if (i == NIL)
		return claim(s, k, now);
	lru_unlink(s, i);
	lru_push(s, i);
	return i;
}

/* When a bucket in state st holds nothing worth keeping: it is full again. */
static __u64 idle_time(const struct sluice_limit *l, __u64 st, __u64 now)
{
	__u64 wait = limit_wait(l, st, now, limit_capacity(l));

	return wait > SLUICE_U64_MAX - now ? SLUICE_U64_MAX : now + wait;
}

/* The new policy's rules for the table: a deleted rule's entries go, a
 * changed limit carries its buckets over (limit_rebind, as the datapath
 * does), a rule whose buckets are keyed otherwise starts afresh. */
static void policy_apply(struct check_server *s, struct check_policy *np, __u64 now)
{
	const struct check_policy *op = s->pol;

	for (__u32 idx = 0; idx < SLUICE_MAX_POLICIES; idx++) {
		const struct check_rule *o = &op->rules[idx], *n = &np->rules[idx];

		if (o->in_use && (!n->in_use || memcmp(&o->cidr, &n->cidr, sizeof(o->cidr)) != 0)) {
			__atomic_store_n(&s->counts[idx].pass, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&s->counts[idx].limited, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&s->counts[idx].bans, 0, __ATOMIC_RELAXED);
		}
	}
	for (__u32 i = s->lru_head, next; i != NIL; i = next) {
		struct check_entry *e = &s->e[i];
		__u32 idx = e->key.src.policy;
		const struct check_rule *o = &op->rules[idx], *n = &np->rules[idx];

		next = e->next;
		if (!n->in_use || memcmp(&o->cidr, &n->cidr, sizeof(o->cidr)) != 0 ||
		    o->key_len != n->key_len) {
			release(s, i);
			continue;
		}
		if (e->key.kind != KIND_BUCKET || same_limit(&o->l, &n->l))
			continue;
		e->state = limit_rebind(e->state, now, 1, SLUICE_ACT_LIMIT, &o->l,
					SLUICE_ACT_LIMIT, &n->l);
		e->idle_at = idle_time(&n->l, e->state, now);
	}
	s->no_idle_until = 0;
	s->pol = np;
}

/* --- answering a check --- */

static void answer_fields(struct answer *a, const struct check_rule *r, __u64 st, __u64 now)
{
	__u64 reset;

	a->fields = true;
	snprintf(a->name, sizeof(a->name), "%s", r->name);
	a->quota = r->quota;
	a->window_s = r->window_s;
	a->remaining = limit_available(&r->l, st, now);
	if (r->l.algo == SLUICE_ALGO_TOKEN_BUCKET)	/* until it is full again */
		reset = limit_wait(&r->l, st, now, limit_capacity(&r->l));
	else						/* until the window ends */
		reset = r->l.interval - now % r->l.interval;
	a->reset_s = ns_to_s_up(reset);
}

/* Judges one request of src by rule r (table index idx), under the lock:
 * its bucket, the escalation, the answer. */
static void judge(struct check_server *s, const struct check_rule *r, __u32 idx,
		  const struct sluice_src_key *src, bool status403, __u64 now, struct answer *a)
{
	struct check_key k = { .kind = KIND_BUCKET };
	struct check_entry *b, *streak;
	__u32 bi, si;
	__u64 st, next = 0, wait;
	int verdict, err;

	source_key_mask(src, r->key_len, (__u16)idx, &k.src);
	bi = entry_get(s, &k, now);
	if (bi == NIL) {	/* fail closed: nothing more can be tracked */
		a->status = status403 ? MHD_HTTP_FORBIDDEN : MHD_HTTP_TOO_MANY_REQUESTS;
		a->outcome = OUT_TABLE_FULL;
		a->retry_s = 1;
		return;
	}
	b = &s->e[bi];
	st = b->state;
#ifdef SLUICE_CHECK_RACY
	/* The deliberately racy build (tests/check/concurrency.sh): the
	 * bucket is read, judged and written back with the lock let go in
	 * between, so concurrent checks of one source admit too many. */
	pthread_mutex_unlock(&s->lock);
	verdict = limit_judge(&r->l, st, now, 1, &next);
	usleep(200);
	pthread_mutex_lock(&s->lock);
	b = &s->e[bi];
#else
	verdict = limit_judge(&r->l, st, now, 1, &next);
#endif
	if (verdict == SLUICE_JUDGE_ADMITTED)
		b->state = st = next;
	b->idle_at = idle_time(&r->l, b->state, now);
	answer_fields(a, r, b->state, now);

	/* The address's streak: in its bucket when the bucket is its own. */
	k.kind = KIND_STREAK;
	k.src = *src;
	k.src.policy = (__u16)idx;
	streak = b;
	if (r->key_len < SLUICE_KEY_LEN_SOURCE) {
		si = verdict == SLUICE_JUDGE_ADMITTED || r->monitor || !r->ban_ns ?
			     lookup(s, &k) : entry_get(s, &k, now);
		streak = si == NIL ? NULL : &s->e[si];
		b = &s->e[bi];
	}

	if (verdict == SLUICE_JUDGE_ADMITTED) {
		count(&s->counts[idx].pass);
		a->status = MHD_HTTP_OK;
		a->outcome = OUT_OK;
		if (streak)
			streak->rejected = 0;
		if (streak && streak != b) {
			streak->idle_at = now;
			s->no_idle_until = 0;	/* it may be claimed now */
		}
		return;
	}
	count(&s->counts[idx].limited);
	if (r->monitor) {
		a->status = MHD_HTTP_OK;
		a->outcome = OUT_MONITORED;
		return;
	}
	wait = limit_wait(&r->l, st, now, 1);
	a->status = status403 ? MHD_HTTP_FORBIDDEN : MHD_HTTP_TOO_MANY_REQUESTS;
	a->outcome = OUT_LIMITED;
	a->retry_s = wait == SLUICE_U64_MAX ? 0 : ns_to_s_up(wait);
	if (a->retry_s < 1)
		a->retry_s = 1;
	if (!r->ban_ns || !streak)
		return;
	if (streak != b)
		streak->idle_at = b->idle_at;
	if (++streak->rejected <= r->ban_after)
		return;
	/* Kept on after ban_after rejections in a row: banned in XDP. */
	streak->rejected = 0;
	err = ban_put(&s->bans, src, idx, now + r->ban_ns);
	if (!err) {
		count(&s->counts[idx].bans);
		a->retry_s = ns_to_s_up(r->ban_ns);
	} else if (!__atomic_fetch_add(&s->ban_failures, 1, __ATOMIC_RELAXED)) {
		/* counted, and said once: the client stays unbanned */
		err_msg("cannot ban a client in XDP: %s (the ban table holds %u; "
			"sluice_check_escalation_ban_failures_total counts every failure)",
			strerror(-err), SLUICE_MAX_BANS);
	}
}

static __u32 repeat_slot(const struct check_server *s, const char *id,
			 const struct sluice_src_key *src)
{
	return (__u32)(hash_bytes(hash_bytes(s->seed, src, sizeof(*src)), id, strlen(id)) &
		       (REPEAT_SLOTS - 1));
}

/* The whole check of src, under the lock. */
static void check_source(struct check_server *s, const struct sluice_src_key *src,
			 const char *id, bool status403, __u64 ban_left, struct answer *a)
{
	struct repeat_slot *rs = NULL;
	const struct check_rule *r;
	__u64 now;
	__u32 idx;

	pthread_mutex_lock(&s->lock);
	now = mono_now_ns();
	if (id) {
		rs = &s->repeats[repeat_slot(s, id, src)];
		if (rs->at && now - rs->at < REPEAT_NS && !strcmp(rs->id, id) &&
		    !memcmp(&rs->src, src, sizeof(*src))) {
			*a = rs->a;
			a->outcome = OUT_REPEAT;
			pthread_mutex_unlock(&s->lock);
			return;
		}
	}
	if (ban_left) {
		a->status = status403 ? MHD_HTTP_FORBIDDEN : MHD_HTTP_TOO_MANY_REQUESTS;
		a->outcome = OUT_BANNED;
		a->retry_s = ns_to_s_up(ban_left);
	} else if (!(r = rule_for(s->pol, src, &idx))) {
		a->status = MHD_HTTP_OK;
		a->outcome = OUT_UNLIMITED;
	} else {
		judge(s, r, idx, src, status403, now, a);
	}
	if (rs) {
		snprintf(rs->id, sizeof(rs->id), "%s", id);
		rs->src = *src;
		rs->at = now;
		rs->a = *a;
	}
	pthread_mutex_unlock(&s->lock);
}

/* ns left of src's ban in XDP, 0 when it has none. */
static __u64 ban_left(const struct check_server *s, const struct sluice_src_key *src)
{
	struct sluice_ban b;
	__u64 now;

	/* The datapath's gate too: no lookup while the table has no live ban. */
	if (!(__atomic_load_n(&s->bans.cfg->bans, __ATOMIC_ACQUIRE) & SLUICE_BANS_LIVE) ||
	    bpf_map_lookup_elem(s->bans.fd, src, &b))
		return 0;
	now = mono_now_ns();
	return b.until_ns > now ? b.until_ns - now : 0;
}

struct header_count {
	const char *name;
	const char *value;
	unsigned int n;
};

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	struct header_count *h = cls;

	(void)kind;
	if (!strcasecmp(key, h->name)) {
		h->n++;
		h->value = value;
	}
	return MHD_YES;
}

/* The one value of header name, or NULL when it is missing or repeated. */
static const char *one_header(struct MHD_Connection *conn, const char *name)
{
	struct header_count h = { .name = name };

	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_header, &h);
	return h.n == 1 ? h.value : NULL;
}

/* An X-Request-ID worth remembering: 1..REQUEST_ID_MAX visible characters. */
static const char *request_id(struct MHD_Connection *conn)
{
	const char *id = one_header(conn, "X-Request-ID");
	size_t n;

	if (!id)
		return NULL;
	for (n = 0; id[n]; n++)
		if (id[n] <= ' ' || id[n] >= 127 || n >= REQUEST_ID_MAX)
			return NULL;
	return n ? id : NULL;
}

/* On the Unix socket every peer is: its permissions let only root and
 * the gateway's group connect. */
static bool trusted(const struct check_server *s, const struct in6_addr *peer)
{
	static const __u8 mapped[12] = { [10] = 0xff, [11] = 0xff };
	__u8 family = memcmp(peer->s6_addr, mapped, sizeof(mapped)) ? SLUICE_FAMILY_V6
								    : SLUICE_FAMILY_V4;

	if (s->http.local)
		return true;
	for (unsigned int i = 0; i < s->ntrust; i++)
		if (cidr_has(&s->trust[i], family, peer->s6_addr))
			return true;
	return false;
}

/* The --trust peers are the gateways (httpd.h): many connections each. */
static bool gateway_peer(void *cls, const struct in6_addr *peer)
{
	return trusted(cls, peer);
}

static enum MHD_Result reply_answer(struct MHD_Connection *conn, const struct answer *a)
{
	char policy[SLUICE_CIDR_STR_MAX + 64], limit[SLUICE_CIDR_STR_MAX + 64], retry[24];
	char body[160];
	const char *extra[8];
	int n = 0;

	if (a->fields) {
		snprintf(policy, sizeof(policy), "\"%s\";q=%llu;w=%llu", a->name,
			 (unsigned long long)a->quota, (unsigned long long)a->window_s);
		snprintf(limit, sizeof(limit), "\"%s\";r=%llu;t=%llu", a->name,
			 (unsigned long long)a->remaining, (unsigned long long)a->reset_s);
		extra[n++] = "RateLimit-Policy";
		extra[n++] = policy;
		extra[n++] = "RateLimit";
		extra[n++] = limit;
	}
	if (a->retry_s) {
		snprintf(retry, sizeof(retry), "%llu", (unsigned long long)a->retry_s);
		extra[n++] = MHD_HTTP_HEADER_RETRY_AFTER;
		extra[n++] = retry;
	}
	extra[n] = NULL;
	if (a->status == MHD_HTTP_OK)
		snprintf(body, sizeof(body), "200 ok%s\n",
			 a->outcome == OUT_UNLIMITED ? ": no request rule covers this client" :
			 a->outcome == OUT_MONITORED ? ": over a --monitor rule" : "");
	else if (a->outcome == OUT_TABLE_FULL)
		snprintf(body, sizeof(body), "%u too many sources tracked: retry after %llu s\n",
			 a->status, (unsigned long long)a->retry_s);
	else
		snprintf(body, sizeof(body), "%u %s: retry after %llu s\n", a->status,
			 a->outcome == OUT_BANNED ? "banned" : "too many requests",
			 (unsigned long long)a->retry_s);
	return httpd_reply(conn, a->status, "text/plain; charset=utf-8", body, strlen(body),
			   MHD_RESPMEM_MUST_COPY, extra);
}

/* GET /check: the client named by the address header, from a trusted peer. */
static enum MHD_Result serve_check(struct check_server *s, struct MHD_Connection *conn)
{
	const char *mode = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "status");
	struct answer a = { 0 };
	struct sluice_src_key src;
	struct in6_addr peer;
	const char *addr;
	char msg[192];

	httpd_peer(conn, &peer);
	if (!trusted(s, &peer)) {
		count(&s->answers[OUT_UNTRUSTED]);
		return httpd_reply_text(conn, MHD_HTTP_FORBIDDEN,
					"403 forbidden: this peer is not in the check server's "
					"--trust; nothing was charged\n", NULL);
	}
	if (mode && strcmp(mode, "403") != 0 && strcmp(mode, "429") != 0) {
		count(&s->answers[OUT_BAD_REQUEST]);
		return httpd_reply_text(conn, MHD_HTTP_BAD_REQUEST,
					"400 bad request: status= takes 403 or 429\n", NULL);
	}
	addr = one_header(conn, s->header);
	if (!addr || parse_source(addr, &src)) {
		count(&s->answers[OUT_BAD_REQUEST]);
		snprintf(msg, sizeof(msg), "400 bad request: %s must hold exactly one IPv4 or "
			 "IPv6 address\n", s->header);
		return httpd_reply(conn, MHD_HTTP_BAD_REQUEST, "text/plain; charset=utf-8", msg,
				   strlen(msg), MHD_RESPMEM_MUST_COPY, NULL);
	}
	check_source(s, &src, request_id(conn), mode && !strcmp(mode, "403"), ban_left(s, &src),
		     &a);
	count(&s->answers[a.outcome]);
	return reply_answer(conn, &a);
}

/* The /metrics page, malloc()ed; NULL when out of memory. */
static char *render_metrics(struct check_server *s, size_t *len)
{
	const char *ifc = s->m.iface;
	struct check_policy *p;
	char *body = NULL;
	__u32 tracked;
	FILE *f = open_memstream(&body, len);
	int err;

	if (!f)
		return NULL;
	prom_family(f, "sluice_build_info", "gauge", "Version of the sluice check server; always 1.");
	fputs("sluice_build_info{", f);
	prom_label(f, "version", SLUICE_VERSION, true);
	fputs("} 1\n", f);
	prom_family(f, "sluice_check_answers_total", "counter",
		    "Checks answered by the check server, by outcome.");
	for (int o = 0; o < OUT_MAX; o++) {
		fputs("sluice_check_answers_total{", f);
		prom_label(f, "interface", ifc, false);
		prom_label(f, "outcome", outcome_names[o], true);
		fprintf(f, "} %llu\n",
			(unsigned long long)__atomic_load_n(&s->answers[o], __ATOMIC_RELAXED));
	}
	/* The rules as they are now; a rule's counts start again with it. */
	p = malloc(sizeof(*p));
	if (p) {
		pthread_mutex_lock(&s->lock);
		memcpy(p, s->pol, sizeof(*p));
		tracked = s->used;
		pthread_mutex_unlock(&s->lock);
		prom_family(f, "sluice_check_requests_total", "counter",
			    "Requests judged by each request rule, by verdict (a --monitor rule's "
			    "limited ones were answered 200).");
		for (unsigned int i = 0; i < p->n; i++) {
			const struct rule_counts *c = &s->counts[p->order[i]];

			for (int v = 0; v < 2; v++) {
				fputs("sluice_check_requests_total{", f);
				prom_label(f, "interface", ifc, false);
				prom_label(f, "rule", p->rules[p->order[i]].name, false);
				prom_label(f, "verdict", v ? "limited" : "pass", true);
				fprintf(f, "} %llu\n", (unsigned long long)__atomic_load_n(
					v ? &c->limited : &c->pass, __ATOMIC_RELAXED));
			}
		}
		prom_family(f, "sluice_check_escalation_bans_total", "counter",
			    "Sources each request rule banned in XDP for ignoring their 429s.");
		for (unsigned int i = 0; i < p->n; i++) {
			fputs("sluice_check_escalation_bans_total{", f);
			prom_label(f, "interface", ifc, false);
			prom_label(f, "rule", p->rules[p->order[i]].name, true);
			fprintf(f, "} %llu\n", (unsigned long long)__atomic_load_n(
				&s->counts[p->order[i]].bans, __ATOMIC_RELAXED));
		}
		prom_family(f, "sluice_check_escalation_ban_failures_total", "counter",
			    "Bans the check server could not put in XDP (the ban table was full).");
		fputs("sluice_check_escalation_ban_failures_total{", f);
		prom_label(f, "interface", ifc, true);
		fprintf(f, "} %llu\n", (unsigned long long)__atomic_load_n(&s->ban_failures,
									 __ATOMIC_RELAXED));
		prom_family(f, "sluice_check_tracked_sources", "gauge",
			    "Entries of the check server's source table in use.");
		fputs("sluice_check_tracked_sources{", f);
		prom_label(f, "interface", ifc, true);
		fprintf(f, "} %u\n", tracked);
		prom_family(f, "sluice_check_tracked_sources_capacity", "gauge",
			    "Size of the check server's source table (--max-sources).");
		fputs("sluice_check_tracked_sources_capacity{", f);
		prom_label(f, "interface", ifc, true);
		fprintf(f, "} %u\n", s->cap);
		free(p);
	}
	err = ferror(f);
	if (fclose(f) || err || !p) {
		free(body);
		return NULL;
	}
	return body;
}

static enum MHD_Result serve_metrics(struct check_server *s, struct MHD_Connection *conn)
{
	size_t len = 0;
	char *body = render_metrics(s, &len);

	return httpd_reply_page(conn, metrics_type, body, len);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url)
{
	if (!strcmp(url, "/check"))
		return serve_check(cls, conn);
	if (!strcmp(url, "/metrics"))
		return serve_metrics(cls, conn);
	return httpd_reply_text(conn, MHD_HTTP_NOT_FOUND,
				"404 not found: checks are at /check, metrics at /metrics\n", NULL);
}

/* --- the command --- */

/* Positions in check_opts. */
enum { CO_LISTEN, CO_USER, CO_GROUP, CO_SOCKET, CO_SOCKET_GROUP, CO_HEADER, CO_TRUST,
       CO_SOURCES };

static const struct cli_opt check_opts[] = {
	/* HTTPD_OPTS, but --listen is no default here. */
	[CO_LISTEN] = CLI_OPT("listen", 0, "ADDR:PORT",
			      "serve on TCP instead, e.g. " LISTEN_EXAMPLE " (every process that "
			      "reaches it from a --trust address may ask)", 0, NULL),
	[CO_USER] = CLI_OPT("user", 0, "USER", "run as USER once listening (default "
			    RUN_AS_USER_DEFAULT ")", 0, NULL),
	[CO_GROUP] = CLI_OPT("group", 0, "GROUP", "in GROUP, the pins' group (default "
			     RUN_AS_GROUP_DEFAULT ")", 0, NULL),
	[CO_SOCKET] = CLI_OPT("socket", 0, "PATH",
			      "the Unix socket to serve on (default " SOCKET_DEFAULT ")", 0, NULL),
	[CO_SOCKET_GROUP] = CLI_OPT("socket-group", 0, "GROUP",
				    "the gateway's group, the only one that may connect (default "
				    SOCKET_GROUP_DEFAULT ")", 0, NULL),
	[CO_HEADER] = CLI_OPT("address-header", 0, "NAME",
			      "the header naming the client's address (default " HEADER_DEFAULT ")",
			      0, NULL),
	[CO_TRUST] = CLI_OPT("trust", 0, "CIDR[,CIDR...]",
			     "with --listen, peers that may ask (default " TRUST_DEFAULT ")", 0,
			     NULL),
	[CO_SOURCES] = CLI_OPT("max-sources", 0, "N",
			       "sources (and streaks) tracked at most (default 65536)", 0, NULL),
	CLI_OPT_END,
};

static int parse_trust(const char *spec, struct check_server *s)
{
	char buf[1024], why[160];
	char *rest = buf, *tok;

	if (strlen(spec) >= sizeof(buf))
		return usage_err("bad --trust: too long: at most %u CIDRs", TRUST_MAX);
	snprintf(buf, sizeof(buf), "%s", spec);
	s->ntrust = 0;
	while ((tok = strsep(&rest, ","))) {
		if (!*tok)
			return usage_err("bad --trust '%s': give CIDR[,CIDR...], e.g. %s", spec,
					 TRUST_DEFAULT);
		if (s->ntrust == TRUST_MAX)
			return usage_err("bad --trust: at most %u CIDRs", TRUST_MAX);
		if (parse_cidr(tok, &s->trust[s->ntrust], why, sizeof(why)))
			return usage_err("bad --trust: %s", why);
		s->ntrust++;
	}
	return 0;
}

static int table_init(struct check_server *s, __u32 cap)
{
	__u32 buckets = 1;

	while (buckets < cap && buckets < (1U << 31))
		buckets <<= 1;
	s->cap = cap;
	s->hmask = buckets - 1;
	s->e = calloc(cap, sizeof(*s->e));
	s->heads = malloc((size_t)buckets * sizeof(*s->heads));
	s->repeats = calloc(REPEAT_SLOTS, sizeof(*s->repeats));
	if (!s->e || !s->heads || !s->repeats)
		return runtime_err("out of memory for %u sources: lower --max-sources", cap);
	memset(s->heads, 0xff, (size_t)buckets * sizeof(*s->heads));
	for (__u32 i = 0; i < cap; i++)
		s->e[i].next = i + 1 < cap ? i + 1 : NIL;
	s->free_head = 0;
	s->lru_head = s->lru_tail = NIL;
	if (getrandom(&s->seed, sizeof(s->seed), 0) != sizeof(s->seed))
		s->seed = mono_now_ns();
	return 0;
}

static void server_free(struct check_server *s)
{
	free(s->e);
	free(s->heads);
	free(s->repeats);
	free(s->pol);
}


/* Until SIGINT or SIGTERM (0), or the interface is detached (EXIT_RUNTIME):
 * a new policy within POLICY_POLL_NS of its commit, expired bans swept. */
static int serve(struct check_server *s, const sigset_t *stop)
{
	const struct timespec poll = { .tv_nsec = (long)POLICY_POLL_NS };
	struct check_policy *np = NULL, *old;
	__u64 last_sweep = mono_now_ns();

	for (;;) {
		__u64 gen = SLUICE_GEN(__atomic_load_n(&s->bans.cfg->gen_slot, __ATOMIC_ACQUIRE));

		if (sigtimedwait(stop, NULL, &poll) >= 0) {
			free(np);
			return 0;
		}
		if (gen != s->pol->gen) {
			np = np ? np : malloc(sizeof(*np));
			if (!np)
				return runtime_err("out of memory");
			if (policy_load(&s->m, np)) {
				free(np);
				np = NULL;
				if (!maps_still_current(&s->m))
					break;
				return runtime_err("cannot read the policy of %s", s->m.iface);
			}
			pthread_mutex_lock(&s->lock);
			old = s->pol;
			policy_apply(s, np, mono_now_ns());
			pthread_mutex_unlock(&s->lock);
			np = old;	/* reused next time */
		}
		if (mono_now_ns() - last_sweep >= SWEEP_NS) {
			last_sweep = mono_now_ns();
			if (!maps_still_current(&s->m))
				break;
			ban_sweep(&s->bans);
		}
	}
	free(np);
	return runtime_err("%s was detached: its request rules and bans are gone; not serving "
			   "stale rules (attach it again, then restart the check server)",
			   s->m.iface);
}

/* Where to serve: --listen (TCP, --trust decides) or the Unix socket
 * (its permissions decide); 0 or EXIT_USAGE after saying why. */
static int check_where(const struct cli_args *a, const char **path, gid_t *gid)
{
	const char *group = a->val[CO_SOCKET_GROUP] ? a->val[CO_SOCKET_GROUP]
						    : SOCKET_GROUP_DEFAULT;
	const struct group *gr;

	*path = a->val[CO_SOCKET] ? a->val[CO_SOCKET] : SOCKET_DEFAULT;
	if (a->val[CO_LISTEN]) {
		if (a->val[CO_SOCKET])
			return usage_err("--listen and --socket together: give one, --socket "
					 "PATH (a Unix socket) or --listen ADDR:PORT (TCP)");
		if (a->val[CO_SOCKET_GROUP])
			return usage_err("--socket-group is for the Unix socket: drop it, "
					 "--listen serves TCP to --trust peers");
		*path = NULL;
		return 0;
	}
	if (a->val[CO_TRUST])
		return usage_err("--trust is for --listen: on the Unix socket its permissions "
				 "decide who may ask (--socket-group)");
	if ((*path)[0] != '/' || strlen(*path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
		return usage_err("bad --socket '%s': give an absolute path of at most %zu "
				 "bytes, e.g. %s", *path,
				 sizeof(((struct sockaddr_un *)0)->sun_path) - 1, SOCKET_DEFAULT);
	gr = getgrnam(group);
	if (!gr)
		return usage_err("no group '%s' for --socket-group: name the group the "
				 "gateway runs in (nginx: its 'user' line), or create it", group);
	*gid = gr->gr_gid;
	return 0;
}

static int check_run(const struct cli_cmd *c, struct cli_args *a)
{
	const char *listen_spec = a->val[CO_LISTEN], *sock_path = NULL;
	const char *user = a->val[CO_USER] ? a->val[CO_USER] : RUN_AS_USER_DEFAULT;
	const char *group = a->val[CO_GROUP] ? a->val[CO_GROUP] : RUN_AS_GROUP_DEFAULT;
	struct check_server *s;
	struct sockaddr_storage ss;
	char bound[HTTPD_ADDR_STR_MAX], privs[160], iface[IF_NAMESIZE];
	__u64 max_sources = SOURCES_DEFAULT;
	struct httpd_unlinker unlinker = { .pid = -1, .fd = -1 };
	struct run_as ra;
	sigset_t stop;
	socklen_t sslen;
	gid_t sock_gid = 0;
	int fd, err;

	(void)c;
	if (opts.json)
		return usage_err("the check server has no JSON output: drop -j");
	if (listen_spec && !httpd_parse_listen(listen_spec, &ss, &sslen))
		return usage_err("bad --listen '%s': give ADDR:PORT, e.g. %s or [::1]:9465",
				 listen_spec, LISTEN_EXAMPLE);
	if (a->val[CO_HEADER] && (!httpd_is_token(a->val[CO_HEADER]) ||
				  strlen(a->val[CO_HEADER]) > HEADER_NAME_MAX))
		return usage_err("bad --address-header '%s': give a header name (letters, digits, "
				 "'-'), e.g. %s", a->val[CO_HEADER], HEADER_DEFAULT);
	if (a->val[CO_SOURCES] &&
	    !parse_u64(a->val[CO_SOURCES], SOURCES_MIN, SOURCES_MAX, &max_sources))
		return usage_err("bad --max-sources '%s': give a whole number from %llu to %llu",
				 a->val[CO_SOURCES], SOURCES_MIN, SOURCES_MAX);
	s = calloc(1, sizeof(*s));
	if (!s)
		return runtime_err("out of memory");
	s->header = a->val[CO_HEADER] ? a->val[CO_HEADER] : HEADER_DEFAULT;
	err = parse_trust(a->val[CO_TRUST] ? a->val[CO_TRUST] : TRUST_DEFAULT, s);
	if (!err)
		err = check_where(a, &sock_path, &sock_gid);
	if (!err)
		err = run_as_lookup(user, group, &ra);
	if (!err)
		err = pick_iface(iface, sizeof(iface));
	if (err) {
		free(s);
		return err;
	}

	/* As root: the maps, the ban writer, the socket; then down to USER for
	 * good. The descriptors keep working, so only the two it writes (the
	 * ban table and the config word that tells the datapath to look at
	 * it) are opened writable; the policy and counters are only read. */
	err = maps_open_writing(iface, &s->m, MAP_BIT(bans) | MAP_BIT(config));
	if (err) {
		free(s);
		return err;
	}
	s->pol = malloc(sizeof(*s->pol));
	if (!s->pol) {
		err = runtime_err("out of memory");
		goto out_maps;
	}
	err = policy_load(&s->m, s->pol);
	if (!err)
		err = table_init(s, (__u32)max_sources);
	if (!err)
		err = ban_writer_open(&s->m, &s->bans);
	if (err)
		goto out_maps;
	if (sock_path) {
		/* Made, owned and handed to the gateway's group as root; the
		 * socket file stays usable by that group once we are USER. */
		fd = httpd_listen_unix(sock_path, sock_gid, SOCKET_MODE, bound, sizeof(bound));
		if (fd >= 0)
			httpd_unlinker_start(&unlinker, sock_path);
	} else {
		fd = httpd_listen(listen_spec, &ss, sslen, LISTEN_EXAMPLE, bound, sizeof(bound));
	}
	if (fd < 0) {
		err = EXIT_RUNTIME;
		goto out_bans;
	}
	err = run_as_switch(&ra, privs, sizeof(privs));
	if (err) {
		close(fd);
		goto out_bans;
	}
	pthread_mutex_init(&s->lock, NULL);
	/* Server threads inherit this mask; only serve() sees the signals. */
	httpd_block_signals(&stop);
	s->http.name = "check-server";
	s->http.not_allowed = "405 method not allowed: checks and metrics are read with GET\n";
	s->http.handler = on_request;
	s->http.gateway = gateway_peer;
	s->http.local = sock_path != NULL;
	s->http.cls = s;
	err = httpd_start(&s->http, fd, CHECK_THREADS, bound);
	if (err)
		goto out_lock;
	httpd_serving(&s->http);
	if (sock_path)
		printf("sluice check-server %s: serving /check on %s (mode %04o, group %s) for %s "
		       "(%u request rule%s; client address from %s; %s)\n", SLUICE_VERSION, bound,
		       SOCKET_MODE, a->val[CO_SOCKET_GROUP] ? a->val[CO_SOCKET_GROUP]
							    : SOCKET_GROUP_DEFAULT,
		       iface, s->pol->n, s->pol->n == 1 ? "" : "s", s->header, privs);
	else
		printf("sluice check-server %s: serving http://%s/check for %s (%u request rule%s; "
		       "client address from %s; %s)\n", SLUICE_VERSION, bound, iface, s->pol->n,
		       s->pol->n == 1 ? "" : "s", s->header, privs);
	fflush(stdout);
	if (!s->pol->n)
		err_msg("warning: %s has no request rules: every check is answered 200 (unlimited) "
			"until 'sluice limit set CIDR --requests N' adds one", iface);
	err = serve(s, &stop);
	httpd_stop(&s->http);
out_lock:
	pthread_mutex_destroy(&s->lock);
out_bans:
	httpd_unlinker_done(&unlinker);
	ban_writer_close(&s->bans);
out_maps:
	maps_close(&s->m);
	server_free(s);
	free(s);
	return err;
}

const struct cli_cmd check_cmd = {
	.name = "check-server", .path = "check-server", .opts = check_opts, .run = check_run,
	.help = "Answers GET /check for a gateway (nginx auth_request): may the client named in\n"
		"the address header make one more request under the interface's request rules\n"
		"(limit set CIDR --requests)? 200 with the RateLimit fields, or 429 (403 with\n"
		"?status=403) with Retry-After; a client that keeps going is banned in XDP\n"
		"(--ban). GET /metrics counts the answers. It serves on a Unix socket that\n"
		"only root and --socket-group may connect to, or with --listen on TCP to the\n"
		"--trust peers. Once listening it runs as USER in GROUP, the pins' group.",
};
