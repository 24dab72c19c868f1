// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* cluster: `sluice cluster join`, the agent that makes --cluster rules hold
 * across every host joined to one Redis, and `sluice cluster status`.
 *
 * Every sync interval S the agent takes the hot notices the datapath queued
 * (buckets its local share rejected), and for each hot bucket reports what
 * the host admitted on its own and asks Redis for a lease of tokens: one
 * pipelined round trip of EVALSHAs (the heartbeat, then one grant per hot
 * bucket), whose grants go into the kernel's lease map in one go. Redis
 * unreachable: the host falls back to limit / N until it answers again. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/random.h>
#include <sys/time.h>
#include <bpf/bpf.h>
#include <hiredis/hiredis.h>
#include "sluice.h"
#include "cli.h"
#include "cluster.h"
#include "cluster_lua.h"
#include "rule.h"
#include "hash.h"

#define REDIS_PORT_DEFAULT	6379
#define REDIS_URL_IN_MAX	100	/* longest URL taken: its canonical form fits the state */
#define REDIS_TIMEOUT_MIN_NS	(5ULL * 1000 * 1000)	/* connect and command timeout, at least */
#define REDIS_KEY_MAX		(RULE_TEXT_MAX + SLUICE_CIDR_STR_MAX + 16)
#define NODES_KEY		"sluice:{nodes}"
#define NODE_TTL_MIN_MS		500ULL
#define ATTACHED_CHECK_NS	SLUICE_NS_PER_SEC	/* a detached interface is seen this soon */
#define NUM_MAX			32	/* a number as a Redis argument */
/* A peer in sluice:{nodes} is NAME#ID, ID random at each agent start: two
 * hosts given one name (cloned images, one --node) still count as two. */
#define PEER_ID_SEP		'#'
#define PEER_MEMBER_MAX		(SLUICE_CLUSTER_NAME_MAX + 1 + 16)

/* --- the parts of the command line --- */

struct redis_url {
	char host[REDIS_URL_IN_MAX];
	int port;
	char text[SLUICE_CLUSTER_URL_MAX];	/* redis://HOST:PORT, as status shows it */
};

/* redis://HOST[:PORT], HOST a name, an IPv4 address or [an IPv6 one]:
 * 0, or a usage error printed. */
static int parse_url(const char *s, struct redis_url *u)
{
	static const char form[] = "give redis://HOST[:PORT], e.g. redis://127.0.0.1:6379";
	const char *h, *end, *p;
	struct in6_addr a6;
	size_t n;
	__u64 port = REDIS_PORT_DEFAULT;
	bool v6 = false;

	memset(u, 0, sizeof(*u));
	if (strlen(s) >= REDIS_URL_IN_MAX)
		return usage_err("bad Redis URL: longer than %u characters: %s", REDIS_URL_IN_MAX - 1,
				 form);
	if (!strncmp(s, "rediss://", 9) || !strncmp(s, "unix://", 7))
		return usage_err("bad Redis URL '%s': only plain TCP is supported: %s", s, form);
	if (strncmp(s, "redis://", 8) != 0)
		return usage_err("bad Redis URL '%s': %s", s, form);
	h = s + 8;
	if (strchr(h, '@'))
		return usage_err("bad Redis URL '%s': the agent has no AUTH (user or password): %s",
				 s, form);
	if (*h == '[') {
		end = strchr(h, ']');
		if (!end)
			return usage_err("bad Redis URL '%s': an IPv6 address ends with ']': %s", s, form);
		n = (size_t)(end - h - 1);
		memcpy(u->host, h + 1, n < sizeof(u->host) ? n : sizeof(u->host) - 1);
		if (inet_pton(AF_INET6, u->host, &a6) != 1)
			return usage_err("bad Redis URL '%s': '%s' is not an IPv6 address: %s", s,
					 u->host, form);
		p = end + 1;
		v6 = true;
	} else {
		if (strchr(strchr(h, ':') ? strchr(h, ':') + 1 : "", ':'))
			return usage_err("bad Redis URL '%s': an IPv6 address goes in brackets: "
					 "redis://[2001:db8::1]:6379", s);
		n = strcspn(h, ":/?#@[]");
		memcpy(u->host, h, n);
		for (size_t i = 0; i < n; i++)
			if (!((h[i] >= 'a' && h[i] <= 'z') || (h[i] >= 'A' && h[i] <= 'Z') ||
			      (h[i] >= '0' && h[i] <= '9') || h[i] == '.' || h[i] == '-'))
				return usage_err("bad Redis URL '%s': '%s' is not a host name: %s", s,
						 u->host, form);
		if (!n)
			return usage_err("bad Redis URL '%s': no host: %s", s, form);
		if (h[0] == '-' || h[0] == '.')
			return usage_err("bad Redis URL '%s': '%s' is not a host name: %s", s,
					 u->host, form);
		p = h + n;
	}
	if (*p == ':') {
		char digits[8] = "";

		n = strspn(p + 1, "0123456789");
		if (n < sizeof(digits))
			memcpy(digits, p + 1, n);
		if (!parse_u64(digits, 1, 65535, &port) || (p[1 + n] && !strchr("/?#", p[1 + n])))
			return usage_err("bad Redis URL '%s': the port must be 1 to 65535: %s", s,
					 form);
		p += 1 + n;
	}
	if (*p)
		return usage_err("bad Redis URL '%s': nothing may follow HOST:PORT (no path, "
				 "database or options): %s", s, form);
	u->port = (int)port;
	snprintf(u->text, sizeof(u->text), "redis://%s%s%s:%d", v6 ? "[" : "", u->host,
		 v6 ? "]" : "", u->port);
	return 0;
}

/* 1 to 63 of [A-Za-z0-9._-]. */
static bool node_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= SLUICE_CLUSTER_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/* --- Redis: one connection, every read bounded by the sync's deadline --- */

struct redis {
	redisContext *c;		/* NULL when not connected */
	struct redis_url url;
	__u64 timeout_ns;		/* S/2, at least REDIS_TIMEOUT_MIN_NS */
	char grant_sha[48], beat_sha[48];
	__u64 *ops;			/* commands sent, counted here */
	char why[160];			/* the last failure */
	bool not_redis;			/* it answered, but not as Redis does */
};

static struct timeval tv_of(__u64 ns)
{
	struct timeval tv = { .tv_sec = (time_t)(ns / SLUICE_NS_PER_SEC),
			      .tv_usec = (suseconds_t)(ns % SLUICE_NS_PER_SEC / 1000) };

	if (!tv.tv_sec && !tv.tv_usec)
		tv.tv_usec = 1;		/* 0 would be no timeout at all */
	return tv;
}

static void redis_close(struct redis *r)
{
	if (r->c)
		redisFree(r->c);
	r->c = NULL;
}

/* Closes the connection (its stream is out of step after any failure)
 * and says why: -1. */
static int redis_fail(struct redis *r, const char *what)
{
	const char *e = r->c && r->c->err ? r->c->errstr : "failed";

	/* A socket timeout (SO_RCVTIMEO) is EAGAIN's text. */
	if (r->c && r->c->err == REDIS_ERR_IO && !strcmp(e, strerror(EAGAIN)))
		snprintf(r->why, sizeof(r->why), "%s: no answer within %llu ms", what,
			 (unsigned long long)(r->timeout_ns / 1000000));
	else
		snprintf(r->why, sizeof(r->why), "%s: %s", what, e);
	if (r->c && r->c->err == REDIS_ERR_PROTOCOL)
		r->not_redis = true;
	redis_close(r);
	return -1;
}

