// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* commands: `sluice cluster join|status|leave`, their option tables and
 * run functions, and the cluster state as status and the exporter show it. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core.h"
#include "cli.h"
#include "cluster.h"
#include "agent.h"

struct join_options {
	const char *node;	/* NULL: the host name */
	__u32 sync_ms;
	struct redis_auth_files auth;
	const char *redis_cluster;	/* seeds; NULL: one Redis */
};

static const struct join_options join_defaults = { .sync_ms = SLUICE_CLUSTER_SYNC_MS_DEFAULT };

static const struct cli_opt join_opts[] = {
	CLI_STR("node", 0, "NAME", "this host's name among the peers (default: the host name)",
		struct join_options, node),
	CLI_U32("sync", 0, "MS", "the sync interval", struct join_options, sync_ms,
		SLUICE_CLUSTER_SYNC_MS_MIN, SLUICE_CLUSTER_SYNC_MS_MAX, "ms"),
	CLI_STR("redis-password-file", 0, "FILE", "Redis's password, its first line (mode 0600; "
		"else $" REDIS_PASSWORD_ENV ")", struct join_options, auth.password_file),
	CLI_STR("redis-ca", 0, "FILE", "rediss://: the CA that signed the server's certificate "
		"(default: the system's)", struct join_options, auth.ca),
	CLI_STR("redis-cert", 0, "FILE", "rediss://: this client's certificate (with --redis-key)",
		struct join_options, auth.cert),
	CLI_STR("redis-key", 0, "FILE", "rediss://: its private key", struct join_options,
		auth.key),
	CLI_STR("redis-cluster", 0, "HOST:PORT[,...]", "a Redis Cluster: more seeds after the "
		"URL's node; keys on one slot, its owner followed", struct join_options,
		redis_cluster),
	CLI_OPT_END,
};

/* The node's name: --node, or the host name (into host): NULL after a
 * usage error printed. */
static const char *join_node(const struct join_options *o, char *host, size_t len)
{
	if (o->node) {
		if (node_name_ok(o->node))
			return o->node;
		usage_err("bad --node '%.64s': give 1 to %u of A-Z a-z 0-9 . _ -", o->node,
			  SLUICE_CLUSTER_NAME_MAX - 1);
		return NULL;
	}
	if (gethostname(host, len))
		host[0] = '\0';
	host[len - 1] = '\0';
	if (node_name_ok(host))
		return host;
	usage_err("the host name '%.64s' cannot name a node: give --node NAME (1 to %u of A-Z "
		  "a-z 0-9 . _ -)", host, SLUICE_CLUSTER_NAME_MAX - 1);
	return NULL;
}

