// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rcluster: the cluster agent on a Redis Cluster (--redis-cluster). Every
 * key of the agent carries one hash tag, so one sync (the heartbeat and
 * every grant) touches one slot, and stays one pipeline to one node: the
 * slot's owner, read from CLUSTER SLOTS of a seed (or of a node seen in an
 * earlier map) at each connect. A MOVED reply names the new owner: the
 * command is sent there at once and the agent reconnects there at its next
 * sync; an ASK reply (the slot being resharded) sends that command alone,
 * after ASKING, to the node named. Also the agent's keys, in both modes. */
#define _GNU_SOURCE	/* memrchr */
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include "core.h"
#include "redis.h"
#include "keyslot.h"
#include "rcluster.h"

/* The hash tag of every key under --redis-cluster: one slot for all. */
#define CLUSTER_TAG		"sluice"
#define KEY_PREFIX		"sluice:"
#define RC_KNOWN_MAX		64U	/* nodes kept from the last slot map */
/* Commands sent and not yet answered, at most: a sync's heartbeat and
 * grants, and the few of a connect. */
#define RC_PENDING_MAX		(SLUICE_CLUSTER_HOT_MAX + 16U)
#define SEEDS_TEXT_MAX		(RC_SEEDS_MAX * (REDIS_URL_IN_MAX + 8U))

struct rc_node {
	char host[REDIS_URL_IN_MAX];
	int port;
};

/* A command as sent (RESP), kept until its reply. */
struct rc_cmd {
	char *text;
	size_t len;
};

struct rcluster {
	struct rc_node seed[RC_SEEDS_MAX + 1];	/* the URL's node first */
	unsigned int nseeds;
	struct rc_node known[RC_KNOWN_MAX];	/* every node of the last map */
	unsigned int nknown;
	unsigned int next;		/* the candidate asked first for the map */
	unsigned int slot;		/* of CLUSTER_TAG */
	struct rc_node owner;		/* the slot's, as last learnt */
	bool moved;			/* a MOVED named it: reconnect there */
	char where[SLUICE_CLUSTER_URL_MAX];
	struct redis *side;		/* to the node a MOVED or an ASK named */
	struct rc_cmd *pending;		/* ring of RC_PENDING_MAX */
	unsigned int head, count;
};

/* --- keys --- */

/* Single Redis: sluice:{RULE|SOURCE} and sluice:{nodes}, as every version
 * before (hosts of a rolling upgrade share them). Redis Cluster: one tag
 * for all, sluice:{sluice}:RULE|SOURCE and sluice:{sluice}:nodes. */
void redis_bucket_key(const struct redis *r, char *buf, size_t len, const char *label,
		      const char *src)
{
	if (r->rc)
		snprintf(buf, len, KEY_PREFIX "{" CLUSTER_TAG "}:%s|%s", label, src);
	else
		snprintf(buf, len, KEY_PREFIX "{%s|%s}", label, src);
}

const char *redis_nodes_key(const struct redis *r)
{
	return r->rc ? KEY_PREFIX "{" CLUSTER_TAG "}:nodes" : KEY_PREFIX "{nodes}";
}

/* --- setup --- */

/* HOST:PORT (an IPv6 address in brackets) at s, n bytes, into nd: true
 * if it is one (url.c's parser, as for a URL's host). */
static bool seed_parse(const char *s, size_t n, struct rc_node *nd)
{
	struct redis_url one = { 0 };
	char text[REDIS_URL_IN_MAX], why[REDIS_URL_IN_MAX + 64];
	const char *rest;

	if (n >= sizeof(text))
		return false;
	memcpy(text, s, n);
	text[n] = '\0';
	if (host_port_parse(text, &one, &rest, why, sizeof(why)) || *rest || !one.port)
		return false;
	memcpy(nd->host, one.host, sizeof(nd->host));
	nd->port = one.port;
	return true;
}

