/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The CLI's shared core: options, errors, pinned maps, policy, output. */
#ifndef SLUICE_USER_H
#define SLUICE_USER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <net/if.h>
#include <netinet/in.h>
#include "sluice/sluice.h"

#define EXIT_RUNTIME		1
#define EXIT_USAGE		2

/* Where pins live by default; code asks pin_root() (pins.c), which also
 * finds the host's bpffs from inside `ip netns exec`. */
#define SLUICE_BPFFS		"/sys/fs/bpf"
#define SLUICE_PIN_ROOT		SLUICE_BPFFS "/sluice"
#define SLUICE_PROG_PIN		"prog"
/* The new program's pin until it is renamed over SLUICE_PROG_PIN, so that
 * the program pin is never missing (bpffs refuses names with a dot). */
#define SLUICE_PROG_PIN_NEW	"prog_new"
/* The group that may read the pins when attach is given no --group. */
#define SLUICE_PIN_GROUP	"sluice"
#define SLUICE_BPFFS_ARG_MAX	128	/* longest --bpffs DIR */
#define SLUICE_DIR_MAX		192	/* a pin directory: root + "/" + iface */
#define SLUICE_PATH_MAX		256	/* a pin: directory + "/" + name */

/* Options parsed before dispatch; the only global state. */
struct options {
	bool json;
	const char *iface;	/* -i IFACE, or NULL */
	const char *bpffs;	/* --bpffs DIR, or NULL (then $SLUICE_BPFFS, or found) */
};
extern struct options opts;

/* Errors: one line on stderr, "sluice: what went wrong: what to do". */
void err_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints and returns EXIT_USAGE / EXIT_RUNTIME, for `return usage_err(...)`. */
int usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int runtime_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --- parse.c: strict parsing shared by the CLI and policy files --- */
#define SLUICE_CIDR_STR_MAX	(INET6_ADDRSTRLEN + 8)	/* "addr/len" and a NUL */
struct cidr {
	struct sluice_addr addr;	/* IPv4 stored IPv4-mapped */
	__u32 prefixlen;		/* in the 128-bit space: v4 /24 is 120 */
};
/* Parse "a.b.c.d[/n]" or "x::y[/n]"; NULL on success, else a message. */
const char *parse_cidr(const char *s, struct cidr *out, char *why, size_t len);
void format_cidr(const struct cidr *c, char *buf, size_t len);
void format_addr(const struct sluice_addr *a, char *buf, size_t len);
const char *parse_addr(const char *s, struct sluice_addr *out);
/* A source as the datapath keys it. An IPv4-mapped ::ffff:a.b.c.d is the
 * IPv4 source a.b.c.d (how dual-stack gateways name IPv4 clients). */
const char *parse_source(const char *s, struct sluice_src_key *out);
/* A bucket key as text: the address, or ADDR/LEN (the family's own terms)
 * for a keyed bucket shorter than an address. */
void format_source(const struct sluice_src_key *k, char *buf, size_t len);
/* src masked to key_len bits of its 128-bit form, keyed to rule idx. */
void source_key_mask(const struct sluice_src_key *src, __u32 key_len, __u16 idx,
		     struct sluice_src_key *out);
bool addr_is_v4(const struct sluice_addr *a);
__u8 cidr_family(const struct cidr *c);
/* Whole-string unsigned decimal in [min, max]; false on anything else. */
bool parse_u64(const char *s, __u64 min, __u64 max, __u64 *out);
/* Prints and returns EXIT_USAGE unless name could be a Linux interface
 * name (it also names a directory under SLUICE_PIN_ROOT). */
int check_ifname(const char *name);

/* --- policy.c: the policy model, read from and committed to the maps --- */
/* A rule's match: flags is SLUICE_MATCH_*; proto and ports as in
 * struct sluice_match. All zero matches every packet. */
struct rule_match {
	__u8 flags;
	__u8 proto;
	__u16 dport_lo;
	__u16 dport_hi;
};
/* One rule, as the words say it (doc/rules.rst). A rule's identity is
 * its CIDR (or the default) and its match; a request rule's (unit
 * SLUICE_UNIT_REQUESTS) is its CIDR and --requests. */