static int join_run(const struct cli_cmd *c, struct cli_args *a)
{
	const struct join_options *o = CLI_OPTIONS(a, struct join_options);
	char iface[IF_NAMESIZE], host[256];
	const char *node;
	struct redis *conf;
	int err;

	(void)c;
	/* Holds the password: wiped when done. */
	conf = calloc(1, sizeof(*conf));
	if (!conf)
		return runtime_err("out of memory");
	err = parse_url(a->pos[0], &conf->url);
	if (!err && o->redis_cluster)
		err = rcluster_setup(conf, o->redis_cluster);
	if (err)
		goto out;
	node = join_node(o, host, sizeof(host));
	err = node ? pick_iface(iface, sizeof(iface)) : EXIT_USAGE;
	if (!err)
		err = redis_setup(conf, &o->auth);
	if (!err)
		err = agent_run(iface, conf, node, o->sync_ms);
	else
		redis_teardown(conf);
out:
	explicit_bzero(conf, sizeof(*conf));
	free(conf);
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

/* A name from the state map as printed: anything not printable escaped
 * (peers' names come from Redis; the agent keeps only well-formed ones,
 * but the map is not checked again here). */
#define NAME_SHOWN_MAX	(4 * SLUICE_CLUSTER_NAME_MAX)

static void status_json(const char *iface, const struct sluice_cluster_state *s, bool alive,
			bool leased, __u64 now)
{
	bool none = s->mode == SLUICE_CLUSTER_NONE;
	char shown[NAME_SHOWN_MAX];
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
		cluster_name_show(s->node, sizeof(s->node), shown, sizeof(shown));
		json_str(&j, "node", shown);
		json_str(&j, "redis", s->url);
		json_u64(&j, "sync_ms", s->sync_ms);
	}
	json_u64(&j, "peers", s->peers ? s->peers : 1);
	json_bool(&j, "leased_shares", leased);
	json_arr_open(&j, "peer_names");
	for (__u32 i = 0; i < s->npeers && i < SLUICE_CLUSTER_PEERS_MAX; i++) {
		cluster_name_show(s->peer[i], sizeof(s->peer[i]), shown, sizeof(shown));
		json_str(&j, NULL, shown);
	}
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
	char shown[NAME_SHOWN_MAX];

	if (s->mode == SLUICE_CLUSTER_NONE) {
		printf("%s: no cluster agent has run: --cluster rules apply limit / %u by "
		       "themselves ('sluice cluster join redis://HOST[:PORT]' to join)\n", iface, n);
		return;
	}
	printf("%s: cluster %s", iface, cluster_mode_name(s->mode));
	if (s->mode == SLUICE_CLUSTER_UP || s->mode == SLUICE_CLUSTER_FALLBACK)
		printf(alive ? " (agent pid %u)" : " (agent pid %u NOT RUNNING: its state is stale)",
		       s->pid);
	cluster_name_show(s->node, sizeof(s->node), shown, sizeof(shown));
	printf(", node %s, %s, sync every %u ms\n", shown, s->url, s->sync_ms);
	if (leased && alive)
		printf("  shares: --cluster rules apply limit / %u here and lease more from Redis\n",
		       n * SLUICE_CLUSTER_LOCAL_DIV);
	else if (leased)
		printf("  shares: STILL limit / %u here, as the agent left them, with no leases: "
		       "'sluice cluster leave' puts them to the whole limit (or start an agent)\n",
		       n * SLUICE_CLUSTER_LOCAL_DIV);
	else
		printf("  shares: --cluster rules apply limit / %u here by themselves\n", n);
	if (s->mode == SLUICE_CLUSTER_FALLBACK && s->fallback_since_ns)
		printf("  IN FALLBACK for %.3f s: Redis does not answer\n",
		       (double)ago_ms(s->fallback_since_ns, alive ? now : s->heartbeat_ns) / 1000);
	printf("  peers: %u", n);
	for (__u32 i = 0; i < s->npeers && i < SLUICE_CLUSTER_PEERS_MAX; i++) {
		cluster_name_show(s->peer[i], sizeof(s->peer[i]), shown, sizeof(shown));
		printf("%s%s", i ? " " : " (", shown);
	}
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
	const char *iface = m.iface;
	__u64 now;
	bool alive;
	int err;

	(void)c;
	(void)a;
	err = maps_open_picked(&m, false);
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
 * them to the whole limit (N is forgotten with the agent that saw it),
 * clears the leases and marks the host stopped. The
 * node leaves the peer list when its heartbeat's TTL runs out.
 */
static int leave_run(const struct cli_cmd *c, struct cli_args *a)
{
	struct sluice_cluster_state s;
	struct sluice_maps m;
	const char *iface = m.iface;
	int err;

	(void)c;
	(void)a;
	err = maps_open_picked(&m, true);
	if (err)
		return err;
	if (cluster_state_read(&m, &s)) {
		err = EXIT_RUNTIME;
		goto out;
	}
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
	/* N forgotten with the agent that saw it: the whole limit. */
	s.peers = 1;
	s.npeers = 0;
	err = cluster_recommit(&m, &s);
	if (!err)
		printf("%s: left the cluster for its agent (pid %u, not running): --cluster rules "
		       "apply their whole limit by themselves\n", iface, s.pid);
out:
	maps_close(&m);
	return err;
}

static const struct cli_cmd join_cmd = {
	.name = "join", .path = "cluster join", .args = "URL",
	.min_pos = 1, .max_pos = 1, .opts = join_opts, .run = join_run,
	.no_json = "see 'cluster status -j'",
	CLI_DEFAULTS(join_defaults),
	.help = "Runs the cluster agent of the interface until SIGINT or SIGTERM: its --cluster\n"
		"rules then hold across every host joined to the same Redis. Each host spends a\n"
		"local share (limit / 8N) and leases more tokens from Redis every sync interval;\n"
		"while Redis does not answer, limit / N. One agent per interface. URL is\n"
		"redis://[USER@]HOST[:PORT][/DB], rediss://... (TLS), unix://[USER@]/PATH[?db=DB]\n"
		"or sentinel://[USER@]HOST:PORT[,HOST:PORT...]/MASTER[?db=DB] (up to 5 Redis\n"
		"Sentinels, asked for MASTER's address at each connect; no password or TLS to them);\n"
		"the password never in it (ps shows it): --redis-password-file or $"
		REDIS_PASSWORD_ENV ".\n"
		"--redis-cluster HOST:PORT,... joins a Redis Cluster: the URL (redis:// or\n"
		"rediss://, its user, no /DB) is its first seed, and every node is spoken to\n"
		"alike; the agent's keys share one hash tag, so a sync is one slot's.",
};
static const struct cli_cmd cluster_status_cmd = {
	.name = "status", .path = "cluster status", .json = true, .run = status_run,
	.help = "The cluster agent's state: up or in fallback, the peers seen, the last sync,\n"
		"the leases held, the grants and the time spent in fallback.",
};
static const struct cli_cmd leave_cmd = {
	.name = "leave", .path = "cluster leave", .run = leave_run,
	.no_json = "see 'cluster status -j'",
	.help = "Takes the interface out of the cluster for an agent that stopped without\n"
		"leaving (killed, crashed): its --cluster rules go from limit / 8N to the whole\n"
		"limit and its leases are cleared, as the agent does on SIGTERM. Refused while the\n"
		"agent runs; nothing to do when it left. For ExecStopPost= (contrib/systemd).",
};
static const struct cli_cmd *const cluster_cmds[] = { &join_cmd, &cluster_status_cmd, &leave_cmd,
						       NULL };

const struct cli_cmd cluster_obj = {
	.name = "cluster", .path = "cluster", .sub = cluster_cmds,
	.help = "Cluster-wide limits: rules with --cluster hold across the hosts joined to one\n"
		"Redis (see sluice(8), \"cluster join, status, leave\").",
};
