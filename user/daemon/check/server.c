// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* check: `sluice check-server`, the answer to "may this client make one
 * more request?" for a gateway (nginx auth_request, Envoy ext_authz):
 * the interface's request rules (limit set CIDR --requests) judged per
 * source with the datapath's math (algo.h), 200 or 429 with Retry-After
 * and the RateLimit fields, and a source that keeps going after its 429s
 * banned in XDP (ban_put). Served by libmicrohttpd's thread pool (httpd.c)
 * as an unprivileged user; GET /metrics tells what it answered. This file
 * holds the command, its options, the serve loop and the HTTP handlers;
 * check.h names the other parts. */
#include <errno.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/un.h>
#include <bpf/bpf.h>
#include "check.h"
#include "cli.h"
#include "notify.h"
#include "privdrop.h"

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.0.0"
#endif

/* By default a Unix socket that only root and the gateway's group may
 * connect to: on TCP every local process that reaches the port could name
 * any client and have it banned. */
#define SOCKET_DEFAULT		"/run/sluice/check.sock"
/* Its own group, which the package creates and nginx's workers join by
 * nginx's user line: not www-data, which PHP-FPM and web applications on
 * Debian share. */
#define SOCKET_GROUP_DEFAULT	"sluice-check-clients"
#define CHECK_USER_DEFAULT	"sluice-check"	/* its own: no other process may signal it */
#define SOCKET_MODE		0660
#define LISTEN_EXAMPLE		"127.0.0.1:9465"
#define CHECK_THREADS		4
#define HEADER_NAME_MAX		64
#define SOURCES_DEFAULT		65536ULL
#define SOURCES_MIN		1ULL
#define SOURCES_MAX		16777216ULL
#define POLICY_POLL_NS		(100ULL * 1000 * 1000)	/* a commit is seen this soon */

static const char metrics_type[] = "text/plain; version=0.0.4; charset=utf-8";

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
const char *check_one_header(struct MHD_Connection *conn, const char *name)
{
	struct header_count h = { .name = name };

	MHD_get_connection_values(conn, MHD_HEADER_KIND, count_header, &h);
	return h.n == 1 ? h.value : NULL;
}

/* An X-Request-ID worth remembering: 1..REQUEST_ID_MAX visible characters.
 * Only with --trust-request-id: a client that could set it itself would
 * repeat one id and never be charged. */
static const char *request_id(struct MHD_Connection *conn)
{
	const char *id = check_one_header(conn, "X-Request-ID");
	size_t n;

	if (!id)
		return NULL;
	for (n = 0; id[n]; n++)
		if (id[n] <= ' ' || id[n] >= 127 || n >= REQUEST_ID_MAX)
			return NULL;
	return n ? id : NULL;
}

/* The address header's value v without the blanks (spaces, tabs) around
 * it, in buf of len; NULL when what is left cannot be an address. */
static const char *trim_blanks(const char *v, char *buf, size_t len)
{
	size_t n;

	while (*v == ' ' || *v == '\t')
		v++;
	n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (!n || n >= len)
		return NULL;
	memcpy(buf, v, n);
	buf[n] = '\0';
	return buf;
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
bool check_gateway_peer(void *cls, const struct in6_addr *peer)
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
	char msg[192], abuf[ADDRESS_MAX];

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
	addr = check_one_header(conn, s->header);
	if (addr)
		addr = trim_blanks(addr, abuf, sizeof(abuf));
	if (!addr || parse_source(addr, &src)) {
		count(&s->answers[OUT_BAD_REQUEST]);
		snprintf(msg, sizeof(msg), "400 bad request: %s must hold exactly one IPv4 or "
			 "IPv6 address\n", s->header);
		return httpd_reply(conn, MHD_HTTP_BAD_REQUEST, "text/plain; charset=utf-8", msg,
				   strlen(msg), MHD_RESPMEM_MUST_COPY, NULL);
	}
	check_source(s, &src, s->repeat_ids ? request_id(conn) : NULL, mode && !strcmp(mode, "403"),
		     check_ban_left(s, &src), &a);
	count(&s->answers[a.outcome]);
	return reply_answer(conn, &a);
}

