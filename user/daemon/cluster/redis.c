// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* redis: the cluster agent's Redis client: one connection (TCP, TLS or a
 * Unix socket) whose commands hiredis formats and whose replies its reader
 * parses, within REPLY_*_MAX; every read and write bounded by the sync's
 * deadline; AUTH, SELECT and the scripts at connect (after sentinel.c
 * found the master, for sentinel://). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <time.h>
#include <sys/time.h>
#include <hiredis/hiredis.h>
#include <hiredis/sds.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include "core.h"
#include "cluster_lua.h"
#include "redis.h"
#include "rcluster.h"

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
	if (r->ssl)
		SSL_free(r->ssl);
	r->ssl = NULL;
	if (r->c)
		redisFree(r->c);
	r->c = NULL;
	if (r->rc)
		rcluster_close(r);
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
	if (r->too_big)
		snprintf(r->why, sizeof(r->why), "%s: a reply longer than %u bytes or %u elements: "
			 "the agent takes no more", what, REPLY_BYTES_MAX, REPLY_ELEMENTS_MAX);
	/* Something answered, but not as Redis does (or beyond what the
	 * agent asks for): not a server it can use. */
	if ((r->c && r->c->err == REDIS_ERR_PROTOCOL) || r->too_big)
		r->not_redis = true;
	redis_close(r);
	return -1;
}

/*
 * The reply objects of hiredis's reader, as its own make them (freed by
 * freeReplyObject), but within REPLY_BYTES_MAX and REPLY_ELEMENTS_MAX for
 * one reply: past them, NULL, which the reader takes as out of memory and
 * the connection is dropped. An array's header alone ("*2000000000")
 * would otherwise allocate its pointers.
 */
static bool budget(const redisReadTask *task, size_t bytes, size_t elements)
{
	struct redis *r = task->privdata;

	r->reply_bytes += bytes + sizeof(redisReply);
	r->reply_elements += elements + 1;
	if (r->reply_bytes > REPLY_BYTES_MAX || r->reply_elements > REPLY_ELEMENTS_MAX) {
		r->too_big = true;
		return false;
	}
	return true;
}

static redisReply *reply_new(const redisReadTask *task, int type)
{
	redisReply *rep = calloc(1, sizeof(*rep));

	if (rep) {
		rep->type = type;
		if (task->parent)
			((redisReply *)task->parent->obj)->element[task->idx] = rep;
	}
	return rep;
}

static void *reply_string(const redisReadTask *task, char *str, size_t len)
{
	redisReply *rep;
	char *buf;

	if (!budget(task, len + 1, 0))
		return NULL;
	buf = malloc(len + 1);
	if (!buf)
		return NULL;
	rep = reply_new(task, task->type);
	if (!rep) {
		free(buf);
		return NULL;
	}
	memcpy(buf, str, len);
	buf[len] = '\0';
	rep->str = buf;
	rep->len = len;
	return rep;
}

static void *reply_array(const redisReadTask *task, int elements)
{
	redisReply *rep;
	redisReply **el = NULL;

	if (elements < 0 || !budget(task, (size_t)elements * sizeof(redisReply *),
					   (size_t)elements))
		return NULL;
	if (elements > 0) {
		el = calloc((size_t)elements, sizeof(redisReply *));
		if (!el)
			return NULL;
	}
	rep = reply_new(task, REDIS_REPLY_ARRAY);
	if (!rep) {
		free(el);
		return NULL;
	}
	rep->element = el;
	rep->elements = (size_t)elements;
	return rep;
}

static void *reply_integer(const redisReadTask *task, long long v)
{
	redisReply *rep = budget(task, 0, 0) ? reply_new(task, REDIS_REPLY_INTEGER) : NULL;

	if (rep)
		rep->integer = v;
	return rep;
}

static void *reply_nil(const redisReadTask *task)
{
	return budget(task, 0, 0) ? reply_new(task, REDIS_REPLY_NIL) : NULL;
}

static redisReplyObjectFunctions bounded_replies = {
	.createString = reply_string,
	.createArray = reply_array,
	.createInteger = reply_integer,
	.createNil = reply_nil,
	.freeObject = freeReplyObject,
};

/* Bytes from the socket (or its TLS session) into the reader, as
 * redisBufferRead does, but never past REPLY_BYTES_MAX unparsed: 0, or -1
 * with c->err set. */