struct rule {
	struct cidr cidr;
	struct rule_match match;
	__u32 action;		/* enum sluice_action */
	__u32 unit;		/* enum sluice_unit: --rate or --bytes */
	__u64 rate;		/* units per period */
	__u32 period;		/* SLUICE_PERIOD_*: N, N/s, N/m, N/h */
	__u64 burst;		/* token bucket: units, default one second's
				 * worth, at least 1; windows: the budget per
				 * window, rate x window (no --burst) */
	__u32 algo;		/* enum sluice_algo */
	__u64 window_ns;	/* windows: --window (default: the period) */
	__u32 per;		/* enum sluice_per */
	__u32 per_len;		/* --per /LEN, in the family's own terms */
	__u64 ban_ns;		/* --ban, 0 for none */
	__u32 ban_after;	/* --requests: --ban-after, 0 without --ban */
	bool monitor;		/* --monitor */
	bool cluster;		/* --cluster: the limit holds across the cluster */
	__u32 index;		/* slot in the policy table, stable per identity */
};
/* A request rule (--requests): the check server answers for it; it is never
 * put in the trie, so it judges no packet. */
static inline bool rule_is_request(const struct rule *r)
{
	return r->unit == SLUICE_UNIT_REQUESTS;
}
struct policy {
	struct rule def;	/* the default, index 0 */
	struct rule rules[SLUICE_MAX_POLICIES - 1];
	unsigned int n;
	struct rule new_sources;	/* the new-source budget: rate 0 is off */
};
/* The rule with r's identity (CIDR and match), or NULL. */
struct rule *policy_find_rule(struct policy *p, const struct rule *r);
/* The rule of CIDR c without a match, or NULL. */
struct rule *policy_find(struct policy *p, const struct cidr *c);
/* Adds r, or replaces the rule with its identity (keeping its index). */
int policy_put(struct policy *p, const struct rule *r, char *why, size_t len);
void policy_init(struct policy *p);
const char *action_name(__u32 action);
void rule_cidr_str(const struct rule *r, char *buf, size_t len);

/* --- pins.c: where the pins live, and who may read them --- */
/* The directory that holds one pin directory per interface: sluice/ in
 * --bpffs DIR, $SLUICE_BPFFS, or the host's bpffs, found even from inside
 * `ip netns exec` (which hides it). Resolved once; main() does it first. */
const char *pin_root(void);
/* 0 when pin_root() can be used; else prints why and returns the exit code. */
int pin_root_check(void);
/* pin_root_check, and the pin root can be read by this process. */
int pin_root_readable(void);
/* The group attach gives the pins: NAME, which must exist (else a usage
 * error), or with NULL SLUICE_PIN_GROUP, created as a system group if
 * missing. Prints the error and returns its exit code. */
int pins_group(const char *name, gid_t *gid);
/* Makes the pin root and dir (0750) and every map pin (0640) owned by root
 * and readable by gid; the program pin is root's alone (0600). */
int pins_set_access(const char *dir, gid_t gid);

/* --- maps.c: pinned maps of one attached interface --- */
/* Every map of sluice's BPF object, listed once; X(name) is called for
 * each, the name being both the map's (and its pin's) and the field's. */
#define SLUICE_MAPS(X)							\
	X(src_buckets)							\
	X(policy_lpm)							\
	X(policy_table)							\
	X(config)							\
	X(counters)							\
	X(policy_counters)						\
	X(meta)								\
	X(events)							\
	X(bans)								\
	X(leases)							\
	X(cluster_hot)							\
	X(cluster_state)
#define SLUICE_MAP_FD_FIELD(name) int name;
struct sluice_maps {
	char iface[IF_NAMESIZE];
	char dir[SLUICE_DIR_MAX];
	SLUICE_MAPS(SLUICE_MAP_FD_FIELD)	/* descriptors, -1 when closed */
	int lock;		/* fd of the pin dir, flock()ed while editing policy */
	int ncpus;
};
void pin_dir(const char *iface, char *buf, size_t len);
/* Which interface a command acts on: -i, or the only attached one. Prints
 * the error and returns EXIT_USAGE when it cannot tell. */
int pick_iface(char *iface, size_t len);
/* List attached interfaces (pin dirs); returns count, names in out. */
int list_attached(char out[][IF_NAMESIZE], int max);
int maps_open(const char *iface, struct sluice_maps *m);
/* The same with read-only descriptors, for commands that only look. */
int maps_open_ro(const char *iface, struct sluice_maps *m);
/* Bits naming maps of SLUICE_MAPS, e.g. MAP_BIT(bans) | MAP_BIT(config). */
#define SLUICE_MAP_INDEX(name) SLUICE_MAPI_##name,
enum { SLUICE_MAPS(SLUICE_MAP_INDEX) SLUICE_MAPI_COUNT };
#define MAP_BIT(name) (1U << SLUICE_MAPI_##name)
/* The same with only the maps in writable open read-write, the rest
 * read-only: a daemon that writes a few maps holds no other write access. */
