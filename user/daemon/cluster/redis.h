/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The cluster agent's Redis side: the redis:// URL it is given (url.c) and
 * its one connection over hiredis (redis.c). */
#ifndef SLUICE_CLUSTER_REDIS_H
#define SLUICE_CLUSTER_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <hiredis/hiredis.h>
#include "sluice.h"

#define REDIS_URL_IN_MAX	100	/* longest URL taken: its canonical form fits the state */
#define NUM_MAX			32	/* a number as a Redis argument */

struct redis_url {
	char host[REDIS_URL_IN_MAX];
	int port;
	char text[SLUICE_CLUSTER_URL_MAX];	/* redis://HOST:PORT, as status shows it */
};

/* url.c */
int parse_url(const char *s, struct redis_url *u);
/* 1 to 63 of [A-Za-z0-9._-]. */
bool node_name_ok(const char *s);

struct redis {
	redisContext *c;		/* NULL when not connected */
	struct redis_url url;
	__u64 timeout_ns;		/* S/2, at least REDIS_TIMEOUT_MIN_NS */
	char grant_sha[48], beat_sha[48];
	__u64 *ops;			/* commands sent, counted here */
	char why[160];			/* the last failure */
	bool not_redis;			/* it answered, but not as Redis does */
};

void redis_close(struct redis *r);
/* What a reply was, for a message: its text, or its kind. */
void reply_text(const redisReply *rep, char *buf, size_t len);
/* The next reply, complete by deadline (CLOCK_MONOTONIC): 0, or -1 with
 * the connection closed. */
int redis_reply(struct redis *r, __u64 deadline, redisReply **out);
/* Queues one command (sent by the next redis_reply): 0, or -1. */
int redis_append(struct redis *r, int argc, const char **argv);
/* One command and its reply, within deadline. */
int redis_call(struct redis *r, __u64 deadline, int argc, const char **argv, redisReply **out);
/* SCRIPT LOAD of the grant and heartbeat scripts: 0, or -1 (why said). */
int load_scripts(struct redis *r, __u64 deadline);
/* Connects, checks that it is Redis and loads the scripts, by deadline:
 * 0, or -1 with why (and not_redis when something answered, but not as
 * Redis). */
int redis_connect(struct redis *r, __u64 deadline);
/* v as a Redis argument, into buf of NUM_MAX. */
void num_arg(char *buf, double v);

#endif /* SLUICE_CLUSTER_REDIS_H */