/* What a reply was, for a message: its text, or its kind. */
static void reply_text(const redisReply *rep, char *buf, size_t len)
{
	switch (rep->type) {
	case REDIS_REPLY_ERROR:
		snprintf(buf, len, "-%.100s", rep->str);
		break;
	case REDIS_REPLY_STATUS:
		snprintf(buf, len, "+%.100s", rep->str);
		break;
	case REDIS_REPLY_STRING:
		snprintf(buf, len, "the string '%.100s'", rep->str);
		break;
	case REDIS_REPLY_INTEGER:
		snprintf(buf, len, "the integer %lld", rep->integer);
		break;
	case REDIS_REPLY_ARRAY:
		snprintf(buf, len, "an array of %zu", rep->elements);
		break;
	default:
		snprintf(buf, len, "nil");
		break;
	}
}

/* The next reply, complete by deadline (CLOCK_MONOTONIC): 0, or -1 with
 * the connection closed. The deadline is checked before every read and
 * write, not once per reply: a reply that trickles in, a byte within each
 * wait, would otherwise end past it (redisGetReply loops on one timeout). */
static int redis_reply(struct redis *r, __u64 deadline, redisReply **out)
{
	void *rep = NULL;
	int done = 0;
	__u64 now;

	*out = NULL;
	for (;;) {
		if (redisGetReplyFromReader(r->c, &rep) != REDIS_OK)
			return redis_fail(r, "reading");
		if (rep)
			break;
		now = mono_now_ns();
		if (now >= deadline) {
			snprintf(r->why, sizeof(r->why), "no complete answer within %llu ms",
				 (unsigned long long)(r->timeout_ns / 1000000));
			redis_close(r);
			return -1;
		}
		if (redisSetTimeout(r->c, tv_of(deadline - now)) != REDIS_OK)
			return redis_fail(r, "reading");
		if (!done) {
			/* What is still buffered of the commands goes first. */
			if (redisBufferWrite(r->c, &done) != REDIS_OK)
				return redis_fail(r, "sending");
			continue;
		}
		if (redisBufferRead(r->c) != REDIS_OK)
			return redis_fail(r, "reading");
	}
	*out = rep;
	return 0;
}

static int redis_append(struct redis *r, int argc, const char **argv)
{
	if (redisAppendCommandArgv(r->c, argc, argv, NULL) != REDIS_OK)
		return redis_fail(r, "sending");
	(*r->ops)++;
	return 0;
}

/* One command and its reply, within deadline. */
static int redis_call(struct redis *r, __u64 deadline, int argc, const char **argv,
		      redisReply **out)
{
	if (redis_append(r, argc, argv))
		return -1;
	return redis_reply(r, deadline, out);
}

/* SCRIPT LOAD of one script into sha: 0, or -1 (why said). */
static int load_script(struct redis *r, __u64 deadline, const char *src, char *sha, size_t len)
{
	const char *argv[] = { "SCRIPT", "LOAD", src };
	char what[128];
	redisReply *rep;

	if (redis_call(r, deadline, 3, argv, &rep))
		return -1;
	if (rep->type != REDIS_REPLY_STRING || rep->len >= len) {
		reply_text(rep, what, sizeof(what));
		snprintf(r->why, sizeof(r->why), "SCRIPT LOAD answered %s", what);
		r->not_redis = true;
		freeReplyObject(rep);
		redis_close(r);
		return -1;
	}
	memcpy(sha, rep->str, rep->len + 1);
	freeReplyObject(rep);
	return 0;
}

static int load_scripts(struct redis *r, __u64 deadline)
{
	if (load_script(r, deadline, CLUSTER_LUA_GRANT, r->grant_sha, sizeof(r->grant_sha)) ||
	    load_script(r, deadline, CLUSTER_LUA_HEARTBEAT, r->beat_sha, sizeof(r->beat_sha)))
		return -1;
	return 0;
}

/* Connects, checks that it is Redis (PING answers +PONG) and loads the
 * scripts, all by deadline: 0, or -1 with why (and not_redis when
 * something answered, but not as Redis). */
static int redis_connect(struct redis *r, __u64 deadline)
{
	const char *ping[] = { "PING" };
	__u64 now = mono_now_ns();
	char what[128];
	redisReply *rep;

	redis_close(r);
	r->not_redis = false;
	r->c = redisConnectWithTimeout(r->url.host, r->url.port,
				       tv_of(deadline > now ? deadline - now : 0));
	if (!r->c) {
		snprintf(r->why, sizeof(r->why), "out of memory");
		return -1;
	}
	if (r->c->err)
		return redis_fail(r, "connecting");
	if (redis_call(r, deadline, 1, ping, &rep))
		return -1;
	if (rep->type != REDIS_REPLY_STATUS || strcmp(rep->str, "PONG") != 0) {
		reply_text(rep, what, sizeof(what));
		snprintf(r->why, sizeof(r->why), "PING answered %s, not +PONG", what);
		r->not_redis = true;
		freeReplyObject(rep);
		redis_close(r);
		return -1;
	}
	freeReplyObject(rep);
	return load_scripts(r, deadline);
}

/* --- the hot set: buckets whose local share rejected packets --- */

struct hot {
	struct sluice_src_key key;
	__u32 policy;			/* the rule's index in the policy table */
	char rkey[REDIS_KEY_MAX];	/* sluice:{RULE|SOURCE} */
	double t_us, tau_us;		/* the rule's emission interval and tolerance */
	__u64 cap;			/* the most one sync asks for: B + R x S */
	__u32 last_passed, last_dropped;	/* the bucket's counters at the last read */
	__u64 last_ns;			/* when they were read */
	__u64 passed;			/* passed since it became hot */
	__u64 lease_done;		/* units spent of leases since replaced */
	__u64 lease_seen;		/* units spent as of the last read */
	__u64 charged;			/* local spend reported to Redis */
	__u64 credit;			/* the credit last granted */
	__u64 charge, want, grant;	/* this sync's */
	__u32 idle;			/* syncs in a row without a drop or a lease spend */
	bool fresh;			/* found by this sync */
	bool ask;			/* asks Redis this sync */
	bool release;			/* leaves the hot set after this sync */
};

struct hot_set {
	struct hot *e;			/* SLUICE_CLUSTER_HOT_MAX */
	unsigned int n;
	__s32 *index;			/* hash of e by key: HOT_SLOTS, -1 empty */
	bool full_said;
};
#define HOT_SLOTS	(2 * SLUICE_CLUSTER_HOT_MAX)	/* a power of two */

static __u32 hot_hash(const struct sluice_src_key *k, __u32 policy)
{
	return (__u32)hash_bytes(policy, k, sizeof(*k)) & (HOT_SLOTS - 1);
}

static void hot_reindex(struct hot_set *hs)
{
	memset(hs->index, 0xff, HOT_SLOTS * sizeof(*hs->index));
	for (unsigned int i = 0; i < hs->n; i++) {
		__u32 s = hot_hash(&hs->e[i].key, hs->e[i].policy);

		while (hs->index[s] >= 0)
			s = (s + 1) & (HOT_SLOTS - 1);
		hs->index[s] = (__s32)i;
	}
}

/* The entry of (key, policy), or the free slot of the index for it. */
static struct hot *hot_find(struct hot_set *hs, const struct sluice_src_key *k, __u32 policy,
			    __u32 *slot)
{
	__u32 s = hot_hash(k, policy);

	for (; hs->index[s] >= 0; s = (s + 1) & (HOT_SLOTS - 1)) {
		struct hot *e = &hs->e[hs->index[s]];

		if (e->policy == policy && !memcmp(&e->key, k, sizeof(*k)))
			return e;
	}
	*slot = s;
	return NULL;
}