static int seeds_parse(struct rcluster *rc, const char *seeds)
{
	const char *p = seeds;
	size_t n;

	if (strlen(seeds) >= SEEDS_TEXT_MAX)
		return usage_err("--redis-cluster: longer than %u characters", SEEDS_TEXT_MAX - 1);
	for (;;) {
		n = strcspn(p, ",");
		if (rc->nseeds > RC_SEEDS_MAX)
			return usage_err("--redis-cluster: more than %u seeds: a few of the cluster's "
					 "nodes are enough", RC_SEEDS_MAX);
		if (!seed_parse(p, n, &rc->seed[rc->nseeds]))
			return usage_err("--redis-cluster: bad seed '%.*s': give HOST:PORT[,HOST:PORT...] "
					 "(an IPv6 address in brackets)", (int)(n > 64 ? 64 : n), p);
		rc->nseeds++;
		if (!p[n])
			return 0;
		p += n + 1;
	}
}

int rcluster_setup(struct redis *r, const char *seeds)
{
	struct rcluster *rc;
	int err;

	if (r->url.kind == REDIS_UNIX)
		return usage_err("--redis-cluster: the URL is the first seed, a node of the cluster: "
				 "give redis://[USER@]HOST:PORT or rediss://..., not %s", r->url.text);
	if (r->url.db)
		return usage_err("--redis-cluster: a Redis Cluster has database 0 only: drop /%d from "
				 "the URL", r->url.db);
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return runtime_err("out of memory");
	r->rc = rc;
	snprintf(rc->seed[0].host, sizeof(rc->seed[0].host), "%s", r->url.host);
	rc->seed[0].port = r->url.port;
	rc->nseeds = 1;
	rc->slot = redis_keyslot(CLUSTER_TAG, strlen(CLUSTER_TAG));
	rc->pending = calloc(RC_PENDING_MAX, sizeof(*rc->pending));
	rc->side = calloc(1, sizeof(*rc->side));
	if (!rc->pending || !rc->side) {
		rcluster_free(r);
		return runtime_err("out of memory");
	}
	err = seeds_parse(rc, seeds);
	if (err) {
		rcluster_free(r);
		return err;
	}
	snprintf(rc->where, sizeof(rc->where), "%s", r->url.text);
	return 0;
}

void rcluster_free(struct redis *r)
{
	struct rcluster *rc = r->rc;

	if (!rc)
		return;
	rcluster_close(r);
	if (rc->side)
		explicit_bzero(rc->side, sizeof(*rc->side));
	free(rc->side);
	free(rc->pending);
	free(rc);
	r->rc = NULL;
}

/* --- the commands awaiting their replies --- */

/* The oldest command sent, taken off the ring (text NULL when none). */
static struct rc_cmd pending_pop(struct rcluster *rc)
{
	struct rc_cmd c = { 0 };

	if (rc->count) {
		c = rc->pending[rc->head];
		rc->head = (rc->head + 1) % RC_PENDING_MAX;
		rc->count--;
	}
	return c;
}

/* A command's text wiped (AUTH's holds the password) and freed. */
static void cmd_free(struct rc_cmd *c)
{
	if (c->text)
		explicit_bzero(c->text, c->len);
	free(c->text);
	c->text = NULL;
}

void rcluster_close(struct redis *r)
{
	struct rcluster *rc = r->rc;
	struct rc_cmd c;

	while (rc->count) {
		c = pending_pop(rc);
		cmd_free(&c);
	}
	rc->head = 0;
	if (rc->side)
		redis_close(rc->side);
}

int rcluster_sent(struct redis *r, int argc, const char **argv)
{
	struct rcluster *rc = r->rc;
	struct rc_cmd *c;
	char *text = NULL;
	long long len;

	if (rc->count == RC_PENDING_MAX) {
		snprintf(r->why, sizeof(r->why), "more than %u commands awaiting replies",
			 RC_PENDING_MAX);
		return -1;
	}
	len = redisFormatCommandArgv(&text, argc, argv, NULL);
	if (len < 0) {
		snprintf(r->why, sizeof(r->why), "out of memory");
		return -1;
	}
	c = &rc->pending[(rc->head + rc->count) % RC_PENDING_MAX];
	c->text = text;
	c->len = (size_t)len;
	rc->count++;
	return 0;
}

/* --- the slot's owner --- */

/* The node the next connect of u goes to. */
static void url_at(struct redis_url *u, const struct rc_node *at)
{
	unsigned char a6[sizeof(struct in6_addr)];

	snprintf(u->host, sizeof(u->host), "%s", at->host);
	u->port = at->port;
	u->v6 = inet_pton(AF_INET6, at->host, a6) == 1;
}