int maps_open_writing(const char *iface, struct sluice_maps *m, unsigned int writable);
/* maps_open_ro that prints nothing and returns -1 on failure. */
int maps_try_open_ro(const char *iface, struct sluice_maps *m);
void maps_close(struct sluice_maps *m);

/* --- cluster-wide limits (store.c, lease.c; the agent is cluster.c) --- */
int cluster_state_read(const struct sluice_maps *m, struct sluice_cluster_state *s);
int cluster_state_write(const struct sluice_maps *m, const struct sluice_cluster_state *s);
/* Writes s (its mode and peers decide the shares) and commits the stored
 * policy again under the pin-dir lock, so every --cluster rule takes its
 * new share. */
int cluster_recommit(struct sluice_maps *m, const struct sluice_cluster_state *s);
/* Whether an agent runs: mode up or fallback, its pid alive, its last loop
 * within 3 s and three sync intervals. */
bool cluster_agent_alive(const struct sluice_cluster_state *s, __u64 now_ns);
struct lease_writer;
/* Loads bpf/cluster.bpf.c's lease writer on m's leases map. */
int lease_writer_open(const struct sluice_maps *m, struct lease_writer **out);
/* Writes n leases (any n, in batches): each g[i].credit replaces its
 * lease's credit (expires_ns 0 releases it) and comes back as the credit
 * it had left, SLUICE_GRANT_FAILED when the map had no room. 0 or -errno. */
int lease_grant(struct lease_writer *w, struct sluice_grant *g, unsigned int n);
void lease_writer_close(struct lease_writer *w);
/* Deletes every lease (an agent starting: none is its own). */
int leases_clear(const struct sluice_maps *m);
/* The next hot notice: 0, or -ENOENT when there is none. */
int hot_pop(const struct sluice_maps *m, struct sluice_hot *h);
int maps_lock(struct sluice_maps *m);
/* Test-only: SLUICE_TEST_FAULT=map_update:N makes the Nth write to a map of
 * this command (map_update, map_delete, map_mmap below) fail with ENOMEM,
 * so tests can check that a failed write is reported and leaves nothing
 * half-written. Each returns what the call it wraps returns. */
int map_update(int fd, const void *key, const void *value, __u64 flags);
/* count entries at once (BPF_ANY); one syscall where the kernel has batches. */
int map_update_batch(int fd, const void *keys, size_t key_size, const void *values,
		     size_t value_size, __u32 count);
int map_delete(int fd, const void *key);
/* Deletes key and gives the value it held at that moment (one atomic step). */
int map_take(int fd, const void *key, void *value);
void *map_mmap(int fd, size_t len);
/* The picked interface's maps and live policy; with edit, writable and
 * locked against other editors. On error nothing is left open. */
int open_policy(struct sluice_maps *m, struct policy **p, bool edit);

/* --- store.c: the live policy in the maps --- */
struct sluice_limit;
/* A limit rule's limit as the policy table holds it (algo.h). */
void rule_limit(const struct rule *r, struct sluice_limit *l);
/* Reads the active generation's policy. */
int policy_read(const struct sluice_maps *m, struct policy *p);
/* Writes p into the inactive slot and flips to it; rules keep their index
 * while their identity stays. Prints the error and returns its exit code;
 * a policy refused before writing (EXIT_USAGE) changes nothing. */
int policy_commit(struct sluice_maps *m, struct policy *p);
/* The new-source budget (limit new-sources): rate units per period with
 * burst; rate 0 is off. Print the error and return its exit code. */
int new_sources_write(const struct sluice_maps *m, __u64 rate, __u32 period, __u64 burst);
int new_sources_read(const struct sluice_maps *m, __u64 *rate, __u32 *period, __u64 *burst);
/* Whether the budget is spent now: a new source would be dropped. */
int budget_state(const struct sluice_maps *m, bool *spent);
/* Rules are one rule when their CIDR and match are the same. */
bool rule_same_identity(const struct rule *a, const struct rule *b);
/* The trie entry of CIDR at in policy p: its candidate rules, in the order
 * the datapath tries them. Prints and returns EXIT_USAGE past
 * SLUICE_MATCH_MAX. */
int policy_candidates(const struct policy *p, const struct cidr *at, struct sluice_lpm_val *v);

/* Sums over CPUs. */
int read_counters(const struct sluice_maps *m, struct sluice_counter out[SLUICE_R_MAX]);
int read_policy_counter(const struct sluice_maps *m, __u32 idx,
			struct sluice_policy_counter *out);
