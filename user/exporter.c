// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* exporter: `sluice exporter`, Prometheus metrics of every attached
 * interface, read from the pinned maps at each scrape, served by
 * libmicrohttpd's thread pool as an unprivileged user that can only read
 * the pins. Read-only: no endpoint changes anything. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <microhttpd.h>
#include "sluice.h"
#include "cli.h"
#include "privdrop.h"
#include "prom.h"
#include "rule.h"
#include "sources.h"

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.0.0"
#endif

#define LISTEN_DEFAULT		"127.0.0.1:9464"
#define LISTEN_BACKLOG		256	/* a burst of connects waits for no SYN retry */
#define HTTP_THREADS		4	/* scrapes served at once */
/* Slow or stalled clients (slowloris) must not lock out a scrape. Every
 * connection has HTTP_DEADLINE_S for its whole request, counted from the
 * accept or from the end of its previous request, however it trickles.
 * Connections that wait for a request (not being answered) are limited to
 * HTTP_WAITING_PER_ADDR per client address and HTTP_WAITING_LIMIT in all:
 * past either, the oldest waiting one is closed, never the newcomer, so a
 * scrape gets in even from an address the stalled clients share. */
#define HTTP_DEADLINE_S		5
#define HTTP_WAITING_PER_ADDR	8
#define HTTP_WAITING_LIMIT	128
#define HTTP_CONN_LIMIT		256	/* libmicrohttpd's hard limits, */
#define HTTP_CONN_PER_ADDR	64	/* only reached by a connect flood */
#define MAX_IFACES		1024

static const char metrics_type[] = "text/plain; version=0.0.4; charset=utf-8";

static const char index_page[] =
	"<!DOCTYPE html>\n"
	"<html><head><meta charset=\"utf-8\"><title>sluice exporter</title></head>\n"
	"<body><h1>sluice exporter</h1>\n"
	"<p><a href=\"/metrics\">/metrics</a>: counters of every interface sluice is attached to.</p>\n"
	"</body></html>\n";

/* One open HTTP connection, on the list of struct conns (oldest first). */
struct conn {
	struct conn *prev, *next;
	int fd;
	struct in6_addr peer;		/* the client's address, IPv4 as v4-mapped */
	__u64 since_ns;			/* accepted, or its last request completed */
	bool busy;			/* a request is being answered */
	bool closing;			/* shut down by us; libmicrohttpd closes it */
};

/* Every connection, for the deadline and the waiting limits. Connection
 * callbacks run on the server's threads, the reaper on its own. */
struct conns {
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* on CLOCK_MONOTONIC */
	struct conn *head, *tail;
	bool stop;
	pthread_t reaper;
};

/* Shared by every server thread: srcs is set before the server starts
 * and only read afterwards; log_requests is switched off once, atomically. */
struct exporter {
	struct src_counter *srcs;	/* NULL: count by walking the table */
	int log_requests;		/* libmicrohttpd's per-request errors; atomic */
	struct conns conns;
};

static long tracked_sources(const struct exporter *ex, const struct sluice_maps *m)
{
	__u32 id;
	long n;

	if (ex->srcs) {
		id = map_id(m->src_buckets);
		n = id ? src_counter_get(ex->srcs, id) : -ENOENT;
		if (n >= 0)
			return n;
	}
	return sources_walk(m->src_buckets);
}

static void rule_sample(const struct rule *r, bool is_default, struct prom_rule *out)
{
	if (is_default)
		snprintf(out->policy, sizeof(out->policy), "default");
	else
		rule_cidr_str(r, out->policy, sizeof(out->policy));
	out->match_flags = r->match.flags;
	out->proto = r->match.proto;
	out->dport_lo = r->match.dport_lo;
	out->dport_hi = r->match.dport_hi;
	out->action = r->action;
	out->kind = action_name(r->action);
	out->unit = r->unit;
	out->rate = r->rate;
	out->period = r->period;
	out->burst = r->burst;
	out->per = r->per;
	out->per_len = r->per_len;
	out->ban_ns = r->ban_ns;
	out->monitor = r->monitor;
	out->algo = algo_name(r->algo);
	out->window_ns = r->algo != SLUICE_ALGO_TOKEN_BUCKET ? r->window_ns : 0;
}