/* The slot's owner, where the agent connects next (and status shows). */
static void where_set(struct redis *r, const struct rc_node *at)
{
	struct rcluster *rc = r->rc;

	url_at(&r->url, at);
	snprintf(rc->where, sizeof(rc->where), "%.60s, slot %u on %s%.40s%s:%d", r->url.text, rc->slot,
		 r->url.v6 ? "[" : "", at->host, r->url.v6 ? "]" : "", at->port);
}

/* A node of a CLUSTER SLOTS entry ([HOST, PORT, ID, ...]) into nd; an
 * empty HOST is the node that answered (Redis's "unknown endpoint"). */
static bool map_node(const redisReply *e, const char *asked, struct rc_node *nd)
{
	const redisReply *h, *p;

	if (e->type != REDIS_REPLY_ARRAY || e->elements < 2)
		return false;
	h = e->element[0];
	p = e->element[1];
	if (h->type != REDIS_REPLY_STRING || p->type != REDIS_REPLY_INTEGER || p->integer < 1 ||
	    p->integer > 65535 || h->len >= sizeof(nd->host))
		return false;
	snprintf(nd->host, sizeof(nd->host), "%s", h->len && strcmp(h->str, "?") != 0 ? h->str : asked);
	nd->port = (int)p->integer;
	return true;
}

/* CLUSTER SLOTS's answer: the owner of rc->slot into rc->owner and every
 * node into rc->known. 0, or -1 with why. */
static int slots_take(struct redis *r, const redisReply *rep)
{
	struct rcluster *rc = r->rc;
	bool found = false;

	if (rep->type != REDIS_REPLY_ARRAY) {
		char what[128];

		reply_text(rep, what, sizeof(what));
		snprintf(r->why, sizeof(r->why), "CLUSTER SLOTS answered %.100s: not a Redis Cluster "
			 "node", what);
		r->not_redis = true;
		return -1;
	}
	rc->nknown = 0;
	for (size_t i = 0; i < rep->elements; i++) {
		const redisReply *e = rep->element[i];
		struct rc_node nd;

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    e->element[0]->type != REDIS_REPLY_INTEGER ||
		    e->element[1]->type != REDIS_REPLY_INTEGER)
			continue;
		for (size_t j = 2; j < e->elements; j++) {
			if (!map_node(e->element[j], r->url.host, &nd))
				continue;
			if (j == 2 && e->element[0]->integer <= rc->slot &&
			    rc->slot <= (unsigned long long)e->element[1]->integer) {
				rc->owner = nd;
				found = true;
			}
			if (rc->nknown < RC_KNOWN_MAX)
				rc->known[rc->nknown++] = nd;
		}
	}
	if (!found)
		snprintf(r->why, sizeof(r->why), "CLUSTER SLOTS of %s:%d: slot %u has no node",
			 r->url.host, r->url.port, rc->slot);
	return found ? 0 : -1;
}

/* The i-th node to ask for the map: the seeds, then the nodes seen. */
static const struct rc_node *candidate(const struct rcluster *rc, unsigned int i)
{
	i %= rc->nseeds + rc->nknown;
	return i < rc->nseeds ? &rc->seed[i] : &rc->known[i - rc->nseeds];
}

/* The map from one node: 0, or -1 with why (the connection closed). */
static int map_read(struct redis *r, const struct rc_node *at, __u64 deadline)
{
	const char *argv[] = { "CLUSTER", "SLOTS" };
	redisReply *rep;
	int ret;

	url_at(&r->url, at);
	if (redis_open(r, deadline) || redis_call(r, deadline, 2, argv, &rep))
		return -1;
	ret = slots_take(r, rep);
	freeReplyObject(rep);
	redis_close(r);
	return ret;
}

int rcluster_locate(struct redis *r, __u64 deadline)
{
	struct rcluster *rc = r->rc;
	char why[sizeof(r->why)];
	unsigned int n;

	if (rc->moved) {
		rc->moved = false;
		where_set(r, &rc->owner);
		return 0;
	}
	/* Each node in turn, the one that answered last first; one that does
	 * not answer by the deadline is passed over at the next attempt. */
	n = rc->nseeds + rc->nknown;
	for (unsigned int i = 0; i < n && mono_now_ns() < deadline; i++, rc->next++) {
		const struct rc_node *at = candidate(rc, rc->next);

		if (!map_read(r, at, deadline)) {
			rc->next %= rc->nseeds + rc->nknown;
			where_set(r, &rc->owner);
			return 0;
		}
		snprintf(why, sizeof(why), "%s", r->why);
		snprintf(r->why, sizeof(r->why), "%.40s:%d: %.100s", at->host, at->port,
			 why);
	}
	return -1;
}