int read_meta(const struct sluice_maps *m, struct sluice_meta *out);
/* An enum sluice_event's count, summed over CPUs. */
int read_event(const struct sluice_maps *m, __u32 event, __u64 *out);
long count_sources(const struct sluice_maps *m);
__u32 map_capacity(int fd);
__u32 map_id(int fd);
/* Whether the interface m was opened on still has these maps (it was not
 * detached, or detached and attached afresh, since): the daemons stop when
 * it has not. */
bool maps_still_current(const struct sluice_maps *m);
/* Calls fn (if any) for each bucket of the source table, read in batches,
 * until fn returns non-zero. Returns the buckets visited, or -errno. */
typedef int (*bucket_fn)(const struct sluice_src_key *key, const struct sluice_bucket *b,
			 void *ctx);
long walk_buckets(int fd, bucket_fn fn, void *ctx);
__u64 mono_now_ns(void);
/* The clock the datapath judges policy p by (SLUICE_POLICY_COARSE_CLOCK). */
__u64 policy_now_ns(const struct sluice_policy *p);
/* CLOCK_MONOTONIC_COARSE, the datapath's bpf_ktime_get_coarse_ns(). */
__u64 coarse_now_ns(void);
/* The coarse clock's tick, ns (0 if unknown). */
__u64 coarse_tick_ns(void);
const char *reason_name(__u32 reason);
const char *mode_name(__u32 xdp_mode);

/* --- output.c: one JSON writer --- */
struct json {
	FILE *f;
	int depth;
	bool need_comma[16];
};
void json_begin(struct json *j, FILE *f);
void json_obj_open(struct json *j, const char *key);
void json_obj_close(struct json *j);
void json_arr_open(struct json *j, const char *key);
void json_arr_close(struct json *j);
void json_str(struct json *j, const char *key, const char *val);
void json_u64(struct json *j, const char *key, __u64 val);
void json_double(struct json *j, const char *key, double val);
void json_bool(struct json *j, const char *key, bool val);
void json_null(struct json *j, const char *key);
void json_end(struct json *j);

/* --- stats.c: buckets and the rules that judge them, shared with ban.c --- */
struct bucket_row {
	struct sluice_src_key key;
	struct sluice_bucket b;
};
/* Every bucket; *n rows in *out (caller frees). Prints the error. */
int read_buckets(const struct sluice_maps *m, struct bucket_row **out, size_t *n);
/* The rule at table index idx of p (the default for 0), or NULL. */
const struct rule *rule_by_index(const struct policy *p, __u32 idx);
/* "default", "CIDR" or "CIDR MATCH-WORDS". */
void policy_rule_label(const struct policy *p, const struct rule *r, char *buf, size_t len);
/* The table entry idx of slot; 0, or -1. */
int policy_entry(const struct sluice_maps *m, __u32 slot, __u32 idx, struct sluice_policy *out);
/* The config word as it is now (zeroed if unreadable). */
void live_config(const struct sluice_maps *m, struct sluice_config *cfg);

/* --- ban.c: the ban table, written by the check server's escalation --- */
struct ban_writer {
	int fd;				/* the ban table (a dup: outlives the maps) */
	struct sluice_config *cfg;	/* the config map, shared mapping */
	size_t len;
};
/* Opens what ban_put needs from m, opened writable (as root: before the
 * server drops privileges). Prints the error and returns its exit code. */
int ban_writer_open(const struct sluice_maps *m, struct ban_writer *w);
void ban_writer_close(struct ban_writer *w);
/* Bans src (its home key, as parse_source gives it) in XDP until until_ns
 * (CLOCK_MONOTONIC) on behalf of request rule idx. Thread-safe. 0, or
 * -errno (-E2BIG: the table is full). */
int ban_put(struct ban_writer *w, const struct sluice_src_key *src, __u32 idx, __u64 until_ns);
/* Deletes the ban table's expired entries and, when none is left, lets
 * the datapath stop looking (unless a ban was added meanwhile). One
 * thread at a time. Returns the live bans, or -errno. */
int ban_sweep(struct ban_writer *w);
/* Called by a sweep between reading an entry as expired and taking it out
 * of the table. sluice defines none; a test defines one to ban the same
 * source again right there. */
void ban_sweep_window(const struct sluice_src_key *key) __attribute__((weak));

/* --- limit.c --- */
/* The keys of a rule's new fields in JSON (limit list -j, query -j). */
void rule_json_fields(struct json *j, const struct rule *r, bool is_default);

/* The commands (cli.h), each in its object's file. */
struct cli_cmd;
extern const struct cli_cmd attach_cmd, detach_cmd, status_cmd, limit_obj, policy_obj,
	stats_cmd, top_cmd, query_cmd, ban_obj, exporter_cmd, check_cmd;

#endif /* SLUICE_USER_H */