/* The counters of the rules of policy p (a copy), in p's order, into out. */
static void sample_rules(const struct check_server *s, const struct check_policy *p,
			 struct check_prom_rule *out)
{
	for (unsigned int i = 0; i < p->n; i++) {
		const struct rule_counts *c = &s->counts[p->order[i]];

		out[i].name = p->rules[p->order[i]].name;
		out[i].pass = __atomic_load_n(&c->pass, __ATOMIC_RELAXED);
		out[i].limited = __atomic_load_n(&c->limited, __ATOMIC_RELAXED);
		out[i].bans = __atomic_load_n(&c->bans, __ATOMIC_RELAXED);
	}
}

/* The /metrics page, malloc()ed; NULL when out of memory. */
static char *render_metrics(struct check_server *s, size_t *len)
{
	struct check_prom pr = { .version = SLUICE_VERSION, .iface = s->m.iface,
				 .capacity = s->t.cap };
	struct check_prom_rule *rules = malloc(SLUICE_MAX_POLICIES * sizeof(*rules));
	struct check_policy *p = malloc(sizeof(*p));
	char *body = NULL;
	FILE *f = NULL;
	int err = -1;

	for (int o = 0; o < OUT_MAX; o++)
		pr.answers[o] = __atomic_load_n(&s->answers[o], __ATOMIC_RELAXED);
	/* The rules as they are now; a rule's counts start again with it. */
	if (p && rules) {
		pthread_mutex_lock(&s->lock);
		memcpy(p, s->pol, sizeof(*p));
		pr.tracked = s->t.used;
		pthread_mutex_unlock(&s->lock);
		sample_rules(s, p, rules);
		pr.rules = rules;
		pr.nrules = p->n;
		pr.ban_failures = __atomic_load_n(&s->ban_failures, __ATOMIC_RELAXED);
		for (int r = 0; r < REFUSE_MAX; r++)
			pr.refused[r] = __atomic_load_n(&s->refused[r], __ATOMIC_RELAXED);
		f = open_memstream(&body, len);
	}
	if (f) {
		err = check_prom_write(f, &pr);
		if (fclose(f))
			err = -1;
	}
	free(rules);
	free(p);
	if (err) {
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

/* GET /check and GET /metrics, for httpd.c; cls is the server. */
enum MHD_Result check_on_request(void *cls, struct MHD_Connection *conn, const char *url)
{
	if (!strcmp(url, "/check"))
		return serve_check(cls, conn);
	if (!strcmp(url, "/metrics"))
		return serve_metrics(cls, conn);
	return httpd_reply_text(conn, MHD_HTTP_NOT_FOUND,
				"404 not found: checks are at /check, metrics at /metrics\n", NULL);
}

/* --- the command --- */

/* check-server's options. */
struct check_options {
	const char *listen, *user, *group, *socket, *socket_group, *header, *trust;
	__u64 max_sources;
	bool repeat_ids;
};

static const struct check_options check_defaults = {
	.user = CHECK_USER_DEFAULT, .group = RUN_AS_GROUP_DEFAULT, .socket = SOCKET_DEFAULT,
	.socket_group = SOCKET_GROUP_DEFAULT, .header = HEADER_DEFAULT, .trust = TRUST_DEFAULT,
	.max_sources = SOURCES_DEFAULT,
};

/* Positions in check_opts: whether --listen, --socket, --socket-group and
 * --trust were given at all decides where to serve. */
enum { CO_LISTEN, CO_USER, CO_GROUP, CO_SOCKET, CO_SOCKET_GROUP, CO_HEADER, CO_TRUST,
       CO_SOURCES, CO_REQUEST_ID };

static const struct cli_opt check_opts[] = {
	[CO_LISTEN] = CLI_STR("listen", 0, "ADDR:PORT",
			      "serve on TCP instead, e.g. " LISTEN_EXAMPLE " (every process that "
			      "reaches it from a --trust address may ask)", struct check_options, listen),
	[CO_USER] = CLI_STR("user", 0, "USER", "run as USER once listening",
			    struct check_options, user),
	[CO_GROUP] = CLI_STR("group", 0, "GROUP", "in GROUP, the pins' group",
			     struct check_options, group),
	[CO_SOCKET] = CLI_STR("socket", 0, "PATH", "the Unix socket to serve on",
			      struct check_options, socket),
	[CO_SOCKET_GROUP] = CLI_STR("socket-group", 0, "GROUP",
				    "the gateway's group, the only one that may connect",
				    struct check_options, socket_group),
	[CO_HEADER] = CLI_STR("address-header", 0, "NAME", "the header naming the client's address",
			      struct check_options, header),
	[CO_TRUST] = CLI_STR("trust", 0, "CIDR[,CIDR...]", "with --listen, peers that may ask",
			     struct check_options, trust),
	[CO_SOURCES] = CLI_U64("max-sources", 0, "N", "sources (and streaks) tracked at most",
			       struct check_options, max_sources, SOURCES_MIN, SOURCES_MAX, "sources"),
	[CO_REQUEST_ID] = CLI_FLAG("trust-request-id", 0,
				   "answer a repeat of an X-Request-ID as before, uncharged: only "
				   "where the gateway sets it itself (nginx's $request_id)",
				   struct check_options, repeat_ids),
	CLI_OPT_END,
};

int check_parse_trust(const char *spec, struct check_server *s)
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

static void server_free(struct check_server *s)
{
	check_table_free(s);
	free(s->pol);
}

/* The generation of the live policy: read through the read-only config
 * descriptor (the server holds none it could write the policy with). */
static __u64 live_gen(const struct check_server *s)
{
	struct sluice_config cfg;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(s->m.config, &zero, &cfg))
		return s->pol->gen;	/* detached: the sweep's check says so */
	return SLUICE_GEN(cfg.gen_slot);
}

/* Until SIGINT or SIGTERM (0), or the interface is detached (EXIT_RUNTIME):
 * a new policy within POLICY_POLL_NS of its commit, expired bans swept,
 * and under a watchdog WATCHDOG=1 each time the server has answered a
 * request of its own for /metrics (which takes the server's lock). */
static int serve(struct check_server *s, const sigset_t *stop)
{
	const struct timespec poll = { .tv_nsec = (long)POLICY_POLL_NS };
	struct check_policy *np = NULL, *old;
	__u64 last_sweep = mono_now_ns();
	struct notify nt;

	notify_init(&nt);
	for (;;) {
		__u64 gen = live_gen(s);

		if (notify_due(&nt, mono_now_ns()) &&
		    !httpd_self_check(&s->http, "/metrics", notify_check_ms(&nt)))
			notify_alive(&nt);
		if (sigtimedwait(stop, NULL, &poll) >= 0) {
			free(np);
			return 0;
		}
		if (gen != s->pol->gen) {
			np = np ? np : malloc(sizeof(*np));
			if (!np)
				return runtime_err("out of memory");
			if (check_policy_load(&s->m, np)) {
				free(np);
				np = NULL;
				if (!maps_still_current(&s->m))
					break;
				return runtime_err("cannot read the policy of %s", s->m.iface);
			}
			pthread_mutex_lock(&s->lock);
			old = s->pol;
			check_policy_apply(s, np, mono_now_ns());
			pthread_mutex_unlock(&s->lock);
			np = old;	/* reused next time */
			log_event(LOG_INFO, "check-server: %s: policy generation %llu read: %u "
				  "request rule%s", s->m.iface, (unsigned long long)s->pol->gen,
				  s->pol->n, s->pol->n == 1 ? "" : "s");
			notify_status("serving /check for %s (%u request rule%s)", s->m.iface,
				      s->pol->n, s->pol->n == 1 ? "" : "s");
		}
		if (mono_now_ns() - last_sweep >= SWEEP_NS) {
			last_sweep = mono_now_ns();
			if (!maps_still_current(&s->m))
				break;
			ban_sweep(&s->bans);
		}
	}
	free(np);
	return runtime_err("%s was detached, or attached anew with other maps (an upgrade): "
			   "not serving stale rules (start the check server again once it is "
			   "attached)", s->m.iface);
}

/* Where to serve: --listen (TCP, --trust decides) or the Unix socket
 * (its permissions decide); 0 or EXIT_USAGE after saying why. */
static int check_where(const struct cli_args *a, const char **path, gid_t *gid)
{
	const struct check_options *o = CLI_OPTIONS(a, struct check_options);
	const struct group *gr;

	*path = o->socket;
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
	gr = getgrnam(o->socket_group);
	if (!gr)
		return usage_err("no group '%s' for --socket-group: %s", o->socket_group,
				 strcmp(o->socket_group, SOCKET_GROUP_DEFAULT) ?
				 "name a group the gateway runs in (nginx: its 'user' line)" :
				 "install the sluice package, which creates it (nginx's workers "
				 "join it by 'user www-data sluice-check-clients;'), or name the "
				 "gateway's group");
	*gid = gr->gr_gid;
	return 0;
}


/* check-server's options, checked. */
struct check_setup {
	const char *listen_spec, *sock_path;
	struct sockaddr_storage ss;
	socklen_t sslen;
	gid_t sock_gid;
	__u64 max_sources;
	struct run_as ra;
	char iface[IF_NAMESIZE];
};

/* The options that need no server; 0 or EXIT_USAGE after saying why. */
static int check_options(const struct cli_args *a, struct check_setup *cs)
{
	const struct check_options *o = CLI_OPTIONS(a, struct check_options);

	cs->listen_spec = o->listen;
	cs->max_sources = o->max_sources;
	if (cs->listen_spec && !httpd_parse_listen(cs->listen_spec, &cs->ss, &cs->sslen))
		return usage_err("bad --listen '%s': give ADDR:PORT, e.g. %s or [::1]:9465",
				 cs->listen_spec, LISTEN_EXAMPLE);
	if (!httpd_is_token(o->header) || strlen(o->header) > HEADER_NAME_MAX)
		return usage_err("bad --address-header '%s': give a header name (letters, digits, "
				 "'-'), e.g. %s", o->header, HEADER_DEFAULT);
	return 0;
}

/* The rest of the options, into s and cs; 0 or the exit code. */
static int check_configure(const struct cli_args *a, struct check_server *s,
			   struct check_setup *cs)
{
	const struct check_options *o = CLI_OPTIONS(a, struct check_options);
	int err;

	s->header = o->header;
	s->repeat_ids = o->repeat_ids;
	err = check_parse_trust(o->trust, s);
	if (!err)
		err = check_where(a, &cs->sock_path, &cs->sock_gid);
	if (!err)
		err = run_as_lookup(o->user, o->group, CHECK_USER_DEFAULT, &cs->ra);
	if (!err)
		err = pick_iface(cs->iface, sizeof(cs->iface));
	return err;
}

/* The policy, the source table and the ban writer, once the maps are open;
 * 0 or the exit code. */
static int check_load(struct check_server *s, const struct check_setup *cs)
{
	int err;

	s->pol = malloc(sizeof(*s->pol));
	if (!s->pol)
		return runtime_err("out of memory");
	err = check_policy_load(&s->m, s->pol);
	if (!err)
		err = check_table_init(s, (__u32)cs->max_sources);
	if (!err)
		err = ban_writer_open(&s->m, &s->bans);
	return err;
}

/* The listening socket, or -1 after saying why. */
static int check_listen(const struct check_setup *cs, struct httpd_unlinker *unlinker,
			char *bound, size_t bound_len)
{
	int fd;

	if (cs->sock_path) {
		/* Made, owned and handed to the gateway's group as root; the
		 * socket file stays usable by that group once we are USER. */
		fd = httpd_listen_unix(cs->sock_path, cs->sock_gid, SOCKET_MODE, bound, bound_len);
		if (fd >= 0)
			httpd_unlinker_start(unlinker, cs->sock_path);
	} else {
		fd = httpd_listen(cs->listen_spec, &cs->ss, cs->sslen, LISTEN_EXAMPLE, bound,
				  bound_len);
	}
	return fd;
}

static void check_announce(const struct check_server *s, const struct cli_args *a,
			   const struct check_setup *cs, const char *bound, const char *privs)
{
	if (cs->sock_path)
		printf("sluice check-server %s: serving /check on %s (mode %04o, group %s) for %s "
		       "(%u request rule%s; client address from %s; %s)\n", SLUICE_VERSION, bound,
		       SOCKET_MODE, CLI_OPTIONS(a, struct check_options)->socket_group,
		       cs->iface, s->pol->n, s->pol->n == 1 ? "" : "s", s->header, privs);
	else
		printf("sluice check-server %s: serving http://%s/check for %s (%u request rule%s; "
		       "client address from %s; %s)\n", SLUICE_VERSION, bound, cs->iface,
		       s->pol->n, s->pol->n == 1 ? "" : "s", s->header, privs);
	fflush(stdout);
	notify_ready("serving /check on %s for %s (%u request rule%s)", bound, cs->iface, s->pol->n,
		     s->pol->n == 1 ? "" : "s");
	if (!s->pol->n)
		log_event(LOG_WARNING, "%s has no request rules: every check is answered 200 "
			  "(unlimited) until 'sluice limit set CIDR --requests N' adds one", cs->iface);
}

/* Serves on fd as the server's threads until serve() returns; its code. */
static int check_serve_on(struct check_server *s, const struct cli_args *a,
			  const struct check_setup *cs, int fd, const char *bound,
			  const char *privs)
{
	sigset_t stop;
	int err;

	pthread_mutex_init(&s->lock, NULL);
	/* Server threads inherit this mask; only serve() sees the signals. */
	httpd_block_signals(&stop);
	s->http.name = "check-server";
	s->http.not_allowed = "405 method not allowed: checks and metrics are read with GET\n";
	s->http.handler = check_on_request;
	s->http.gateway = check_gateway_peer;
	s->http.local = cs->sock_path != NULL;
	s->http.cls = s;
	err = httpd_start(&s->http, fd, CHECK_THREADS, bound);
	if (!err) {
		httpd_serving(&s->http);
		check_announce(s, a, cs, bound, privs);
		err = serve(s, &stop);
		notify_stopping("%s", err ? "stopping on an error (see the log)" : "stopping");
		httpd_stop(&s->http);
	}
	pthread_mutex_destroy(&s->lock);
	return err;
}

static int check_run(const struct cli_cmd *c, struct cli_args *a)
{
	struct check_setup cs = { 0 };
	struct check_server *s;
	char bound[HTTPD_ADDR_STR_MAX], privs[160];
	struct httpd_unlinker unlinker = { .pid = -1, .fd = -1 };
	int fd, err;

	(void)c;
	err = check_options(a, &cs);
	if (err)
		return err;
	s = calloc(1, sizeof(*s));
	if (!s)
		return runtime_err("out of memory");
	err = check_configure(a, s, &cs);
	/* As root: the maps, the ban writer, the socket; then down to USER for
	 * good. The descriptors keep working, so only the two it writes (the
	 * ban table and ban_state, the word that tells the datapath to look
	 * at it) are opened writable; the policy, its config and the counters
	 * are only read. */
	if (!err)
		err = maps_open_writing(cs.iface, &s->m, MAP_BIT(bans) | MAP_BIT(ban_state));
	if (err) {
		free(s);
		return err;
	}
	/* Nor the source table's seed, root's alone: its descriptor would
	 * outlive the switch to USER, and nothing here needs it. */
	if (s->m.src_seed >= 0)
		close(s->m.src_seed);
	s->m.src_seed = -1;
	err = check_load(s, &cs);
	if (err)
		goto out_maps;
	fd = check_listen(&cs, &unlinker, bound, sizeof(bound));
	if (fd < 0) {
		err = EXIT_RUNTIME;
		goto out_bans;
	}
	err = run_as_switch(&cs.ra, privs, sizeof(privs));
	if (err) {
		close(fd);
		goto out_bans;
	}
	err = check_serve_on(s, a, &cs, fd, bound, privs);
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
	CLI_DEFAULTS(check_defaults),
	.help = "Answers GET /check for a gateway (nginx auth_request): may the client named in\n"
		"the address header make one more request under the interface's request rules\n"
		"(limit set CIDR --requests)? 200 with the RateLimit fields, or 429 (403 with\n"
		"?status=403) with Retry-After; a client that keeps going is banned in XDP\n"
		"(--ban). GET /metrics counts the answers. It serves on a Unix socket that\n"
		"only root and --socket-group may connect to, or with --listen on TCP to the\n"
		"--trust peers. Once listening it runs as USER in GROUP, the pins' group.",
};