/* --- the agent --- */

struct agent {
	struct sluice_maps m;
	struct lease_writer *lw;
	struct redis r;
	struct sluice_cluster_state st;
	struct policy *pol;		/* the active generation's */
	__u64 pol_gen;
	struct hot_set hot;
	struct sluice_grant *grants;	/* SLUICE_CLUSTER_HOT_MAX */
	__u64 sync_ns;
	__u64 ttl_ms;			/* the heartbeat's */
	char ttl_arg[NUM_MAX];
	char member[PEER_MEMBER_MAX];	/* NAME#ID, this agent in sluice:{nodes} */
};

/* The bucket's source as Redis keys it: address/len, in the family's terms. */
static void bucket_source(const struct sluice_src_key *k, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	__u32 klen = k->key_len;

	if (k->family == SLUICE_FAMILY_V4) {
		inet_ntop(AF_INET, &k->a[12], a, sizeof(a));
		klen = klen > SLUICE_V4_MAPPED_PREFIX ? klen - SLUICE_V4_MAPPED_PREFIX : 0;
	} else {
		inet_ntop(AF_INET6, k->a, a, sizeof(a));
	}
	snprintf(buf, len, "%s/%u", a, klen);
}

static __u64 ceil_pos(double x)
{
	__u64 i = (__u64)x;

	return x > (double)i ? i + 1 : i;
}

/* The live cluster rule at index idx, or NULL when there is none (deleted,
 * or no longer --cluster). */
static const struct rule *cluster_rule(const struct agent *ag, __u32 idx)
{
	const struct rule *r = rule_by_index(ag->pol, idx);

	if (!r || !r->cluster || r->action != SLUICE_ACT_LIMIT || !r->rate ||
	    r->unit != SLUICE_UNIT_PACKETS)
		return NULL;
	return r;
}

/* Fills e's rule-derived fields from r: its Redis key and its GCRA terms. */
static void hot_bind(const struct agent *ag, struct hot *e, const struct rule *r)
{
	char label[RULE_TEXT_MAX], src[SLUICE_CIDR_STR_MAX];
	double per_s = (double)r->rate / (r->period ? r->period : 1);

	policy_rule_label(ag->pol, r, label, sizeof(label));
	bucket_source(&e->key, src, sizeof(src));
	snprintf(e->rkey, sizeof(e->rkey), "sluice:{%s|%s}", label, src);
	e->t_us = 1e6 / per_s;
	e->tau_us = (double)r->burst * e->t_us;
	e->cap = r->burst + ceil_pos(per_s * (double)ag->sync_ns / SLUICE_NS_PER_SEC);
}

/* Step 1: the hot notices queued since the last sync join the hot set. */
static void take_notices(struct agent *ag)
{
	struct hot_set *hs = &ag->hot;
	struct sluice_hot h;
	const struct rule *r;
	struct hot *e;
	__u32 slot;

	hot_reindex(hs);
	for (unsigned int i = 0; i < SLUICE_CLUSTER_HOT_MAX && !hot_pop(&ag->m, &h); i++) {
		if (hot_find(hs, &h.key, h.policy, &slot))
			continue;
		r = cluster_rule(ag, h.policy);
		if (!r)
			continue;
		if (hs->n == SLUICE_CLUSTER_HOT_MAX) {
			if (!hs->full_said)
				err_msg("warning: cluster: %u hot buckets already: more are limited by "
					"their local share alone until some cool down",
					SLUICE_CLUSTER_HOT_MAX);
			hs->full_said = true;
			continue;
		}
		e = &hs->e[hs->n];
		memset(e, 0, sizeof(*e));
		e->key = h.key;
		e->policy = h.policy;
		e->fresh = true;
		hot_bind(ag, e, r);
		hs->index[slot] = (__s32)hs->n++;
	}
}

/* Step 2 for one bucket: what it admitted on its own since it last
 * reported (the charge) and what it asks for the next interval (want). */
static void hot_account(struct agent *ag, struct hot *e, __u64 now)
{
	const struct rule *r = cluster_rule(ag, e->policy);
	struct sluice_bucket b;
	struct sluice_lease l;
	__u64 dpass, ddrop, left, used, spent, local, d;
	double n_local;

	e->ask = false;
	e->charge = e->want = e->grant = 0;
	if (!r || bpf_map_lookup_elem(ag->m.src_buckets, &e->key, &b)) {
		e->release = true;	/* its rule or its bucket is gone */
		return;
	}
	left = e->credit;
	if (!bpf_map_lookup_elem(ag->m.leases, &e->key, &l) && l.credit < left)
		left = l.credit;
	used = e->lease_done + (e->credit - left);
	spent = used - e->lease_seen;
	e->lease_seen = used;
	if (e->fresh) {
		/* Not seen before: what it passed before its first rejection was
		 * its local share, at most the share's burst and one interval
		 * of its rate; it asked for what it sent, up to the cap. */
		n_local = (double)(ag->st.peers ? ag->st.peers : 1) * SLUICE_CLUSTER_LOCAL_DIV;
		local = (__u64)((double)r->burst / n_local);
		local = (local ? local : 1) +
			ceil_pos((double)r->rate / (r->period ? r->period : 1) / n_local *
				 (double)ag->sync_ns / SLUICE_NS_PER_SEC);
		e->passed = b.passed < local ? b.passed : local;
		d = (__u64)b.passed + b.dropped;
		e->want = d < e->cap ? d : e->cap;
		if (!e->want)
			e->want = 1;
		e->idle = 0;
	} else {
		/* A bucket evicted and made anew counts from 0. */
		dpass = b.passed >= e->last_passed ? b.passed - e->last_passed : b.passed;
		ddrop = b.dropped >= e->last_dropped ? b.dropped - e->last_dropped : b.dropped;
		e->passed += dpass;
		d = dpass + ddrop;
		if (now > e->last_ns && d)
			d = ceil_pos((double)d * (double)ag->sync_ns / (double)(now - e->last_ns));
		e->want = d < e->cap ? d : e->cap;
		e->idle = ddrop || spent ? 0 : e->idle + 1;
		/* One that never spent a unit of lease leaves at its first
		 * sync without a drop: a spoofed source's packet or two made
		 * it hot, and it would hold a place in the set (and a grant a
		 * sync in Redis) for the idle syncs. */
		if (e->idle >= SLUICE_CLUSTER_IDLE_SYNCS || (e->idle && !used)) {
			e->want = 0;
			e->release = true;
		}
	}
	local = e->passed > used ? e->passed - used : 0;
	e->charge = local > e->charged ? local - e->charged : 0;
	e->last_passed = b.passed;
	e->last_dropped = b.dropped;
	e->last_ns = now;
	e->fresh = false;
	e->ask = true;
}

static void num_arg(char *buf, double v)
{
	snprintf(buf, NUM_MAX, "%.17g", v);
}

/* The heartbeat's answer: the names alive into the state; false if it is
 * not a list of names. */
