// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* exporter: `sluice exporter`, Prometheus metrics of every attached
 * interface, read from the pinned maps at each scrape, served by
 * libmicrohttpd's thread pool as an unprivileged user that can only read
 * the pins. Read-only: no endpoint changes anything. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "core.h"
#include "cli.h"
#include "cluster.h"
#include "exporter.h"
#include "httpd.h"
#include "notify.h"
#include "pressure.h"
#include "privdrop.h"
#include "prom.h"
#include "rule.h"
#include "sources.h"

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.0.0"
#endif

#define LISTEN_DEFAULT		"127.0.0.1:9464"
#define HTTP_THREADS		4	/* scrapes served at once */
#define MAX_IFACES		1024
#define EXPORTER_NOT_ALLOWED	"405 method not allowed: this exporter is read-only, use GET\n"
#define LOOK_EVERY_NS		(10ULL * SLUICE_NS_PER_SEC)	/* the source tables' pressure */

static const char metrics_type[] = "text/plain; version=0.0.4; charset=utf-8";

static const char index_page[] =
	"<!DOCTYPE html>\n"
	"<html><head><meta charset=\"utf-8\"><title>sluice exporter</title></head>\n"
	"<body><h1>sluice exporter</h1>\n"
	"<p><a href=\"/metrics\">/metrics</a>: counters of every interface sluice is attached to.</p>\n"
	"</body></html>\n";

/* Live slots of the source table, home and keyed buckets alike: occ, the
 * counters the datapath keeps (the table is never read). */
static long tracked_sources(const struct src_occupancy *occ)
{
	return (long)occ->live;
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

/* An interface's cluster agent (cluster join), sampled with its other series. */
static void sample_cluster(const struct sluice_maps *m, struct prom_cluster *cs)
{
	__u64 now = mono_now_ns();

	memset(cs, 0, sizeof(*cs));
	if (cluster_state_read(m, &cs->st) || cs->st.mode == SLUICE_CLUSTER_NONE)
		return;
	cs->present = true;
	cs->alive = cluster_agent_alive(&cs->st, now);
	cs->fallback_s = cluster_fallback_seconds(&cs->st, cs->alive, now);
}

/* The ban tables: the prefix lists' tallies and drops, the capacity, and
 * the check server's bans counted. 0 or -1. */
static int sample_bans(const struct sluice_maps *m, struct prom_iface *s)
{
	struct sluice_src_key key, next;
	struct sluice_ban_list l;
	struct sluice_config cfg;
	__u32 zero = 0;
	void *prev = NULL;

	if (bpf_map_lookup_elem(m->config, &zero, &cfg))
		return -1;
	s->ban_capacity = cfg.ban_capacity;
	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++) {
		struct prom_ban_list *p = &s->ban_lists[s->nban_lists];

		if (bpf_map_lookup_elem(m->ban_lists, &i, &l))
			return -1;
		if (!l.name[0])
			continue;
		memcpy(p->name, l.name, sizeof(p->name));
		p->added = l.entries[SLUICE_BAN_KIND_ADDED];
		p->loaded = l.entries[SLUICE_BAN_KIND_LOADED];
		if (read_ban_drops(m, i, &p->dropped))
			return -1;
		s->nban_lists++;
	}
	while (!bpf_map_get_next_key(m->bans, prev, &next)) {
		key = next;
		prev = &key;
		s->escalated++;
	}
	return 0;
}

/* The source table's counts and events: counters the datapath keeps, so
 * a scrape costs the same at any --max-sources. 0 or -1. */