/* The default first, then each rule, with its counters. */
static int sample_rules(const struct sluice_maps *m, struct prom_iface *s)
{
	struct policy *p = malloc(sizeof(*p));
	int err = -1;

	if (!p)
		return -1;
	if (policy_read(m, p))
		goto out;
	s->rules = calloc(p->n + 1, sizeof(*s->rules));
	if (!s->rules)
		goto out;
	for (unsigned int i = 0; i <= p->n; i++, s->nrules++) {
		const struct rule *r = i ? &p->rules[i - 1] : &p->def;

		rule_sample(r, i == 0, &s->rules[i]);
		if (read_policy_counter(m, i ? r->index : SLUICE_POLICY_DEFAULT, &s->rules[i].c))
			goto out;
	}
	err = 0;
out:
	free(p);
	return err;
}

/* Everything about one interface, or -1 if its pins could not be read
 * (detached meanwhile, say): then it is left out of this scrape. */
static int sample_iface(const struct exporter *ex, const char *iface, struct prom_iface *s)
{
	struct sluice_counter c[SLUICE_R_MAX];
	struct sluice_maps m;
	struct sluice_meta meta;
	int err = -1;

	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", iface);
	if (maps_try_open_ro(iface, &m))
		return -1;
	if (read_meta(&m, &meta) || read_counters(&m, c) || sample_rules(&m, s))
		goto out;
	s->mode = mode_name(meta.xdp_mode);
	s->prog_id = meta.prog_id;
	s->multiprog = meta.multiprog;
	for (__u32 r = 0; r < SLUICE_R_MAX; r++, s->nreasons++) {
		s->reasons[r].name = reason_name(r);
		s->reasons[r].drop = sluice_reason_is_drop(r);
		s->reasons[r].c = c[r];
	}
	s->sources = tracked_sources(ex, &m);
	s->capacity = map_capacity(m.src_buckets);
	if (s->sources < 0 || read_event(&m, SLUICE_EV_NEW_SOURCE_ADMITTED, &s->new_sources) ||
	    new_sources_read(&m, &s->budget_rate, &s->budget_period, &s->budget_burst))
		goto out;
	err = 0;
out:
	maps_close(&m);
	if (err) {
		free(s->rules);
		s->rules = NULL;
	}
	return err;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The whole /metrics body, malloc()ed; NULL when out of memory. */
static char *render_metrics(const struct exporter *ex, size_t *len,
			    unsigned int *nifaces, unsigned int *nskipped)
{
	char (*names)[IF_NAMESIZE] = calloc(MAX_IFACES, sizeof(*names));
	struct prom_scrape scrape = { .version = SLUICE_VERSION };
	struct prom_iface *s = NULL;
	unsigned int skipped = 0;
	__u64 t0 = mono_now_ns();
	size_t n = 0;
	char *body = NULL;
	FILE *f;
	int count, err;

	*len = 0;
	if (!names)
		return NULL;
	count = list_attached(names, MAX_IFACES);
	qsort(names, (size_t)count, sizeof(*names), name_cmp);	/* stable output order */
	s = calloc(count ? (size_t)count : 1, sizeof(*s));
	if (!s)
		goto out;
	for (int i = 0; i < count; i++) {
		if (opts.iface && strcmp(opts.iface, names[i]) != 0)
			continue;
		if (sample_iface(ex, names[i], &s[n]))
			skipped++;
		else
			n++;
	}
	f = open_memstream(&body, len);
	if (!f)
		goto out;
	scrape.ifaces = s;
	scrape.nifaces = n;
	scrape.skipped = skipped;
	scrape.duration_s = (double)(mono_now_ns() - t0) / SLUICE_NS_PER_SEC;
	err = prom_write(f, &scrape);
	if (fclose(f) || err) {
		free(body);
		body = NULL;
	}
	if (nifaces)
		*nifaces = (unsigned int)n;
	if (nskipped)
		*nskipped = skipped;
out:
	for (size_t i = 0; i < n; i++)
		free(s[i].rules);
	free(s);
	free(names);
	return body;
}

/* --- connections: the whole-request deadline and the waiting limits --- */

static void conn_unlink(struct conns *cs, struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		cs->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		cs->tail = c->prev;
	c->prev = c->next = NULL;
}

static void conn_append(struct conns *cs, struct conn *c)
{
	c->prev = cs->tail;
	c->next = NULL;
	if (cs->tail)
		cs->tail->next = c;
	else
		cs->head = c;
	cs->tail = c;
}

/* libmicrohttpd closes the connection at its next event; the fd stays
 * valid until then because it calls on_connection(CLOSED), which takes
 * the lock we hold, before closing it. */
static void conn_shut(struct conn *c)
{
	c->closing = true;
	shutdown(c->fd, SHUT_RDWR);
}

static bool conn_waiting(const struct conn *c)
{
	return !c->busy && !c->closing;
}

static bool same_peer(const struct conn *a, const struct conn *b)
{
	return !memcmp(&a->peer, &b->peer, sizeof(a->peer));
}

/* After nc joined: the oldest waiting connection goes when its address,
 * or everyone, is over the limit. nc is the newest, so it stays. */
static void enforce_waiting_limits(struct conns *cs, const struct conn *nc)
{
	struct conn *oldest_peer = NULL, *oldest = NULL;
	unsigned int per_peer = 0, all = 0;

	for (struct conn *c = cs->head; c; c = c->next) {
		if (!conn_waiting(c))
			continue;
		if (!oldest)
			oldest = c;
		all++;
		if (same_peer(c, nc)) {
			if (!oldest_peer)
				oldest_peer = c;
			per_peer++;
		}
	}
	if (per_peer > HTTP_WAITING_PER_ADDR && oldest_peer != nc) {
		conn_shut(oldest_peer);
		all--;
		if (oldest == oldest_peer)
			for (oldest = cs->head; oldest && !conn_waiting(oldest); oldest = oldest->next)
				;
	}
	if (all > HTTP_WAITING_LIMIT && oldest && oldest != nc)
		conn_shut(oldest);
}

static void peer_of(struct MHD_Connection *mc, struct in6_addr *out)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	memset(out, 0, sizeof(*out));
	if (sa && sa->sa_family == AF_INET6) {
		*out = ((const struct sockaddr_in6 *)sa)->sin6_addr;
	} else if (sa && sa->sa_family == AF_INET) {
		out->s6_addr[10] = out->s6_addr[11] = 0xff;
		memcpy(&out->s6_addr[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
	}
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
			  enum MHD_ConnectionNotificationCode what)
{
	struct conns *cs = &((struct exporter *)cls)->conns;
	struct conn *c = *socket_context;
	const union MHD_ConnectionInfo *ci;

	if (what == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!c)
			return;
		pthread_mutex_lock(&cs->lock);
		conn_unlink(cs, c);
		pthread_mutex_unlock(&cs->lock);
		free(c);
		*socket_context = NULL;
		return;
	}
	ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {	/* untracked means no deadline: refuse it */
		shutdown(ci->connect_fd, SHUT_RDWR);
		return;
	}
	c->fd = ci->connect_fd;
	peer_of(mc, &c->peer);
	pthread_mutex_lock(&cs->lock);
	c->since_ns = mono_now_ns();	/* under the lock: the list stays in order */
	conn_append(cs, c);
	enforce_waiting_limits(cs, c);
	pthread_cond_signal(&cs->wake);
	pthread_mutex_unlock(&cs->lock);
	*socket_context = c;
}

/* busy: a request's headers are in; not busy: it was answered, and the
 * deadline starts again for the next one on this connection. */
static void conn_set_busy(struct exporter *ex, struct MHD_Connection *mc, bool busy)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conns *cs = &ex->conns;
	struct conn *c = ci ? ci->socket_context : NULL;

	if (!c)
		return;
	pthread_mutex_lock(&cs->lock);
	if (c->busy && !busy) {
		c->since_ns = mono_now_ns();
		conn_unlink(cs, c);
		conn_append(cs, c);
	}
	c->busy = busy;
	pthread_mutex_unlock(&cs->lock);
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)req_cls;
	(void)toe;
	conn_set_busy(cls, mc, false);
}