static bool take_peers(struct agent *ag, const redisReply *rep)
{
	struct sluice_cluster_state *s = &ag->st;

	if (rep->type != REDIS_REPLY_ARRAY)
		return false;
	s->npeers = 0;
	for (size_t i = 0; i < rep->elements; i++) {
		const redisReply *e = rep->element[i];
		const char *id;
		size_t len;

		if (e->type != REDIS_REPLY_STRING)
			return false;
		/* Shown by name: the instance id only tells peers apart. */
		id = memchr(e->str, PEER_ID_SEP, e->len);
		len = id ? (size_t)(id - e->str) : e->len;
		if (s->npeers < SLUICE_CLUSTER_PEERS_MAX)
			snprintf(s->peer[s->npeers++], SLUICE_CLUSTER_NAME_MAX, "%.*s",
				 (int)(len < SLUICE_CLUSTER_NAME_MAX ? len :
				       SLUICE_CLUSTER_NAME_MAX - 1), e->str);
	}
	return true;
}

static bool is_noscript(const redisReply *rep)
{
	return rep->type == REDIS_REPLY_ERROR && !strncmp(rep->str, "NOSCRIPT", 8);
}

/* Reads one reply of the sync's pipeline: the heartbeat when e is NULL,
 * else e's grant. 1: NOSCRIPT (send again), 0, -1 (why said). */
static int sync_reply(struct agent *ag, __u64 deadline, struct hot *e, __u32 *npeers)
{
	struct redis *r = &ag->r;
	char what[128];
	redisReply *rep;
	int ret = 0;

	if (redis_reply(r, deadline, &rep))
		return -1;
	if (is_noscript(rep)) {
		ret = 1;
	} else if (!e) {
		if (!take_peers(ag, rep))
			goto bad;
		*npeers = (__u32)rep->elements;
	} else {
		if (rep->type != REDIS_REPLY_INTEGER || rep->integer < 0)
			goto bad;
		e->grant = (__u64)rep->integer;
		if (e->grant > e->want)
			e->grant = e->want;
		e->charged += e->charge;
	}
	freeReplyObject(rep);
	return ret;
bad:
	reply_text(rep, what, sizeof(what));
	snprintf(r->why, sizeof(r->why), "%s answered %s", e ? "the grant" : "the heartbeat", what);
	freeReplyObject(rep);
	redis_close(r);
	return -1;
}

#ifndef SLUICE_CLUSTER_RACY

static int send_beat(struct agent *ag)
{
	const char *argv[] = { "EVALSHA", ag->r.beat_sha, "1", NODES_KEY, ag->member,
			       ag->ttl_arg };

	return redis_append(&ag->r, 6, argv);
}

static int send_grant(struct agent *ag, const struct hot *e)
{
	char t[NUM_MAX], tau[NUM_MAX], charge[NUM_MAX], want[NUM_MAX];
	const char *argv[] = { "EVALSHA", ag->r.grant_sha, "1", e->rkey, t, tau, charge, want };

	num_arg(t, e->t_us);
	num_arg(tau, e->tau_us);
	snprintf(charge, sizeof(charge), "%llu", (unsigned long long)e->charge);
	snprintf(want, sizeof(want), "%llu", (unsigned long long)e->want);
	return redis_append(&ag->r, 8, argv);
}

/* Step 3: one pipelined round trip, the heartbeat and a grant per hot
 * bucket; a script Redis forgot (SCRIPT FLUSH, a restart behind a proxy)
 * is loaded again and its commands sent once more. 0, or -1. */
static int redis_exchange(struct agent *ag, __u64 deadline, __u32 *npeers)
{
	struct hot_set *hs = &ag->hot;
	bool again_beat = false;
	unsigned int again = 0;
	int ret;

	if (send_beat(ag))
		return -1;
	for (unsigned int i = 0; i < hs->n; i++)
		if (hs->e[i].ask && send_grant(ag, &hs->e[i]))
			return -1;
	ret = sync_reply(ag, deadline, NULL, npeers);
	if (ret < 0)
		return -1;
	again_beat = ret;
	for (unsigned int i = 0; i < hs->n; i++) {
		if (!hs->e[i].ask)
			continue;
		ret = sync_reply(ag, deadline, &hs->e[i], npeers);
		if (ret < 0)
			return -1;
		hs->e[i].ask = ret;	/* still to ask */
		again += ret;
	}
	if (!again_beat && !again)
		return 0;
	if (load_scripts(&ag->r, deadline) || (again_beat && send_beat(ag)))
		return -1;
	for (unsigned int i = 0; i < hs->n; i++)
		if (hs->e[i].ask && send_grant(ag, &hs->e[i]))
			return -1;
	if (again_beat && sync_reply(ag, deadline, NULL, npeers))
		goto noscript;
	for (unsigned int i = 0; i < hs->n; i++)
		if (hs->e[i].ask && sync_reply(ag, deadline, &hs->e[i], npeers))
			goto noscript;
	return 0;
noscript:
	if (ag->r.c) {
		snprintf(ag->r.why, sizeof(ag->r.why), "NOSCRIPT right after SCRIPT LOAD");
		redis_close(&ag->r);
	}
	return -1;
}

#else /* SLUICE_CLUSTER_RACY */

/* A plain read-modify-write, kept to show that the tests see a lost
 * update: one pipelined GET of every hot bucket's TAT, the GCRA computed
 * here with this host's CLOCK_REALTIME, then a second round trip of SETs.
 * Two hosts that GET between each other's GET and SET both spend the same
 * tokens. */
static __u64 realtime_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000000 + (__u64)ts.tv_nsec / 1000;
}

/* A reply that is not what cmd answers: -1, the connection closed. */
static int racy_bad(struct agent *ag, const char *cmd, redisReply *rep)
{
	char what[128];

	reply_text(rep, what, sizeof(what));
	snprintf(ag->r.why, sizeof(ag->r.why), "%s answered %s", cmd, what);
	freeReplyObject(rep);
	redis_close(&ag->r);
	return -1;
}

static int redis_exchange(struct agent *ag, __u64 deadline, __u32 *npeers)
{
	struct hot_set *hs = &ag->hot;
	const char *beat[] = { "EVALSHA", ag->r.beat_sha, "1", NODES_KEY, ag->member,
			       ag->ttl_arg };
	redisReply *rep;
	double now, tat, avail;
	char val[NUM_MAX], px[NUM_MAX];
	int ret;

	if (redis_append(&ag->r, 6, beat))
		return -1;
	for (unsigned int i = 0; i < hs->n; i++) {
		const char *get[] = { "GET", hs->e[i].rkey };

		if (hs->e[i].ask && redis_append(&ag->r, 2, get))
			return -1;
	}
	ret = sync_reply(ag, deadline, NULL, npeers);
	if (ret) {
		if (ret > 0)
			snprintf(ag->r.why, sizeof(ag->r.why), "NOSCRIPT (the heartbeat)");
		redis_close(&ag->r);
		return -1;
	}
	now = (double)realtime_us();
	for (unsigned int i = 0; i < hs->n; i++) {
		struct hot *e = &hs->e[i];

		if (!e->ask)
			continue;
		if (redis_reply(&ag->r, deadline, &rep))
			return -1;
		if (rep->type != REDIS_REPLY_STRING && rep->type != REDIS_REPLY_NIL)
			return racy_bad(ag, "GET", rep);
		tat = rep->type == REDIS_REPLY_STRING ? strtod(rep->str, NULL) : 0;
		freeReplyObject(rep);
		if (tat < now)
			tat = now;
		tat += (double)e->charge * e->t_us;
		avail = (now + e->tau_us - tat) / e->t_us;
		e->grant = avail <= 0 ? 0 : (__u64)avail < e->want ? (__u64)avail : e->want;
		tat += (double)e->grant * e->t_us;
		e->charged += e->charge;
		num_arg(val, tat);
		snprintf(px, sizeof(px), "%llu",
			 (unsigned long long)(tat - now > 1000 ? ceil_pos((tat - now) / 1000) : 1));
		{
			const char *set[] = { "SET", e->rkey, val, "PX", px };

			if (redis_append(&ag->r, 5, set))
				return -1;
		}
	}
	for (unsigned int i = 0; i < hs->n; i++) {
		if (!hs->e[i].ask)
			continue;
		if (redis_reply(&ag->r, deadline, &rep))
			return -1;
		if (rep->type != REDIS_REPLY_STATUS)
			return racy_bad(ag, "SET", rep);
		freeReplyObject(rep);
	}
	return 0;
}