static int sample_table(const struct sluice_maps *m, struct prom_iface *s)
{
	struct src_occupancy occ;

	if (src_occupancy_read(m, &occ))
		return -1;
	s->sources = tracked_sources(&occ);
	s->established = occ.established;
	s->probation = occ.live - occ.established;
	s->capacity = srctab_capacity(m);
	return s->sources < 0 || read_event(m, SLUICE_EV_NEW_SOURCE_ADMITTED, &s->new_sources) ||
	       read_event(m, SLUICE_EV_SOURCE_RECLAIMED, &s->reclaimed) ||
	       read_event(m, SLUICE_EV_ESTABLISHED_RECLAIMED, &s->established_reclaimed) ||
	       read_event(m, SLUICE_EV_LOCK_GAVE_UP, &s->lock_gave_up) ||
	       read_event(m, SLUICE_EV_SOURCE_REFUSED, &s->refused) ? -1 : 0;
}

/* Everything about one interface, or -1 if its pins could not be read
 * (detached meanwhile, made by another version, a map unreadable): then
 * only its sluice_interface_up 0 is in this scrape, beside the others. */
static int sample_iface(const char *iface, struct prom_iface *s)
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
	if (sample_table(&m, s) ||
	    new_sources_read(&m, &s->budget_rate, &s->budget_period, &s->budget_burst))
		goto out;
	if (sample_bans(&m, s))
		goto out;
	sample_cluster(&m, &s->cluster);
	err = 0;
out:
	maps_close(&m);
	if (err) {
		free(s->rules);
		memset(s, 0, sizeof(*s));
		snprintf(s->name, sizeof(s->name), "%s", iface);
	}
	s->read_ok = !err;
	return err;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The whole /metrics body, malloc()ed; NULL when out of memory. */
static char *render_metrics(size_t *len, unsigned int *nifaces, unsigned int *nskipped)
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
		if (sample_iface(names[i], &s[n++]))
			skipped++;	/* only its sluice_interface_up 0 */
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
		*nifaces = (unsigned int)n - skipped;
	if (nskipped)
		*nskipped = skipped;
out:
	for (size_t i = 0; i < n; i++)
		free(s[i].rules);
	free(s);
	free(names);
	return body;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url)
{
	size_t len;
	char *body;

	(void)cls;	/* the pages are read from the pins at each request */

	if (!strcmp(url, "/"))
		return httpd_reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8", index_page,
				   strlen(index_page), MHD_RESPMEM_PERSISTENT, NULL);
	if (strcmp(url, "/metrics") != 0)
		return httpd_reply_text(conn, MHD_HTTP_NOT_FOUND,
					"404 not found: metrics are at /metrics\n", NULL);
	body = render_metrics(&len, NULL, NULL);
	return httpd_reply_page(conn, metrics_type, body, len);
}

void exporter_http_init(struct exporter *ex)
{
	memset(ex, 0, sizeof(*ex));
	ex->http.name = "exporter";
	ex->http.handler = on_request;
	ex->http.not_allowed = EXPORTER_NOT_ALLOWED;
	ex->http.cls = ex;
}

/* Until SIGINT or SIGTERM: the source tables looked at every LOOK_EVERY_NS
 * (pressure.h), and under a watchdog WATCHDOG=1 each time the server has
 * answered a request of its own (httpd_self_check). */
static void exporter_loop(struct exporter *ex, const sigset_t *stop)
{
	struct pressure *pr = calloc(1, sizeof(*pr));
	struct notify nt;
	__u64 look = 0, now, wait;
	struct timespec ts;

	notify_init(&nt);
	for (;;) {
		now = mono_now_ns();
		if (now >= look) {
			if (pr)
				pressure_look(pr, opts.iface);
			look = mono_now_ns() + LOOK_EVERY_NS;
		}
		if (notify_due(&nt, now) &&
		    !httpd_self_check(&ex->http, "/", notify_check_ms(&nt)))
			notify_alive(&nt);
		now = mono_now_ns();
		wait = notify_sleep_ns(&nt, now, look > now ? look - now : 0);
		ts.tv_sec = (time_t)(wait / SLUICE_NS_PER_SEC);
		ts.tv_nsec = (long)(wait % SLUICE_NS_PER_SEC);
		if (sigtimedwait(stop, NULL, &ts) >= 0)
			break;
	}
	free(pr);
}