/* Shuts down every connection past its deadline, then sleeps until the
 * next deadline (the list is oldest first) or a new connection. */
static void *reaper(void *arg)
{
	struct conns *cs = arg;
	const __u64 deadline = (__u64)HTTP_DEADLINE_S * SLUICE_NS_PER_SEC;

	pthread_mutex_lock(&cs->lock);
	while (!cs->stop) {
		__u64 now = mono_now_ns(), next = 0;
		struct timespec ts;

		for (struct conn *c = cs->head; c; c = c->next) {
			if (c->closing)
				continue;
			if (now - c->since_ns < deadline) {
				next = c->since_ns + deadline;
				break;
			}
			conn_shut(c);
		}
		if (!next) {
			pthread_cond_wait(&cs->wake, &cs->lock);
			continue;
		}
		ts.tv_sec = (time_t)(next / SLUICE_NS_PER_SEC);
		ts.tv_nsec = (long)(next % SLUICE_NS_PER_SEC);
		pthread_cond_timedwait(&cs->wake, &cs->lock, &ts);
	}
	pthread_mutex_unlock(&cs->lock);
	return NULL;
}

static int conns_start(struct conns *cs)
{
	pthread_condattr_t ca;
	int err;

	memset(cs, 0, sizeof(*cs));
	pthread_mutex_init(&cs->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cs->wake, &ca);
	pthread_condattr_destroy(&ca);
	err = pthread_create(&cs->reaper, NULL, reaper, cs);
	if (err) {
		pthread_cond_destroy(&cs->wake);
		pthread_mutex_destroy(&cs->lock);
	}
	return err;
}