#endif /* SLUICE_CLUSTER_RACY */

/* Releases every lease of the hot set, spent ones included, and empties
 * it (Redis gone: the leases would only be spent unreported; a new hot
 * set starts at the next sync that reaches Redis, from the notices of
 * buckets that hold no lease). 0, or -errno. */
static int hot_release_all(struct agent *ag)
{
	struct hot_set *hs = &ag->hot;
	unsigned int n = 0;
	int err;

	for (unsigned int i = 0; i < hs->n; i++) {
		memset(&ag->grants[n], 0, sizeof(ag->grants[n]));
		ag->grants[n].key = hs->e[i].key;
		ag->grants[n].policy = hs->e[i].policy;
		n++;
	}
	err = n ? lease_grant(ag->lw, ag->grants, n) : 0;
	hs->n = 0;
	ag->st.leases = 0;
	return err;
}

/* Step 4: the grants into the kernel, in one batch; the old credits say
 * what was spent of the leases they replace. Released buckets leave the
 * set. 0, or -errno. */
static int write_grants(struct agent *ag)
{
	struct hot_set *hs = &ag->hot;
	__u64 expires = mono_now_ns() + 2 * ag->sync_ns;
	unsigned int n = 0, kept = 0, leases = 0;
	int err;

	for (unsigned int i = 0; i < hs->n; i++) {
		struct hot *e = &hs->e[i];
		struct sluice_grant *g = &ag->grants[n++];

		memset(g, 0, sizeof(*g));
		g->key = e->key;
		g->policy = e->policy;
		/* A grant of 0 is a release: no lease, so the bucket's drops
		 * keep telling (a spent lease would silence them). */
		if (!e->release && e->grant) {
			g->credit = e->grant;
			g->expires_ns = expires;
		}
		ag->st.grants += !e->release && e->grant;
		ag->st.granted += e->grant;
	}
	err = n ? lease_grant(ag->lw, ag->grants, n) : 0;
	if (err)
		return err;
	for (unsigned int i = 0; i < hs->n; i++) {
		struct hot *e = &hs->e[i];
		__u64 old = ag->grants[i].credit;
		bool failed = old == SLUICE_GRANT_FAILED;

		if (failed) {
			/* No room in the leases map: this bucket gets no lease (its
			 * grant is lost), and had none. */
			old = 0;
			if (!hs->full_said)
				err_msg("warning: cluster: %s: the leases map is full (%u): some hot "
					"buckets get no lease this sync", ag->m.iface,
					SLUICE_MAX_LEASES);
			hs->full_said = true;
		}
		if (old > e->credit)
			old = e->credit;
		if (e->release)
			continue;
		e->lease_done += e->credit - old;
		e->credit = failed ? 0 : e->grant;
		leases += e->credit > 0;
		if (kept != i)
			hs->e[kept] = *e;
		kept++;
	}
	hs->n = kept;
	ag->st.leases = leases;
	return 0;
}

/* One sync, steps 1 to 4 of the design, its Redis part done by deadline.
 * 0; -1 when Redis failed (why in ag->r.why); or an exit code when the
 * kernel side failed (printed). */
static int sync_once(struct agent *ag, __u64 deadline, __u32 *npeers)
{
	__u64 now = mono_now_ns();
	int err;

	take_notices(ag);
	for (unsigned int i = 0; i < ag->hot.n; i++)
		hot_account(ag, &ag->hot.e[i], now);
	/* Every reply complete by the deadline, or none of the grants is
	 * written (the bounds take a grant to reach the kernel within S/2
	 * of the attempt's start). */
	if (redis_exchange(ag, deadline, npeers))
		return -1;
	err = write_grants(ag);
	if (err)
		return runtime_err("cannot write the leases of %s: %s", ag->m.iface, strerror(-err));
	return 0;
}

/* --- the state others read, and its transitions --- */

static const char *plural(__u64 n)
{
	return n == 1 ? "" : "s";
}

static int state_commit(struct agent *ag)
{
	ag->st.heartbeat_ns = mono_now_ns();
	return cluster_recommit(&ag->m, &ag->st);
}

/* The bounds hold while S <= B/R (doc/cluster.md): with a longer sync, Redis's
 * bucket fills up between two grants and the cluster admits less than the
 * rate. Said on stderr for each such rule, at each policy read. */
static void warn_short_bursts(const struct agent *ag)
{
	char label[RULE_TEXT_MAX];
	const struct rule *r;
	double per_s, need;

	for (__u32 idx = 0; idx < SLUICE_MAX_POLICIES; idx++) {
		r = cluster_rule(ag, idx);
		if (!r)
			continue;
		per_s = (double)r->rate / (r->period ? r->period : 1);
		need = per_s * (double)ag->sync_ns / SLUICE_NS_PER_SEC;
		if ((double)r->burst >= need)
			continue;
		policy_rule_label(ag->pol, r, label, sizeof(label));
		err_msg("cluster: %s: rule %s: its burst %llu is under rate x sync (%.0f): Redis's "
			"bucket fills between syncs and the cluster admits less than the rate; "
			"give --burst %llu or more, or --sync %.0f or less", ag->m.iface, label,
			(unsigned long long)r->burst, need, ceil_pos(need),
			(double)r->burst / per_s * 1000);
	}
}

/* Whether the policy changed since it was read; reads it anew if so, and
 * binds the hot set to it. 0, or the exit code. */
static int policy_refresh(struct agent *ag)
{
	struct sluice_config cfg;
	const struct rule *r;
	__u64 gen;
	int err;

	live_config(&ag->m, &cfg);
	gen = SLUICE_GEN(cfg.gen_slot);
	if (gen == ag->pol_gen)
		return 0;
	err = policy_read(&ag->m, ag->pol);
	if (err)
		return err;
	ag->pol_gen = gen;
	warn_short_bursts(ag);
	for (unsigned int i = 0; i < ag->hot.n; i++) {
		r = cluster_rule(ag, ag->hot.e[i].policy);
		if (r)
			hot_bind(ag, &ag->hot.e[i], r);
	}
	return 0;
}


static void say_peers(const struct agent *ag)
{
	char list[256] = "";
	size_t off = 0;

	for (__u32 i = 0; i < ag->st.npeers && off < sizeof(list); i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", i ? " " : "",
					ag->st.peer[i]);
	err_msg("cluster: %s: %u peer%s (%s): --cluster rules apply limit / %u here, "
		"leasing more from Redis", ag->m.iface, ag->st.peers, plural(ag->st.peers), list,
		ag->st.peers * SLUICE_CLUSTER_LOCAL_DIV);
}

/* The outcome of one attempt (connect if needed, sync): the mode and the
 * shares follow. 0, or an exit code. */