/* The exporter's options. */
struct exporter_options {
	const char *listen, *user, *group;
};

static const struct exporter_options exporter_defaults = {
	.listen = LISTEN_DEFAULT, .user = EXPORTER_USER_DEFAULT, .group = RUN_AS_GROUP_DEFAULT,
};

static const struct cli_opt exporter_opts[] = {
	CLI_STR("listen", 0, "ADDR:PORT", "where to serve; port 0 picks a free one",
		struct exporter_options, listen),
	CLI_STR("user", 0, "USER", "run as USER once listening", struct exporter_options, user),
	CLI_STR("group", 0, "GROUP", "in GROUP, the pins' group", struct exporter_options, group),
	CLI_OPT_END,
};

static int exporter_run(const struct cli_cmd *c, struct cli_args *a)
{
	const struct exporter_options *o = CLI_OPTIONS(a, struct exporter_options);
	const char *listen_spec = o->listen;
	struct exporter ex;
	struct sockaddr_storage ss;
	char bound[HTTPD_ADDR_STR_MAX], privs[160];
	unsigned int nifaces = 0, nskipped = 0;
	struct run_as ra;
	sigset_t stop;
	socklen_t sslen;
	size_t len;
	char *body;
	int fd, err;

	(void)c;
	exporter_http_init(&ex);
	if (opts.json)
		return usage_err("the exporter has no JSON output: drop -j");
	if (!httpd_parse_listen(listen_spec, &ss, &sslen))
		return usage_err("bad --listen '%s': give ADDR:PORT, e.g. 127.0.0.1:9464 or [::1]:9464",
				 listen_spec);
	err = run_as_lookup(o->user, o->group, EXPORTER_USER_DEFAULT, &ra);
	if (err)
		return err;

	/* What needs privilege first: the socket (a port below 1024); then
	 * down to USER for good. */
	fd = httpd_listen(listen_spec, &ss, sslen, LISTEN_DEFAULT, bound, sizeof(bound));
	if (fd < 0)
		return EXIT_RUNTIME;
	err = run_as_switch(&ra, privs, sizeof(privs));
	if (err) {
		close(fd);
		return err;
	}
	/* Server threads inherit this mask; only sigwait() below sees them. */
	httpd_block_signals(&stop);
	err = httpd_start(&ex.http, fd, HTTP_THREADS, bound);
	if (err)
		return err;
	httpd_serving(&ex.http);
	/* One scrape up front: permission problems show now, not at the first
	 * Prometheus scrape. */
	body = render_metrics(&len, &nifaces, &nskipped);
	free(body);
	printf("sluice exporter %s: serving http://%s/metrics for %u interface%s "
	       "(%s)\n", SLUICE_VERSION, bound, nifaces, nifaces == 1 ? "" : "s", privs);
	fflush(stdout);
	notify_ready("serving http://%s/metrics for %u interface%s", bound, nifaces,
		     nifaces == 1 ? "" : "s");
	/* Pins from before they had a group (or another group's) are skipped
	 * at every scrape; say so once, now. */
	if (nskipped)
		log_event(LOG_WARNING, "%u pin director%s could not be read as %s in group %s and "
			  "%s skipped: pins made before they had a group need 'sluice attach "
			  "IFACE' again, pins of another group need --group", nskipped,
			  nskipped == 1 ? "y" : "ies", ra.user, ra.group,
			  nskipped == 1 ? "is" : "are");

	exporter_loop(&ex, &stop);
	notify_stopping("stopping");
	httpd_stop(&ex.http);
	return 0;
}

const struct cli_cmd exporter_cmd = {
	.name = "exporter", .path = "exporter", .opts = exporter_opts, .run = exporter_run,
	CLI_DEFAULTS(exporter_defaults),
	.help = "Serves Prometheus metrics of every attached interface at\n"
		"http://ADDR:PORT/metrics; -i IFACE exports only that interface. Once\n"
		"listening it runs as USER in GROUP, the pins' group, which may read the\n"
		"pins but not write them.",
};