/* After the server stopped: every connection is gone. */
static void conns_stop(struct conns *cs)
{
	pthread_mutex_lock(&cs->lock);
	cs->stop = true;
	pthread_cond_signal(&cs->wake);
	pthread_mutex_unlock(&cs->lock);
	pthread_join(cs->reaper, NULL);
	pthread_cond_destroy(&cs->wake);
	pthread_mutex_destroy(&cs->lock);
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status,
			     const char *type, const char *body, size_t len,
			     enum MHD_ResponseMemoryMode mem, const char *allow)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, mem);
	enum MHD_Result ret;

	if (!r) {
		if (mem == MHD_RESPMEM_MUST_FREE)
			free((void *)body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned int status,
				  const char *text, const char *allow)
{
	return reply(conn, status, "text/plain; charset=utf-8", text, strlen(text),
		     MHD_RESPMEM_PERSISTENT, allow);
}

/* An HTTP method must be a token (RFC 9110 5.6.2); libmicrohttpd passes
 * on anything up to the first space. */
static bool is_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s >= 127 || strchr("\"(),/:;<=>?@[\\]{}", *s))
			return false;
	return true;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	struct exporter *ex = cls;
	char *body;
	size_t len;

	(void)version;
	(void)upload_data;
	conn_set_busy(ex, conn, true);
	/* Refused at once, before any body is read (the connection closes).
	 * HEAD gets GET's headers; libmicrohttpd leaves the body out. */
	if (!is_token(method))
		return reply_text(conn, MHD_HTTP_BAD_REQUEST, "400 bad request: malformed method\n",
				  NULL);
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "405 method not allowed: this exporter is read-only, use GET\n",
				  "GET, HEAD");
	/* The first call brings the headers; answering on the next one, with
	 * the request complete, lets libmicrohttpd keep the connection alive. */
	if (!*req_cls) {
		*req_cls = conn;	/* any non-NULL mark */
		return MHD_YES;
	}
	if (*upload_data_size) {	/* a body we do not want */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (!strcmp(url, "/"))
		return reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8", index_page,
			     strlen(index_page), MHD_RESPMEM_PERSISTENT, NULL);
	if (strcmp(url, "/metrics") != 0)
		return reply_text(conn, MHD_HTTP_NOT_FOUND,
				  "404 not found: metrics are at /metrics\n", NULL);
	body = render_metrics(ex, &len, NULL, NULL);
	if (!body)
		return reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  "500 out of memory\n", NULL);
	return reply(conn, MHD_HTTP_OK, metrics_type, body, len, MHD_RESPMEM_MUST_FREE, NULL);
}