static int after_sync(struct agent *ag, int ret, __u32 npeers, bool first)
{
	struct sluice_cluster_state *s = &ag->st;
	__u64 now = mono_now_ns();
	bool was_up = s->mode == SLUICE_CLUSTER_UP;
	int err;

	if (ret > 0)
		return ret;
	if (ret < 0) {
		s->sync_failures++;
		err = hot_release_all(ag);
		if (err)
			return runtime_err("cannot release the leases of %s: %s", ag->m.iface,
					   strerror(-err));
		if (s->mode == SLUICE_CLUSTER_FALLBACK)
			return 0;
		s->mode = SLUICE_CLUSTER_FALLBACK;
		s->fallbacks++;
		s->fallback_since_ns = now;
		if (first)
			err_msg("cannot reach %s: %s; in fallback (limit / %u) until it answers",
				s->url, ag->r.why, s->peers);
		else
			err_msg("cluster: %s: fallback: %s: %s; --cluster rules apply limit / %u "
				"until it answers", ag->m.iface, s->url, ag->r.why, s->peers);
		return state_commit(ag);
	}
	s->syncs++;
	s->last_sync_ns = now;
	if (!npeers)
		npeers = 1;
	if (was_up && npeers == s->peers)
		return 0;
	if (!was_up) {
		if (s->fallback_since_ns)
			s->fallback_ns += now - s->fallback_since_ns;
		s->fallback_since_ns = 0;
		s->mode = SLUICE_CLUSTER_UP;
		err_msg("cluster: %s: up: %s answers", ag->m.iface, s->url);
	}
	s->peers = npeers;
	say_peers(ag);
	return state_commit(ag);
}

/* One attempt at the tick: connect when not connected, then sync; Redis
 * gets S/2 for both together. */
static int attempt(struct agent *ag, bool first)
{
	__u64 deadline = mono_now_ns() + ag->r.timeout_ns;
	__u32 npeers = 0;
	int ret = 0;

	if (!ag->r.c && redis_connect(&ag->r, deadline)) {
		if (first && ag->r.not_redis)
			return runtime_err("%s is not a Redis server the agent can use: %s",
					   ag->st.url, ag->r.why);
		ret = -1;
	}
	if (!ret)
		ret = sync_once(ag, deadline, &npeers);
	return after_sync(ag, ret, npeers, first);
}

/* The tick after prev: the next multiple of S on CLOCK_MONOTONIC from the
 * start (ticks missed are skipped); the racy build aligns them to
 * CLOCK_REALTIME multiples of S, so that hosts sync at the same moments
 * and contend. */
static __u64 next_tick(__u64 prev, __u64 sync_ns)
{
	__u64 now = mono_now_ns();
#ifdef SLUICE_CLUSTER_RACY
	struct timespec rt;
	__u64 r;

	(void)prev;
	clock_gettime(CLOCK_REALTIME, &rt);
	r = (__u64)rt.tv_sec * SLUICE_NS_PER_SEC + (__u64)rt.tv_nsec;
	return now + (sync_ns - r % sync_ns);
#else
	if (now < prev + sync_ns)
		return prev + sync_ns;
	return prev + ((now - prev) / sync_ns + 1) * sync_ns;
#endif
}

/* Sleeps until tick: true when SIGINT or SIGTERM came. The signals are
 * blocked and taken here, so one that comes while the agent talks to
 * Redis is seen right after, never lost. */
static bool wait_tick(__u64 tick, const sigset_t *stop)
{
	const struct timespec zero = { 0 };

	for (;;) {
		__u64 now = mono_now_ns();
		struct timespec ts = zero;

		if (now < tick) {
			ts.tv_sec = (time_t)((tick - now) / SLUICE_NS_PER_SEC);
			ts.tv_nsec = (long)((tick - now) % SLUICE_NS_PER_SEC);
		}
		if (sigtimedwait(stop, NULL, &ts) >= 0)
			return true;
		if (errno == EAGAIN && mono_now_ns() >= tick)
			return false;
	}
}

/* Leaves the cluster cleanly: the shares back to limit / N for good, the
 * leases released, the node taken off the peer list at once (best
 * effort: its heartbeat would expire anyway). */
static int leave(struct agent *ag)
{
	const char *zrem[] = { "ZREM", NODES_KEY, ag->member };
	struct sluice_cluster_state *s = &ag->st;
	__u64 now = mono_now_ns();
	redisReply *rep;
	int err, rc = 0;

	err = hot_release_all(ag);
	if (err)
		rc = runtime_err("cannot release the leases of %s: %s", ag->m.iface, strerror(-err));
	if (ag->r.c && !redis_call(&ag->r, now + ag->r.timeout_ns, 3, zrem, &rep))
		freeReplyObject(rep);
	if (s->fallback_since_ns)
		s->fallback_ns += now - s->fallback_since_ns;
	s->fallback_since_ns = 0;
	s->mode = SLUICE_CLUSTER_STOPPED;
	err = state_commit(ag);
	err_msg("cluster: %s: stopped: --cluster rules apply limit / %u by themselves", ag->m.iface,
		s->peers);
	return rc ? rc : err;
}

static void agent_free(struct agent *ag)
{
	redis_close(&ag->r);
	if (ag->lw)
		lease_writer_close(ag->lw);
	maps_close(&ag->m);
	free(ag->pol);
	free(ag->hot.e);
	free(ag->hot.index);
	free(ag->grants);
}

/* Until SIGINT or SIGTERM (0), or the interface is detached (1). */
static int agent_loop(struct agent *ag, const sigset_t *stop)
{
	__u64 tick = mono_now_ns(), checked = tick;
	int err = attempt(ag, true);

	while (!err) {
		ag->st.heartbeat_ns = mono_now_ns();
		if (cluster_state_write(&ag->m, &ag->st))
			return runtime_err("cannot write the cluster state of %s: %s", ag->m.iface,
					   strerror(errno));
		tick = next_tick(tick, ag->sync_ns);
		if (wait_tick(tick, stop))
			return leave(ag);
		if (mono_now_ns() - checked >= ATTACHED_CHECK_NS) {
			checked = mono_now_ns();
			if (!maps_still_current(&ag->m))
				return runtime_err("%s was detached: its --cluster rules are gone; "
						   "the agent stops (attach it again, then join again)",
						   ag->m.iface);
		}
		err = policy_refresh(ag);
		if (!err)
			err = attempt(ag, false);
	}
	return err;
}

enum { CJ_NODE, CJ_SYNC };
static const struct cli_opt join_opts[] = {
	[CJ_NODE] = CLI_OPT("node", 0, "NAME",
			    "this host's name among the peers (default: the host name)", 0, NULL),
	[CJ_SYNC] = CLI_OPT("sync", 0, "MS", "the sync interval, 10 to 10000 ms (default 100)", 0,
			    NULL),
	CLI_OPT_END,
};

