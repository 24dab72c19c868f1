// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* redis: the cluster agent's Redis client over hiredis: one connection,
 * every read bounded by the sync's deadline, the scripts loaded at connect. */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <sys/time.h>
#include <hiredis/hiredis.h>
#include "sluice.h"
#include "cluster_lua.h"
#include "redis.h"

static struct timeval tv_of(__u64 ns)
{
	struct timeval tv = { .tv_sec = (time_t)(ns / SLUICE_NS_PER_SEC),
			      .tv_usec = (suseconds_t)(ns % SLUICE_NS_PER_SEC / 1000) };

	if (!tv.tv_sec && !tv.tv_usec)
		tv.tv_usec = 1;		/* 0 would be no timeout at all */
	return tv;
}

void redis_close(struct redis *r)
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
void reply_text(const redisReply *rep, char *buf, size_t len)
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
int redis_reply(struct redis *r, __u64 deadline, redisReply **out)
{
	void *rep = NULL;
	int done = 0;
	__u64 now;

	*out = NULL;
	for (;;) {
		if (redisGetReplyFromReader(r->c, &rep) != REDIS_OK) {
			redis_fail(r, "reading");
			return -1;
		}
		if (rep)
			break;
		now = mono_now_ns();
		if (now >= deadline) {
			snprintf(r->why, sizeof(r->why), "no complete answer within %llu ms",
				 (unsigned long long)(r->timeout_ns / 1000000));
			redis_close(r);
			return -1;
		}
		if (redisSetTimeout(r->c, tv_of(deadline - now)) != REDIS_OK) {
			redis_fail(r, "reading");
			return -1;
		}
		if (!done) {
			/* What is still buffered of the commands goes first. */
			if (redisBufferWrite(r->c, &done) != REDIS_OK) {
				redis_fail(r, "sending");
				return -1;
			}
			continue;
		}
		if (redisBufferRead(r->c) != REDIS_OK) {
			redis_fail(r, "reading");
			return -1;
		}
	}
	*out = rep;
	return 0;
}

int redis_append(struct redis *r, int argc, const char **argv)
{
	if (redisAppendCommandArgv(r->c, argc, argv, NULL) != REDIS_OK) {
		redis_fail(r, "sending");
		return -1;
	}
	(*r->ops)++;
	return 0;
}

/* One command and its reply, within deadline. */
int redis_call(struct redis *r, __u64 deadline, int argc, const char **argv,
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

int load_scripts(struct redis *r, __u64 deadline)
{
	if (load_script(r, deadline, CLUSTER_LUA_GRANT, r->grant_sha, sizeof(r->grant_sha)) ||
	    load_script(r, deadline, CLUSTER_LUA_HEARTBEAT, r->beat_sha, sizeof(r->beat_sha)))
		return -1;
	return 0;
}

/* Connects, checks that it is Redis (PING answers +PONG) and loads the
 * scripts, all by deadline: 0, or -1 with why (and not_redis when
 * something answered, but not as Redis). */
int redis_connect(struct redis *r, __u64 deadline)
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

void num_arg(char *buf, double v)
{
	snprintf(buf, NUM_MAX, "%.17g", v);
}