static int conn_read(struct redis *r)
{
	redisReader *rd = r->c->reader;
	char buf[16 * 1024];
	int n;

	if (rd->len - rd->pos > REPLY_BYTES_MAX) {
		r->too_big = true;
		r->c->err = REDIS_ERR_OOM;
		snprintf(r->c->errstr, sizeof(r->c->errstr), "reply too long");
		return -1;
	}
	if (r->ssl) {
		ERR_clear_error();
		n = SSL_read(r->ssl, buf, sizeof(buf));
		if (n <= 0) {
			int e = SSL_get_error(r->ssl, n);

			if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
				return 0;	/* the deadline is checked again */
			r->c->err = REDIS_ERR_IO;
			snprintf(r->c->errstr, sizeof(r->c->errstr), "%s",
				 e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && !errno) ?
				 "Server closed the connection" : "TLS read failed");
			return -1;
		}
	} else {
		n = (int)read(r->c->fd, buf, sizeof(buf));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n <= 0) {
			r->c->err = REDIS_ERR_IO;
			snprintf(r->c->errstr, sizeof(r->c->errstr), "%s",
				 n ? strerror(errno) : "Server closed the connection");
			return -1;
		}
	}
	if (redisReaderFeed(rd, buf, (size_t)n) != REDIS_OK) {
		r->c->err = rd->err;
		snprintf(r->c->errstr, sizeof(r->c->errstr), "%s", rd->errstr);
		return -1;
	}
	return 0;
}

/* What is buffered of the commands, to the socket (or its TLS session):
 * *done when all of it went. 0, or -1 with c->err set. */
static int conn_write(struct redis *r, int *done)
{
	size_t len = sdslen(r->c->obuf);
	int n;

	if (!r->ssl)
		return redisBufferWrite(r->c, done) == REDIS_OK ? 0 : -1;
	if (len) {
		ERR_clear_error();
		n = SSL_write(r->ssl, r->c->obuf, (int)len);
		if (n <= 0) {
			int e = SSL_get_error(r->ssl, n);

			if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
				r->c->err = REDIS_ERR_IO;
				snprintf(r->c->errstr, sizeof(r->c->errstr), "TLS write failed");
				return -1;
			}
			n = 0;
		}
		sdsrange(r->c->obuf, n, -1);
	}
	*done = !sdslen(r->c->obuf);
	return 0;
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
			if (conn_write(r, &done)) {
				redis_fail(r, "sending");
				return -1;
			}
			continue;
		}
		if (conn_read(r)) {
			redis_fail(r, "reading");
			return -1;
		}
	}
	/* The next reply's budget starts anew. */
	r->reply_bytes = r->reply_elements = 0;
	*out = rep;
	return r->rc ? rcluster_reply(r, deadline, out) : 0;
}

int redis_script_reply(struct redis *r, __u64 deadline, redisReply **out)
{
	if (redis_reply(r, deadline, out))
		return -1;
	if ((*out)->type == REDIS_REPLY_ERROR && !strncmp((*out)->str, "NOSCRIPT", 8)) {
		freeReplyObject(*out);
		*out = NULL;
		return 1;
	}
	return 0;
}

int reply_refused(struct redis *r, const char *who, redisReply *rep)
{
	char what[128];

	reply_text(rep, what, sizeof(what));
	snprintf(r->why, sizeof(r->why), "%s answered %s", who, what);
	freeReplyObject(rep);
	redis_close(r);
	return -1;
}