/* Startup errors always; once serving, a malformed request is answered,
 * not logged (anyone who can connect could fill the journal), unless
 * SLUICE_DEBUG is set. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct exporter *ex = cls;
	char msg[256];
	size_t n;

	if (!__atomic_load_n(&ex->log_requests, __ATOMIC_RELAXED))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	err_msg("exporter: %s", msg);
}

/* "A.B.C.D:PORT" or "[V6]:PORT"; false on anything else. Port 0 asks the
 * kernel for a free one. */
static bool parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *port;
	__u64 p;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		colon = strchr(s, ']');
		if (!colon || colon[1] != ':' || (size_t)(colon - s - 1) >= sizeof(host))
			return false;
		memcpy(host, s + 1, (size_t)(colon - s - 1));
		host[colon - s - 1] = '\0';
		port = colon + 2;
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return false;
		s6->sin6_family = AF_INET6;
		*len = sizeof(*s6);
	} else {
		colon = strrchr(s, ':');
		if (!colon || (size_t)(colon - s) >= sizeof(host))
			return false;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = '\0';
		port = colon + 1;
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return false;
		s4->sin_family = AF_INET;
		*len = sizeof(*s4);
	}
	if (!parse_u64(port, 0, 65535, &p))
		return false;
	if (ss->ss_family == AF_INET6)
		s6->sin6_port = htons((__u16)p);
	else
		s4->sin_port = htons((__u16)p);
	return true;
}

static void format_sockaddr(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(s4->sin_port));
	}
}

/* A bound, listening socket, or -1 after saying why. */
static int open_listener(const char *spec, const struct sockaddr_storage *ss, socklen_t len,
			 char *bound, size_t bound_len)
{
	struct sockaddr_storage got;
	socklen_t got_len = sizeof(got);
	int one = 1, fd, err;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err_msg("cannot create a socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, len) || listen(fd, LISTEN_BACKLOG)) {
		err = errno;
		close(fd);
		if (err == EADDRINUSE)
			err_msg("cannot listen on %s: address in use: stop the other server "
				"or pick another --listen", spec);
		else if (err == EADDRNOTAVAIL)
			err_msg("cannot listen on %s: no local interface has that address: "
				"try 127.0.0.1:9464", spec);
		else if (err == EACCES)
			err_msg("cannot listen on %s: ports below 1024 need root or "
				"CAP_NET_BIND_SERVICE", spec);
		else
			err_msg("cannot listen on %s: %s", spec, strerror(err));
		return -1;
	}
	if (getsockname(fd, (struct sockaddr *)&got, &got_len))
		got = *ss;
	format_sockaddr(&got, bound, bound_len);
	return fd;
}

/* Positions in exporter_opts. */
enum { EO_LISTEN, EO_USER, EO_GROUP };

static const struct cli_opt exporter_opts[] = {
	[EO_LISTEN] = CLI_OPT("listen", 0, "ADDR:PORT",
			      "where to serve (default " LISTEN_DEFAULT "; port 0 picks a free one)",
			      0, NULL),
	[EO_USER] = CLI_OPT("user", 0, "USER", "run as USER once listening (default "
			    RUN_AS_USER_DEFAULT ")", 0, NULL),
	[EO_GROUP] = CLI_OPT("group", 0, "GROUP", "in GROUP, the pins' group (default "
			     RUN_AS_GROUP_DEFAULT ")", 0, NULL),
	CLI_OPT_END,
};