/* --- MOVED and ASK --- */

/* "MOVED SLOT HOST:PORT" or "ASK SLOT HOST:PORT" into *to: true if the
 * error is one (an empty HOST is the node that answered). */
static bool redirect_of(const struct redis *r, const char *err, struct rc_node *to, bool *ask)
{
	const char *addr, *colon;
	size_t hlen;
	__u64 port;

	*ask = !strncmp(err, "ASK ", 4);
	if (!*ask && strncmp(err, "MOVED ", 6) != 0)
		return false;
	addr = strchr(err + (*ask ? 4 : 6), ' ');
	colon = addr ? strrchr(addr, ':') : NULL;
	if (!colon || !parse_u64(colon + 1, 1, 65535, &port))
		return false;
	hlen = (size_t)(colon - addr - 1);
	if (hlen >= sizeof(to->host))
		return false;
	memcpy(to->host, addr + 1, hlen);
	to->host[hlen] = '\0';
	if (!hlen)
		snprintf(to->host, sizeof(to->host), "%s", r->url.host);
	to->port = (int)port;
	return true;
}

/* The side connection to node to, opened (with r's credentials and TLS
 * terms, the scripts loaded) unless it is there already: 0, or -1. */
static int side_open(struct redis *r, const struct rc_node *to, __u64 deadline)
{
	struct redis *s = r->rc->side;

	if (s->c && s->url.port == to->port && !strcmp(s->url.host, to->host))
		return 0;
	redis_close(s);
	s->url = r->url;
	url_at(&s->url, to);
	memcpy(s->password, r->password, sizeof(s->password));
	s->tls = r->tls;
	s->timeout_ns = r->timeout_ns;
	s->ops = r->ops;
	return redis_connect(s, deadline);
}

/* The command c once more on the node to (after ASKING for an ASK): its
 * reply into *out. 0, or -1 with why. */
static int redirect(struct redis *r, __u64 deadline, const struct rc_node *to, bool ask,
		    const struct rc_cmd *c, redisReply **out)
{
	struct redis *s = r->rc->side;
	const char *asking[] = { "ASKING" };
	redisReply *rep;
	bool ok;

	if (side_open(r, to, deadline))
		goto fail;
	if (ask) {
		if (redis_call(s, deadline, 1, asking, &rep))
			goto fail;
		ok = rep->type == REDIS_REPLY_STATUS && !strcmp(rep->str, "OK");
		freeReplyObject(rep);
		if (!ok) {
			snprintf(s->why, sizeof(s->why), "ASKING was refused");
			goto fail;
		}
	}
	if (redisAppendFormattedCommand(s->c, c->text, c->len) != REDIS_OK) {
		snprintf(s->why, sizeof(s->why), "out of memory");
		goto fail;
	}
	(*s->ops)++;
	if (redis_reply(s, deadline, out))
		goto fail;
	return 0;
fail:
	snprintf(r->why, sizeof(r->why), "%s %.40s:%d: %.90s", ask ? "ASK" : "MOVED", to->host, to->port,
		 s->why);
	redis_close(s);
	return -1;
}

int rcluster_reply(struct redis *r, __u64 deadline, redisReply **out)
{
	struct rcluster *rc = r->rc;
	struct rc_cmd c = pending_pop(rc);
	struct rc_node to;
	redisReply *rep = *out;
	bool ask;
	int ret = 0;

	if (c.text && rep->type == REDIS_REPLY_ERROR && redirect_of(r, rep->str, &to, &ask)) {
		if (!ask) {
			/* The slot lives there now: this sync's commands follow
			 * it one by one, the next sync's go there directly. */
			rc->owner = to;
			rc->moved = true;
		}
		ret = redirect(r, deadline, &to, ask, &c, out);
		freeReplyObject(rep);
		if (ret) {
			*out = NULL;
			redis_close(r);
		}
	}
	cmd_free(&c);
	return ret;
}

bool redis_stale(const struct redis *r)
{
	return r->rc && r->rc->moved;
}

const char *redis_where(const struct redis *r)
{
	return r->rc ? r->rc->where : r->url.text;
}
