// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sentinel: where a sentinel:// URL's master is. Before each connect the
 * agent asks the sentinels in turn, each within its share of the sync's
 * deadline, SENTINEL get-master-addr-by-name MASTER, connects to the
 * address the first one to answer gives, and takes it only if ROLE says
 * master there: a demoted old master that comes back answers as a replica
 * (and a replica would answer writes with -READONLY). Anything else fails
 * the attempt as an unreachable Redis does (fallback), and the next
 * attempt, one sync later, asks again: the agent follows a failover
 * within a sync of the new master answering. */
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "redis.h"

#define ROLE_MASTER	"master"
#define PORT_MAX	65535

/* The sentinel's answer, [HOST, PORT], into r->url's host, port and v6:
 * 0, or -1 with why. */
static int take_addr(struct redis *r, const redisReply *rep)
{
	const redisReply *h, *p;
	char what[128];
	__u64 port;

	if (rep->type == REDIS_REPLY_NIL) {
		snprintf(r->why, sizeof(r->why), "it knows no master named %s", r->url.master);
		return -1;
	}
	h = rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 ? rep->element[0] : NULL;
	p = h ? rep->element[1] : NULL;
	if (!h || h->type != REDIS_REPLY_STRING || !h->len || h->len >= sizeof(r->url.host) ||
	    strlen(h->str) != h->len || p->type != REDIS_REPLY_STRING ||
	    !parse_u64(p->str, 1, PORT_MAX, &port)) {
		reply_text(rep, what, sizeof(what));
		snprintf(r->why, sizeof(r->why), "it answered %s, not [HOST, PORT]", what);
		return -1;
	}
	memcpy(r->url.host, h->str, h->len + 1);
	r->url.port = (int)port;
	r->url.v6 = strchr(h->str, ':') != NULL;
	return 0;
}

/* Sentinel i's answer by deadline: 0 with the address in r->url, or -1
 * with why (the connection to it closed either way). */
static int ask_one(struct redis *r, int i, __u64 deadline)
{
	const struct redis_sentinel *a = &r->url.sentinel[i];
	const char *argv[] = { "SENTINEL", "get-master-addr-by-name", r->url.master };
	char why[sizeof(r->why)];
	redisReply *rep;
	int err;

	err = redis_dial(r, a->host, a->port, deadline);
	if (!err)
		err = redis_call(r, deadline, 3, argv, &rep);
	if (!err) {
		err = take_addr(r, rep);
		freeReplyObject(rep);
	}
	redis_close(r);
	/* A sentinel that speaks no Redis is one that does not answer: the
	 * others are asked, and the next attempt asks it again. */
	r->not_redis = false;
	if (err) {
		snprintf(why, sizeof(why), "%s", r->why);
		snprintf(r->why, sizeof(r->why), "sentinel %s%.60s%s:%d: %.80s", a->v6 ? "[" : "", a->host,
			 a->v6 ? "]" : "", a->port, why);
	}
	return err;
}

#ifdef SLUICE_SENTINEL_STICKY
/* The broken build of tests/cluster/sentinel.sh: once a sentinel has
 * answered, its address forever, the sentinels never asked again. */
static bool sticky(const struct sentinel_track *t)
{
	return t->asked;
}
#else
static bool sticky(const struct sentinel_track *t)
{
	(void)t;
	return false;
}
#endif

int sentinel_locate(struct redis *r, __u64 deadline)
{
	struct sentinel_track *t = &r->st;
	int n = r->url.nsentinels;

	if (sticky(t))
		return 0;
	/* The address last given did not turn out a master: ask the next
	 * sentinel first, in case that one lags behind the others. */
	if (t->asked && !t->confirmed)
		t->first = (t->answered + 1) % n;
	t->confirmed = false;
	snprintf(r->why, sizeof(r->why), "no time left to ask the sentinels");
	for (int k = 0; k < n; k++) {
		int i = (t->first + k) % n;
		__u64 now = mono_now_ns();

		if (now >= deadline)
			break;
		/* Its share of what is left, keeping one for the master itself:
		 * a sentinel that does not answer leaves time for the others. */
		if (!ask_one(r, i, now + (deadline - now) / (__u64)(n - k + 1))) {
			t->answered = i;
			t->asked = true;
			return 0;
		}
	}
	return -1;
}

/* Says (stderr) which master the agent uses, when it is another one. */
static void say_primary(struct redis *r)
{
	struct sentinel_track *t = &r->st;
	const struct redis_sentinel *a = &r->url.sentinel[t->answered];
	char now[sizeof(t->primary)];

	snprintf(now, sizeof(now), "%s%s%s:%d", r->url.v6 ? "[" : "", r->url.host,
		 r->url.v6 ? "]" : "", r->url.port);
	if (!strcmp(now, t->primary))
		return;
	log_event(LOG_NOTICE, "cluster: %s: the master %s is %s (from sentinel %s%s%s:%d)%s%s",
		  r->url.text, r->url.master, now, a->v6 ? "[" : "", a->host, a->v6 ? "]" : "",
		  a->port, t->primary[0] ? ", was " : "", t->primary);
	memcpy(t->primary, now, sizeof(now));
}

int sentinel_check_role(struct redis *r, __u64 deadline)
{
	const char *argv[] = { "ROLE" };
	const redisReply *role;
	char what[128];
	redisReply *rep;

	if (redis_call(r, deadline, 1, argv, &rep))
		return -1;
	role = rep->type == REDIS_REPLY_ARRAY && rep->elements ? rep->element[0] : NULL;
	if (role && role->type == REDIS_REPLY_STRING && !strcmp(role->str, ROLE_MASTER)) {
		freeReplyObject(rep);
		r->st.confirmed = true;
		say_primary(r);
		return 0;
	}
	reply_text(role ? role : rep, what, sizeof(what));
	if (rep->type == REDIS_REPLY_ERROR) {
		/* Refused (an ACL without +role): the agent cannot use it. */
		snprintf(r->why, sizeof(r->why), "ROLE answered %.80s (the ACL user needs "
			 "+role under sentinel://)", what);
		r->not_redis = true;
	} else {
		snprintf(r->why, sizeof(r->why), "%.60s:%d is no master: ROLE answered %.40s",
			 r->url.host, r->url.port, what);
	}
	freeReplyObject(rep);
	redis_close(r);
	return -1;
}