static int join_run(const struct cli_cmd *c, struct cli_args *a)
{
	struct agent *ag;
	struct redis_url url;
	char iface[IF_NAMESIZE], host[256];
	const char *node = a->val[CJ_NODE];
	struct sluice_cluster_state old;
	__u64 sync_ms = SLUICE_CLUSTER_SYNC_MS_DEFAULT, instance;
	struct sigaction ign = { .sa_handler = SIG_IGN };
	sigset_t stop, saved;
	int err;

	(void)c;
	if (opts.json)
		return usage_err("cluster join has no JSON output: drop -j (see 'cluster status -j')");
	err = parse_url(a->pos[0], &url);
	if (err)
		return err;
	if (a->val[CJ_SYNC] && !parse_u64(a->val[CJ_SYNC], SLUICE_CLUSTER_SYNC_MS_MIN,
					  SLUICE_CLUSTER_SYNC_MS_MAX, &sync_ms))
		return usage_err("bad --sync '%s': give milliseconds from %u to %u", a->val[CJ_SYNC],
				 SLUICE_CLUSTER_SYNC_MS_MIN, SLUICE_CLUSTER_SYNC_MS_MAX);
	if (!node) {
		if (gethostname(host, sizeof(host)))
			host[0] = '\0';
		host[sizeof(host) - 1] = '\0';
		if (!node_name_ok(host))
			return usage_err("the host name '%.64s' cannot name a node: give --node NAME "
					 "(1 to %u of A-Z a-z 0-9 . _ -)", host,
					 SLUICE_CLUSTER_NAME_MAX - 1);
		node = host;
	} else if (!node_name_ok(node)) {
		return usage_err("bad --node '%.64s': give 1 to %u of A-Z a-z 0-9 . _ -", node,
				 SLUICE_CLUSTER_NAME_MAX - 1);
	}
	err = pick_iface(iface, sizeof(iface));
	if (err)
		return err;

	ag = calloc(1, sizeof(*ag));
	if (!ag)
		return runtime_err("out of memory");
	ag->lw = NULL;
	ag->r.c = NULL;
	err = maps_open(iface, &ag->m);
	if (err) {
		free(ag);
		return err;
	}
	if (cluster_state_read(&ag->m, &old))
		memset(&old, 0, sizeof(old));
	if (cluster_agent_alive(&old, mono_now_ns())) {
		err = runtime_err("an agent already runs on %s (pid %u, node %s, %s): one per "
				  "interface; stop it first", iface, old.pid, old.node, old.url);
		goto out;
	}
	ag->pol = malloc(sizeof(*ag->pol));
	ag->hot.e = calloc(SLUICE_CLUSTER_HOT_MAX, sizeof(*ag->hot.e));
	ag->hot.index = calloc(HOT_SLOTS, sizeof(*ag->hot.index));
	ag->grants = calloc(SLUICE_CLUSTER_HOT_MAX, sizeof(*ag->grants));
	if (!ag->pol || !ag->hot.e || !ag->hot.index || !ag->grants) {
		err = runtime_err("out of memory");
		goto out;
	}
	ag->pol_gen = ~0ULL;	/* none read yet */
	ag->sync_ns = sync_ms * 1000000ULL;
	err = policy_refresh(ag);
	if (!err)
		err = lease_writer_open(&ag->m, &ag->lw);
	/* Leases a killed agent left: their buckets are in no hot set, and a
	 * spent one would keep its bucket from telling this agent. */
	if (!err)
		err = leases_clear(&ag->m);
	if (err)
		goto out;

	ag->ttl_ms = 5 * sync_ms > NODE_TTL_MIN_MS ? 5 * sync_ms : NODE_TTL_MIN_MS;
	snprintf(ag->ttl_arg, sizeof(ag->ttl_arg), "%llu", (unsigned long long)ag->ttl_ms);
	ag->r.url = url;
	ag->r.timeout_ns = ag->sync_ns / 2 > REDIS_TIMEOUT_MIN_NS ? ag->sync_ns / 2 :
								     REDIS_TIMEOUT_MIN_NS;
	ag->r.ops = &ag->st.redis_ops;
	ag->st.mode = SLUICE_CLUSTER_NONE;	/* until the first attempt says */
	ag->st.peers = old.peers ? old.peers : 1;
	ag->st.pid = (__u32)getpid();
	ag->st.sync_ms = (__u32)sync_ms;
	ag->st.started_ns = mono_now_ns();
	snprintf(ag->st.node, sizeof(ag->st.node), "%s", node);
	if (getrandom(&instance, sizeof(instance), 0) != sizeof(instance))
		instance = ((__u64)getpid() << 32) ^ mono_now_ns();
	snprintf(ag->member, sizeof(ag->member), "%s%c%016llx", node, PEER_ID_SEP,
		 (unsigned long long)instance);
	snprintf(ag->st.url, sizeof(ag->st.url), "%s", url.text);

	/* A write to a Redis that went away must fail, not kill the agent. */
	sigaction(SIGPIPE, &ign, NULL);
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, &saved);
	err = agent_loop(ag, &stop);
	sigprocmask(SIG_SETMASK, &saved, NULL);
out:
	agent_free(ag);
	free(ag);
	return err;
}

/* --- status --- */

const char *cluster_mode_name(__u32 mode)
{
	switch (mode) {
	case SLUICE_CLUSTER_UP:		return "up";
	case SLUICE_CLUSTER_FALLBACK:	return "fallback";
	case SLUICE_CLUSTER_STOPPED:	return "stopped";
	default:			return "none";
	}
}

double cluster_fallback_seconds(const struct sluice_cluster_state *s, bool alive, __u64 now_ns)
{
	__u64 ns = s->fallback_ns, end = alive ? now_ns : s->heartbeat_ns;

	if (s->mode == SLUICE_CLUSTER_FALLBACK && s->fallback_since_ns && end > s->fallback_since_ns)
		ns += end - s->fallback_since_ns;
	return (double)ns / SLUICE_NS_PER_SEC;
}

static __u64 ago_ms(__u64 then, __u64 now)
{
	return now > then ? (now - then) / 1000000 : 0;
}

static void status_json(const char *iface, const struct sluice_cluster_state *s, bool alive,
			bool leased, __u64 now)
{
	bool none = s->mode == SLUICE_CLUSTER_NONE;
	struct json j;

	json_begin(&j, stdout);
	json_obj_open(&j, NULL);
	json_str(&j, "interface", iface);
	json_str(&j, "mode", cluster_mode_name(s->mode));
	json_bool(&j, "agent_alive", alive);
	if (none) {
		json_null(&j, "node");
		json_null(&j, "redis");
		json_null(&j, "sync_ms");
	} else {
		json_str(&j, "node", s->node);
		json_str(&j, "redis", s->url);
		json_u64(&j, "sync_ms", s->sync_ms);
	}
	json_u64(&j, "peers", s->peers ? s->peers : 1);
	json_bool(&j, "leased_shares", leased);
	json_arr_open(&j, "peer_names");
	for (__u32 i = 0; i < s->npeers && i < SLUICE_CLUSTER_PEERS_MAX; i++)
		json_str(&j, NULL, s->peer[i]);
	json_arr_close(&j);
	if (s->last_sync_ns)
		json_u64(&j, "last_sync_ago_ms", ago_ms(s->last_sync_ns, now));
	else
		json_null(&j, "last_sync_ago_ms");
	json_u64(&j, "syncs", s->syncs);
	json_u64(&j, "sync_failures", s->sync_failures);
	json_u64(&j, "leases", s->leases);
	json_u64(&j, "grants", s->grants);
	json_u64(&j, "granted", s->granted);
	json_u64(&j, "redis_ops", s->redis_ops);
	json_u64(&j, "fallbacks", s->fallbacks);
	json_double(&j, "fallback_seconds", cluster_fallback_seconds(s, alive, now));
	if (s->mode == SLUICE_CLUSTER_FALLBACK && s->fallback_since_ns)
		json_u64(&j, "in_fallback_since_ms",
			 ago_ms(s->fallback_since_ns, alive ? now : s->heartbeat_ns));
	else
		json_null(&j, "in_fallback_since_ms");
	json_obj_close(&j);
	json_end(&j);
}