int redis_append(struct redis *r, int argc, const char **argv)
{
	if (redisAppendCommandArgv(r->c, argc, argv, NULL) != REDIS_OK) {
		redis_fail(r, "sending");
		return -1;
	}
	if (r->rc && rcluster_sent(r, argc, argv)) {
		redis_close(r);
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

/* The TLS handshake over the connected socket, the server's certificate
 * checked against the CA and the URL's host, by deadline: 0, or -1. */
static int tls_start(struct redis *r, __u64 deadline)
{
	X509_VERIFY_PARAM *vp;
	unsigned char ip[16];
	long v;
	bool addr;
	int ret;

	r->ssl = SSL_new(r->tls);
	if (!r->ssl || SSL_set_fd(r->ssl, r->c->fd) != 1) {
		snprintf(r->why, sizeof(r->why), "TLS: out of memory");
		redis_close(r);
		return -1;
	}
	SSL_set_mode(r->ssl, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	vp = SSL_get0_param(r->ssl);
	addr = inet_pton(r->url.v6 ? AF_INET6 : AF_INET, r->url.host, ip) == 1;
	if (addr ? X509_VERIFY_PARAM_set1_ip_asc(vp, r->url.host) != 1 :
		   (SSL_set_tlsext_host_name(r->ssl, r->url.host) != 1 ||
		    SSL_set1_host(r->ssl, r->url.host) != 1)) {
		snprintf(r->why, sizeof(r->why), "TLS: cannot check the name %s", r->url.host);
		redis_close(r);
		return -1;
	}
	for (;;) {
		__u64 now = mono_now_ns();

		if (now >= deadline) {
			snprintf(r->why, sizeof(r->why), "TLS: no handshake within %llu ms",
				 (unsigned long long)(r->timeout_ns / 1000000));
			redis_close(r);
			return -1;
		}
		redisSetTimeout(r->c, tv_of(deadline - now));
		ERR_clear_error();
		ret = SSL_connect(r->ssl);
		if (ret == 1)
			return 0;
		ret = SSL_get_error(r->ssl, ret);
		if (ret != SSL_ERROR_WANT_READ && ret != SSL_ERROR_WANT_WRITE)
			break;
	}
	v = SSL_get_verify_result(r->ssl);
	/* A server that does not prove itself is not one the agent can use. */
	r->not_redis = v != X509_V_OK;
	if (v != X509_V_OK)
		snprintf(r->why, sizeof(r->why), "TLS: the server's certificate: %s (give "
			 "--redis-ca FILE, the CA that signed it)", X509_verify_cert_error_string(v));
	else
		snprintf(r->why, sizeof(r->why), "TLS handshake: %s",
			 ERR_reason_error_string(ERR_peek_last_error()) ?
			 ERR_reason_error_string(ERR_peek_last_error()) : "the server closed it");
	ERR_clear_error();
	redis_close(r);
	return -1;
}

/* One command at connect, whose reply must be +OK (AUTH, SELECT): 0, or
 * -1 with why; a refusal marks not_redis (the agent cannot use it). The
 * arguments (a password) are never part of why. */
static int call_ok(struct redis *r, __u64 deadline, int argc, const char **argv)
{
	char what[128];
	redisReply *rep;

	if (redis_call(r, deadline, argc, argv, &rep))
		return -1;
	if (rep->type == REDIS_REPLY_STATUS && !strcmp(rep->str, "OK")) {
		freeReplyObject(rep);
		return 0;
	}
	reply_text(rep, what, sizeof(what));
	snprintf(r->why, sizeof(r->why), "%s answered %s", argv[0], what);
	r->not_redis = true;
	freeReplyObject(rep);
	redis_close(r);
	return -1;
}

/* A connection just made (r->c): its replies bounded by REPLY_*_MAX as
 * every reply the agent reads. 0, or -1 with why when it failed. */
static int conn_ready(struct redis *r)
{
	if (!r->c) {
		snprintf(r->why, sizeof(r->why), "out of memory");
		return -1;
	}
	if (r->c->err)
		return redis_fail(r, "connecting");
	r->c->reader->fn = &bounded_replies;
	r->c->reader->privdata = r;
	r->too_big = false;
	r->reply_bytes = r->reply_elements = 0;
	return 0;
}

static struct timeval tv_left(__u64 deadline)
{
	__u64 now = mono_now_ns();

	return tv_of(deadline > now ? deadline - now : 0);
}

int redis_dial(struct redis *r, const char *host, int port, __u64 deadline)
{
	r->c = redisConnectWithTimeout(host, port, tv_left(deadline));
	return conn_ready(r);
}

/* The connection, TLS over it, AUTH and SELECT: 0, or -1 with why. */
int redis_open(struct redis *r, __u64 deadline)
{
	const char *auth[3] = { "AUTH" };
	int nauth = 1;
	char db[NUM_MAX];
	const char *sel[] = { "SELECT", db };

	if (r->url.kind == REDIS_UNIX)
		r->c = redisConnectUnixWithTimeout(r->url.path, tv_left(deadline));
	else
		r->c = redisConnectWithTimeout(r->url.host, r->url.port, tv_left(deadline));
	if (conn_ready(r))
		return -1;
	if (r->tls && tls_start(r, deadline))
		return -1;
	/* AUTH USER PASSWORD for an ACL user, AUTH PASSWORD for requirepass. */
	if (r->url.user[0])
		auth[nauth++] = r->url.user;
	auth[nauth++] = r->password;
	if (r->password[0] && call_ok(r, deadline, nauth, auth))
		return -1;
	snprintf(db, sizeof(db), "%d", r->url.db);
	if (r->url.db && call_ok(r, deadline, 2, sel))
		return -1;
	return 0;
}

/* Connects, checks that it is Redis (PING answers +PONG) and loads the
 * scripts, all by deadline: 0, or -1 with why (and not_redis when
 * something answered, but not as Redis, or refused the agent). */
int redis_connect(struct redis *r, __u64 deadline)
{
	const char *ping[] = { "PING" };
	char what[128];
	redisReply *rep;

	redis_close(r);
	r->not_redis = false;
	/* sentinel://: the master's address from the sentinels, and ROLE
	 * master from it (sentinel.c); --redis-cluster: the tag's slot's
	 * owner from the cluster's map (rcluster.c). */
	if (r->url.kind == REDIS_SENTINEL && sentinel_locate(r, deadline))
		return -1;
	if ((r->rc && rcluster_locate(r, deadline)) || redis_open(r, deadline))
		return -1;
	if (r->url.kind == REDIS_SENTINEL && sentinel_check_role(r, deadline))
		return -1;
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
