/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The cluster agent's Redis side: the redis:// URL it is given (url.c) and
 * its one connection over hiredis (redis.c). */
#ifndef SLUICE_CLUSTER_REDIS_H
#define SLUICE_CLUSTER_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <hiredis/hiredis.h>
#include "core.h"

#define REDIS_URL_IN_MAX	100	/* longest URL taken: its canonical form fits the state */
#define NUM_MAX			32	/* a number as a Redis argument */

/* Where the password comes from when no --redis-password-file is given. */
#define REDIS_PASSWORD_ENV	"SLUICE_REDIS_PASSWORD"
#define REDIS_PASSWORD_MAX	512	/* bytes of a password, at most */
/* What the agent takes of one reply, at most: a Redis (or whatever answers
 * in its place) sends no more into the agent's memory than this. The
 * largest reply it asks for is the heartbeat's, PEERS_ANSWER_MAX members
 * of PEER_MEMBER_MAX bytes and their scores: about 60 KiB. */
#define REPLY_BYTES_MAX		(1024U * 1024)	/* bytes buffered, and held in replies */
#define REPLY_ELEMENTS_MAX	4096U		/* elements of one reply, all levels */

enum redis_kind { REDIS_TCP, REDIS_TLS, REDIS_UNIX, REDIS_SENTINEL };

/* sentinel://: sentinels named in the URL, at most (a Sentinel setup has
 * three or five; each answers for the others). */
#define REDIS_SENTINELS_MAX	5
struct redis_sentinel {
	char host[REDIS_URL_IN_MAX];
	int port;
	bool v6;
};

struct redis_url {
	enum redis_kind kind;
	char host[REDIS_URL_IN_MAX];
	int port;
	bool v6;
	char path[REDIS_URL_IN_MAX];		/* unix:// */
	char user[64];				/* the ACL user, "" for the default one */
	int db;
	char text[SLUICE_CLUSTER_URL_MAX];	/* as status and the logs show it: no password */
	/* sentinel://: whom to ask for the master's address, which sentinel.c
	 * puts into host, port and v6 before each connect */
	struct redis_sentinel sentinel[REDIS_SENTINELS_MAX];
	int nsentinels;
	char master[SLUICE_CLUSTER_NAME_MAX];	/* the sentinels' name of it */
};

/* url.c */
/* redis://[USER@]HOST[:PORT][/DB], rediss://..., unix://[USER@]/PATH[?db=DB]
 * or sentinel://[USER@]HOST:PORT[,HOST:PORT...]/MASTER[?db=DB]: 0, or a
 * usage error printed (a password in it refused, never echoed). */
int parse_url(const char *s, struct redis_url *u);
/* HOST[:PORT] at h (IPv6 in brackets) into u's host, port and v6, *rest
 * past it: NULL, or what is wrong with it (a constant, or why's text). */
const char *host_port_parse(const char *h, struct redis_url *u, const char **rest, char *why,
			    size_t len);
/* 1 to 63 of [A-Za-z0-9._-]. */
bool node_name_ok(const char *s);

struct ssl_ctx_st;
struct ssl_st;
struct rcluster;

/* sentinel.c's memory from one connect to the next. */
struct sentinel_track {
	int first;		/* the sentinel asked first */
	int answered;		/* the one whose address was used last */
	bool asked;		/* one has answered since the agent started */
	bool confirmed;		/* that address answered ROLE as the master */
	char primary[REDIS_URL_IN_MAX + 8];	/* HOST:PORT confirmed last, "" none */
};

struct redis {
	redisContext *c;		/* NULL when not connected */
	struct ssl_st *ssl;		/* rediss://: the TLS session over c's socket */
	struct redis_url url;
	struct ssl_ctx_st *tls;		/* rediss://: the CA, and the client's cert */
	char password[REDIS_PASSWORD_MAX];	/* "" for none */
	size_t reply_bytes, reply_elements;	/* the reply being read so far */
	bool too_big;			/* that reply went past REPLY_*_MAX */
	__u64 timeout_ns;		/* S/2, at least REDIS_TIMEOUT_MIN_NS */
	char grant_sha[48], beat_sha[48];
	__u64 *ops;			/* commands sent, counted here */
	char why[160];			/* the last failure */
	bool not_redis;			/* it answered, but not as Redis does */
	struct rcluster *rc;		/* --redis-cluster: rcluster.c's; NULL: one Redis */
	struct sentinel_track st;	/* sentinel:// (sentinel.c) */
};

void redis_close(struct redis *r);
/* What a reply was, for a message: its text, or its kind. */
void reply_text(const redisReply *rep, char *buf, size_t len);
/* The next reply, complete by deadline (CLOCK_MONOTONIC): 0, or -1 with
 * the connection closed. */
int redis_reply(struct redis *r, __u64 deadline, redisReply **out);
/* The next reply, of an EVALSHA: 0 with it in *out; 1 when Redis forgot
 * the script (NOSCRIPT: load and send again), nothing in *out; -1 as
 * redis_reply. */
int redis_script_reply(struct redis *r, __u64 deadline, redisReply **out);
/* A reply that is not what who answers: why says so, rep is freed and the
 * connection closed. -1. */
int reply_refused(struct redis *r, const char *who, redisReply *rep);
/* Queues one command (sent by the next redis_reply): 0, or -1. */
int redis_append(struct redis *r, int argc, const char **argv);
/* One command and its reply, within deadline. */
int redis_call(struct redis *r, __u64 deadline, int argc, const char **argv, redisReply **out);
/* SCRIPT LOAD of the grant and heartbeat scripts: 0, or -1 (why said). */
int load_scripts(struct redis *r, __u64 deadline);
/* The connection to r->url's node, TLS, AUTH and SELECT: 0, or -1 with why. */
int redis_open(struct redis *r, __u64 deadline);
/* Connects, checks that it is Redis and loads the scripts, by deadline:
 * 0, or -1 with why (and not_redis when something answered, but not as
 * Redis). */
int redis_connect(struct redis *r, __u64 deadline);
/* A plain TCP connection to host:port by deadline, its replies bounded:
 * 0, or -1 with why. */
int redis_dial(struct redis *r, const char *host, int port, __u64 deadline);
/* sentinel.c */
/* The master's address from the sentinels, in turn, into r->url's host,
 * port and v6: 0, or -1 with why. */
int sentinel_locate(struct redis *r, __u64 deadline);
/* ROLE on the connection: 0 when it is the master; else -1 with why and
 * the connection closed (the sentinels are asked again at the next). */
int sentinel_check_role(struct redis *r, __u64 deadline);
/* The credentials and the TLS terms of join's options, read before the
 * agent starts: 0, or a usage error (exit 2) printed. */
struct redis_auth_files {
	const char *password_file, *ca, *cert, *key;
};
int redis_setup(struct redis *r, const struct redis_auth_files *f);
/* Frees what redis_setup took (the password wiped). */
void redis_teardown(struct redis *r);
/* v as a Redis argument, into buf of NUM_MAX. */
void num_arg(char *buf, double v);

#endif /* SLUICE_CLUSTER_REDIS_H */