static void status_text(const char *iface, const struct sluice_cluster_state *s, bool alive,
			bool leased, __u64 now)
{
	__u32 n = s->peers ? s->peers : 1;

	if (s->mode == SLUICE_CLUSTER_NONE) {
		printf("%s: no cluster agent has run: --cluster rules apply limit / %u by "
		       "themselves ('sluice cluster join redis://HOST[:PORT]' to join)\n", iface, n);
		return;
	}
	printf("%s: cluster %s", iface, cluster_mode_name(s->mode));
	if (s->mode == SLUICE_CLUSTER_UP || s->mode == SLUICE_CLUSTER_FALLBACK)
		printf(alive ? " (agent pid %u)" : " (agent pid %u NOT RUNNING: its state is stale)",
		       s->pid);
	printf(", node %s, %s, sync every %u ms\n", s->node, s->url, s->sync_ms);
	if (leased && alive)
		printf("  shares: --cluster rules apply limit / %u here and lease more from Redis\n",
		       n * SLUICE_CLUSTER_LOCAL_DIV);
	else if (leased)
		printf("  shares: STILL limit / %u here, as the agent left them, with no leases: "
		       "'sluice cluster leave' puts them to limit / %u (or start an agent)\n",
		       n * SLUICE_CLUSTER_LOCAL_DIV, n);
	else
		printf("  shares: --cluster rules apply limit / %u here by themselves\n", n);
	if (s->mode == SLUICE_CLUSTER_FALLBACK && s->fallback_since_ns)
		printf("  IN FALLBACK for %.3f s: Redis does not answer\n",
		       (double)ago_ms(s->fallback_since_ns, alive ? now : s->heartbeat_ns) / 1000);
	printf("  peers: %u", n);
	for (__u32 i = 0; i < s->npeers && i < SLUICE_CLUSTER_PEERS_MAX; i++)
		printf("%s%s", i ? " " : " (", s->peer[i]);
	printf("%s\n", s->npeers ? ")" : "");
	if (s->last_sync_ns)
		printf("  last sync: %llu ms ago\n", (unsigned long long)ago_ms(s->last_sync_ns, now));
	else
		printf("  last sync: never\n");
	printf("  syncs: %llu ok, %llu failed; leases held: %u; grants: %llu (%llu units); "
	       "redis commands: %llu\n", (unsigned long long)s->syncs,
	       (unsigned long long)s->sync_failures, s->leases, (unsigned long long)s->grants,
	       (unsigned long long)s->granted, (unsigned long long)s->redis_ops);
	printf("  fallbacks: %llu, %.3f s in fallback in all\n", (unsigned long long)s->fallbacks,
	       cluster_fallback_seconds(s, alive, now));
}

static int status_run(const struct cli_cmd *c, struct cli_args *a)
{
	struct sluice_cluster_state s;
	struct sluice_config cfg;
	struct sluice_maps m;
	char iface[IF_NAMESIZE];
	__u64 now;
	bool alive;
	int err;

	(void)c;
	(void)a;
	err = pick_iface(iface, sizeof(iface));
	if (!err)
		err = maps_open_ro(iface, &m);
	if (err)
		return err;
	if (cluster_state_read(&m, &s)) {
		maps_close(&m);
		return EXIT_RUNTIME;
	}
	/* What the datapath applies: the last commit's, whoever made it. */
	live_config(&m, &cfg);
	maps_close(&m);
	now = mono_now_ns();
	alive = cluster_agent_alive(&s, now);
	if (opts.json)
		status_json(iface, &s, alive, cfg.leasing != 0, now);
	else
		status_text(iface, &s, alive, cfg.leasing != 0, now);
	return 0;
}

/* --- leave --- */

/*
 * What an agent does when it stops, for one that could not: killed
 * (SIGKILL, OOM), crashed, or hung past its heartbeat. Its last commit
 * left the shares at limit / 8N with leases that expire, so the host
 * would admit an eighth of its part until the next commit: this one puts
 * them to limit / N, clears the leases and marks the host stopped. The
 * node leaves the peer list when its heartbeat's TTL runs out.
 */
static int leave_run(const struct cli_cmd *c, struct cli_args *a)
{
	struct sluice_cluster_state s;
	struct sluice_maps m;
	char iface[IF_NAMESIZE];
	__u32 n;
	int err;

	(void)c;
	(void)a;
	if (opts.json)
		return usage_err("cluster leave has no JSON output: drop -j (see 'cluster status -j')");
	err = pick_iface(iface, sizeof(iface));
	if (!err)
		err = maps_open(iface, &m);
	if (err)
		return err;
	err = maps_lock(&m);
	if (!err && cluster_state_read(&m, &s))
		err = EXIT_RUNTIME;
	if (err)
		goto out;
	n = s.peers ? s.peers : 1;
	if (cluster_agent_alive(&s, mono_now_ns())) {
		err = runtime_err("the cluster agent of %s runs (pid %u): stop it (SIGTERM) and it "
				  "leaves by itself", iface, s.pid);
		goto out;
	}
	if (s.mode != SLUICE_CLUSTER_UP && s.mode != SLUICE_CLUSTER_FALLBACK) {
		printf("%s: not in a cluster (%s): nothing to do\n", iface,
		       s.mode == SLUICE_CLUSTER_NONE ? "no agent has run" : "its agent left");
		goto out;
	}
	err = leases_clear(&m);
	if (err)
		goto out;
	/* The fallback period ended when the agent stopped beating. */
	if (s.fallback_since_ns && s.heartbeat_ns > s.fallback_since_ns)
		s.fallback_ns += s.heartbeat_ns - s.fallback_since_ns;
	s.fallback_since_ns = 0;
	s.leases = 0;
	s.mode = SLUICE_CLUSTER_STOPPED;
	err = cluster_recommit(&m, &s);
	if (!err)
		printf("%s: left the cluster for its agent (pid %u, not running): --cluster rules "
		       "apply limit / %u by themselves\n", iface, s.pid, n);
out:
	maps_close(&m);
	return err;
}

static const struct cli_cmd join_cmd = {
	.name = "join", .path = "cluster join", .args = "redis://HOST[:PORT]",
	.min_pos = 1, .max_pos = 1, .opts = join_opts, .run = join_run,
	.help = "Runs the cluster agent of the interface until SIGINT or SIGTERM: its --cluster\n"
		"rules then hold across every host joined to the same Redis. Each host spends a\n"
		"local share (limit / 8N) and leases more tokens from Redis every sync interval;\n"
		"while Redis does not answer, limit / N. One agent per interface.",
};
static const struct cli_cmd cluster_status_cmd = {
	.name = "status", .path = "cluster status", .json = true, .run = status_run,
	.help = "The cluster agent's state: up or in fallback, the peers seen, the last sync,\n"
		"the leases held, the grants and the time spent in fallback.",
};
static const struct cli_cmd leave_cmd = {
	.name = "leave", .path = "cluster leave", .run = leave_run,
	.help = "Takes the interface out of the cluster for an agent that stopped without\n"
		"leaving (killed, crashed): its --cluster rules go from limit / 8N to limit / N\n"
		"and its leases are cleared, as the agent does on SIGTERM. Refused while the\n"
		"agent runs; nothing to do when it left. For ExecStopPost= (contrib/systemd).",
};
static const struct cli_cmd *const cluster_cmds[] = { &join_cmd, &cluster_status_cmd, &leave_cmd,
						       NULL };

const struct cli_cmd cluster_obj = {
	.name = "cluster", .path = "cluster", .sub = cluster_cmds,
	.help = "Cluster-wide limits: rules with --cluster hold across the hosts joined to one\n"
		"Redis (see sluice(8), \"cluster join, status, leave\").",
};