static int exporter_run(const struct cli_cmd *c, struct cli_args *a)
{
	const char *listen_spec = a->val[EO_LISTEN] ? a->val[EO_LISTEN] : LISTEN_DEFAULT;
	const char *user = a->val[EO_USER] ? a->val[EO_USER] : RUN_AS_USER_DEFAULT;
	const char *group = a->val[EO_GROUP] ? a->val[EO_GROUP] : RUN_AS_GROUP_DEFAULT;
	struct exporter ex = { .log_requests = 1 };
	struct MHD_Daemon *d = NULL;
	struct sockaddr_storage ss;
	char bound[INET6_ADDRSTRLEN + 16], privs[160];
	unsigned int nifaces = 0, nskipped = 0;
	struct run_as ra;
	sigset_t stop;
	socklen_t sslen;
	size_t len;
	char *body;
	int fd, sig, err;

	(void)c;
	if (opts.json)
		return usage_err("the exporter has no JSON output: drop -j");
	if (!parse_listen(listen_spec, &ss, &sslen))
		return usage_err("bad --listen '%s': give ADDR:PORT, e.g. 127.0.0.1:9464 or [::1]:9464",
				 listen_spec);
	err = run_as_lookup(user, group, &ra);
	if (err)
		return err;

	/* What needs privilege first: the socket (a port below 1024) and the
	 * source-counting iterator; then down to USER for good. */
	fd = open_listener(listen_spec, &ss, sslen, bound, sizeof(bound));
	if (fd < 0)
		return EXIT_RUNTIME;
	ex.srcs = src_counter_open();
	err = run_as_switch(&ra, privs, sizeof(privs));
	if (!err && (err = conns_start(&ex.conns)))
		err = runtime_err("cannot start a thread: %s", strerror(err));
	if (err) {
		close(fd);
		src_counter_close(ex.srcs);
		return err;
	}

	/* Server threads inherit this mask; only sigwait() below sees them. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	d = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL,
			     on_request, &ex,
			     MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, &ex,
			     MHD_OPTION_LISTEN_SOCKET, fd,
			     MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)HTTP_THREADS,
			     MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTP_CONN_LIMIT,
			     MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)HTTP_CONN_PER_ADDR,
			     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)HTTP_DEADLINE_S,
			     MHD_OPTION_NOTIFY_CONNECTION, on_connection, &ex,
			     MHD_OPTION_NOTIFY_COMPLETED, on_completed, &ex,
			     MHD_OPTION_STRICT_FOR_CLIENT, 1,
			     MHD_OPTION_END);
	if (!d) {
		close(fd);
		conns_stop(&ex.conns);
		src_counter_close(ex.srcs);
		return runtime_err("cannot start the HTTP server on %s: see the messages above",
				   bound);
	}
	__atomic_store_n(&ex.log_requests, getenv("SLUICE_DEBUG") != NULL, __ATOMIC_RELAXED);
	/* One scrape up front: permission problems show now, not at the first
	 * Prometheus scrape. */
	body = render_metrics(&ex, &len, &nifaces, &nskipped);
	free(body);
	printf("sluice exporter %s: serving http://%s/metrics for %u interface%s "
	       "(sources counted by %s; %s)\n", SLUICE_VERSION, bound, nifaces,
	       nifaces == 1 ? "" : "s",
	       ex.srcs ? "the kernel's element counter" : "walking the table", privs);
	fflush(stdout);
	/* Pins from before they had a group (or another group's) are skipped
	 * at every scrape; say so once, now. */
	if (nskipped)
		err_msg("warning: %u pin director%s could not be read as %s in group %s and %s "
			"skipped: pins made before they had a group need 'sluice attach IFACE' "
			"again, pins of another group need --group", nskipped,
			nskipped == 1 ? "y" : "ies", ra.user, ra.group,
			nskipped == 1 ? "is" : "are");

	while (sigwait(&stop, &sig))
		;
	MHD_stop_daemon(d);	/* closes fd and every connection too */
	conns_stop(&ex.conns);
	src_counter_close(ex.srcs);
	return 0;
}

const struct cli_cmd exporter_cmd = {
	.name = "exporter", .path = "exporter", .opts = exporter_opts, .run = exporter_run,
	.help = "Serves Prometheus metrics of every attached interface at\n"
		"http://ADDR:PORT/metrics; -i IFACE exports only that interface. Once\n"
		"listening it runs as USER in GROUP, the pins' group, which may read the\n"
		"pins but not write them.",
};
