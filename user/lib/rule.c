// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The rule parser: the words of doc/rules.rst to a struct rule (rule_print.c
 * turns it back into the same words). The command line, policy files and
 * the BPF tests all come through here. */
#include <ctype.h>
#include <string.h>
#include "rule.h"
#include "output.h"
#include "sluice/window.h"

#define ON_LIMIT	(RULE_ON_SET | RULE_ON_DEFAULT)
#define ON_MATCH	(RULE_ON_SET | RULE_ON_DEL | RULE_ON_ACCESS)

/* Positions in rule_opts, for the parser below. */
enum {
	O_RATE, O_RATE_BUDGET, O_BYTES, O_REQUESTS, O_REQUESTS_DEFAULT, O_BURST, O_PROTO,
	O_DPORT, O_SYN, O_PER, O_PER_DEFAULT, O_BAN, O_BAN_AFTER, O_MONITOR, O_ALGO, O_WINDOW,
	O_CLUSTER, O_REQUESTS_RULE,
};

#define G_UNIT		1	/* --rate, --bytes, --requests: one rule limits one unit */
#define G_BUDGET	2	/* limit new-sources: 'off' or --rate (rule_from_args checks) */

const struct cli_opt rule_opts[] = {
	[O_RATE] = CLI_OPT("rate", 0, "N[/s|/m|/h]", "packets per second (bare N), minute or hour",
		     ON_LIMIT, NULL, .need = ON_LIMIT, .group = G_UNIT),
	/* limit new-sources' own: the budget counts new sources */
	[O_RATE_BUDGET] = CLI_OPT("rate", 0, "N[/s|/m|/h]",
				  "new sources per second (bare N), minute or hour", RULE_ON_BUDGET,
				  NULL, .group = G_BUDGET),
	[O_BYTES] = CLI_OPT("bytes", 0, "N[/s|/m|/h]", "bytes (whole frames) per second, minute or hour",
		      ON_LIMIT, NULL, .need = ON_LIMIT, .group = G_UNIT),
	[O_REQUESTS] = CLI_OPT("requests", 0, "N[/s|/m|/h]",
			 "HTTP requests the check server answers (a request rule)", RULE_ON_SET, NULL,
			 .need = RULE_ON_SET, .group = G_UNIT),
	/* limit default's own: no request rule, no bucket per /LEN */
	[O_REQUESTS_DEFAULT] = CLI_OPT("requests", 0, "N[/s|/m|/h]", NULL, RULE_ON_DEFAULT, NULL,
				       .refuse = "request rules need a CIDR (set them for "
						 "0.0.0.0/0 and ::/0)"),
	[O_BURST] = CLI_OPT("burst", 0, "N", "back to back, in the rate's unit (default: one second's worth)",
		      ON_LIMIT | RULE_ON_BUDGET, NULL),
	[O_PROTO] = CLI_OPT("proto", 0, "tcp|udp|icmp|icmpv6|NUM", "only packets of this L4 protocol",
		      ON_MATCH, NULL),
	[O_DPORT] = CLI_OPT("dport", 0, "N[-M]", "only TCP/UDP to these destination ports (with --proto tcp|udp)",
		      ON_MATCH, NULL),
	[O_SYN] = CLI_OPT("syn", 0, NULL, "only TCP SYN without ACK: new connections (implies --proto tcp)",
		    ON_MATCH, NULL),
	[O_PER] = CLI_OPT("per", 0, "source|/LEN|rule",
		    "a bucket per address (default), per /LEN of it, or one for the rule",
		    RULE_ON_SET, NULL),
	[O_PER_DEFAULT] = CLI_OPT("per", 0, "source|rule",
				  "a bucket per address (default) or one for the default",
				  RULE_ON_DEFAULT, NULL),
	[O_BAN] = CLI_OPT("ban", 0, "DURATION", "drop a limited source for DURATION (250ms, 30s, 5m, 1h, 1d)",
		    ON_LIMIT, NULL),
	[O_BAN_AFTER] = CLI_OPT("ban-after", 0, "N",
			  "--requests: ban in XDP after N requests rejected in a row (default 10)",
			  RULE_ON_SET, NULL),
	[O_MONITOR] = CLI_OPT("monitor", 0, NULL, "count would-be drops as monitored, drop nothing",
			ON_LIMIT, NULL),
	[O_ALGO] = CLI_OPT("algo", 0, "token-bucket|fixed-window|sliding-window",
		     "how the limit decides (default token-bucket)", ON_LIMIT, NULL),
	[O_WINDOW] = CLI_OPT("window", 0, "DURATION",
		       "a window algorithm's window (default: the rate's unit)", ON_LIMIT, NULL),
	[O_CLUSTER] = CLI_OPT("cluster", 0, NULL,
			"one limit across every host of 'sluice cluster join' (token bucket, --rate)",
			ON_LIMIT, NULL),
	/* limit del's: the CIDR's request rule (cli.c picks the entry the
	 * command takes when two share a name) */
	[O_REQUESTS_RULE] = CLI_OPT("requests", 0, NULL, "the request rule of CIDR (--requests)",
				    RULE_ON_DEL, NULL),
	CLI_OPT_END,
};

const struct cli_cmd rule_cmd_set = {
	.name = "set", .path = "limit set", .args = "CIDR", .min_pos = 1, .max_pos = 1,
	.opts = rule_opts, .on = RULE_ON_SET, .json_quiet = true, .run = rule_edit_run, .id = RULE_SET,
	.help = "Limits sources in CIDR whose packets the match (if any) fits; --rate, --bytes\n"
		"or --requests is required. A rule is named by its CIDR and match: the same CIDR\n"
		"and match again replaces it. A --requests rule limits the HTTP requests that\n"
		"'sluice check-server' answers (no match; its identity is CIDR and --requests);\n"
		"with --ban, a source sending --ban-after requests rejected in a row is banned in\n"
		"XDP for the --ban duration.",
};
const struct cli_cmd rule_cmd_default = {
	.name = "default", .path = "limit default", .min_pos = 0, .max_pos = 0,
	.opts = rule_opts, .on = RULE_ON_DEFAULT, .json_quiet = true, .run = rule_edit_run, .id = RULE_DEFAULT,
	.help = "The limit of sources no rule covers; --rate or --bytes is required. --per takes\n"
		"source or rule here: for a bucket per /LEN, set rules for 0.0.0.0/0 and ::/0.",
};
const struct cli_cmd rule_cmd_del = {
	.name = "del", .path = "limit del", .args = "CIDR", .min_pos = 1, .max_pos = 1,
	.opts = rule_opts, .on = RULE_ON_DEL, .json_quiet = true, .run = rule_edit_run, .id = RULE_DEL,
	.help = "Deletes the rule (limit, allow or deny) of CIDR with this match, or with\n"
		"--requests its request rule.",
};
const struct cli_cmd rule_cmd_allow = {
	.name = "allow", .path = "allow", .args = "CIDR", .min_pos = 1, .max_pos = 1,
	.opts = rule_opts, .on = RULE_ON_ACCESS, .json_quiet = true, .run = rule_edit_run, .id = RULE_ALLOW,
	.help = "Sources in CIDR are never limited (only their packets the match fits).",
};
const struct cli_cmd rule_cmd_deny = {
	.name = "deny", .path = "deny", .args = "CIDR", .min_pos = 1, .max_pos = 1,
	.opts = rule_opts, .on = RULE_ON_ACCESS, .json_quiet = true, .run = rule_edit_run, .id = RULE_DENY,
	.help = "Packets from CIDR (that the match fits) are always dropped.",
};

const struct cli_cmd rule_cmd_new_sources = {
	.name = "new-sources", .path = "limit new-sources", .args = "off", .args_group = G_BUDGET,
	.min_pos = 0, .max_pos = 1,
	.opts = rule_opts, .on = RULE_ON_BUDGET, .json_quiet = true, .run = rule_edit_run, .id = RULE_NEW_SOURCES,
	.help = "How fast sources never seen before may take an entry of the source table\n"
		"(spoofed floods): a packet of a new source over this budget is dropped as\n"
		"new_source_limited and takes no entry. --rate in new sources per second, minute\n"
		"or hour; 'off' removes the budget (the default).",
};

static const struct {
	const char *name;
	__u8 proto;
} protos[] = {
	{ "tcp", 6 }, { "udp", 17 }, { "icmp", 1 }, { "icmpv6", 58 },
};

#define IPPROTO_TCP_NUM		6
#define IPPROTO_UDP_NUM		17
#define IPPROTO_ICMP_NUM	1
#define IPPROTO_ICMPV6_NUM	58
#define PORT_MAX		65535ULL

static const struct {
	const char *suffix;
	__u64 ns;
} duration_units[] = {
	{ "d", 86400ULL * SLUICE_NS_PER_SEC },
	{ "h", 3600ULL * SLUICE_NS_PER_SEC },
	{ "m", 60ULL * SLUICE_NS_PER_SEC },
	{ "s", SLUICE_NS_PER_SEC },
	{ "ms", 1000000ULL },
};

const char *per_name(__u32 per)
{
	switch (per) {
	case SLUICE_PER_PREFIX: return "prefix";
	case SLUICE_PER_RULE:   return "rule";
	default:                return "source";
	}
}

static const char *const algo_names[SLUICE_ALGO_MAX] = {
	[SLUICE_ALGO_TOKEN_BUCKET] = "token-bucket",
	[SLUICE_ALGO_FIXED_WINDOW] = "fixed-window",
	[SLUICE_ALGO_SLIDING_WINDOW] = "sliding-window",
};

const char *algo_name(__u32 algo)
{
	return algo < SLUICE_ALGO_MAX ? algo_names[algo] : "unknown";
}

int algo_parse(const char *s, __u32 *algo)
{
	for (__u32 i = 0; i < SLUICE_ALGO_MAX; i++)
		if (!strcmp(s, algo_names[i])) {
			*algo = i;
			return 0;
		}
	return -1;
}

__u32 window_count_bits(__u64 budget)
{
	__u32 bits = 0;

	while (bits < 64 && (budget >> bits))
		bits++;
	return bits ? bits : 1;
}

const char *unit_name(__u32 unit)
{
	return unit == SLUICE_UNIT_BYTES ? "bytes" : unit == SLUICE_UNIT_REQUESTS ? "requests" :
	       "packets";
}

const char *unit_option(__u32 unit)
{
	return unit == SLUICE_UNIT_BYTES ? "--bytes" : unit == SLUICE_UNIT_REQUESTS ? "--requests" :
	       "--rate";
}

void proto_name(__u8 proto, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
		if (protos[i].proto == proto) {
			snprintf(buf, len, "%s", protos[i].name);
			return;
		}
	snprintf(buf, len, "%u", proto);
}

/* N[/s|/m|/h] of --rate or --bytes. */
int rule_parse_rate(const char *opt, const char *s, struct rule *r, char *why, size_t len)
{
	const char *what = unit_name(r->unit);
	char num[24];
	size_t n = 0;
	__u64 rate;

	while (isdigit((unsigned char)s[n]))
		n++;
	if (n == 0 || n >= sizeof(num) || (s[n] && s[n] != '/')) {
		snprintf(why, len, "bad %s '%s': give whole %s per second (N or N/s), minute (N/m) "
			 "or hour (N/h), no k/M/G suffixes", opt, s, what);
		return -1;
	}
	memcpy(num, s, n);
	num[n] = '\0';
	r->period = SLUICE_PERIOD_SEC;
	if (s[n]) {
		if (!strcmp(s + n, "/s")) {
			r->period = SLUICE_PERIOD_SEC;
		} else if (!strcmp(s + n, "/m")) {
			r->period = SLUICE_PERIOD_MIN;
		} else if (!strcmp(s + n, "/h")) {
			r->period = SLUICE_PERIOD_HOUR;
		} else {
			snprintf(why, len, "bad %s '%s': unsupported unit '%s', use /s, /m or /h",
				 opt, s, s + n);
			return -1;
		}
	}
	if (!parse_u64(num, SLUICE_RATE_MIN, SLUICE_RATE_MAX * r->period, &rate)) {
		snprintf(why, len, "bad %s '%s': give %llu to %llu %s per second (or as much per "
			 "minute or hour)", opt, s, SLUICE_RATE_MIN, SLUICE_RATE_MAX, what);
		return -1;
	}
	r->rate = rate;
	return 0;
}

/* DURATION: a whole number and ms, s, m, h or d. */
int rule_parse_duration(const char *opt, const char *s, __u64 min_ns, __u64 max_ns,
			__u64 *out, char *why, size_t len)
{
	char num[24];
	size_t n = 0;
	__u64 v;

	while (isdigit((unsigned char)s[n]))
		n++;
	if (n == 0 || n >= sizeof(num)) {
		snprintf(why, len, "bad %s '%s': give a whole number and a unit: 250ms, 30s, 5m, 1h or 7d",
			 opt, s);
		return -1;
	}
	memcpy(num, s, n);
	num[n] = '\0';
	for (size_t i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++) {
		if (strcmp(s + n, duration_units[i].suffix) != 0)
			continue;
		if (!parse_u64(num, 0, max_ns / duration_units[i].ns + 1, &v) ||
		    v * duration_units[i].ns > max_ns || v * duration_units[i].ns < min_ns) {
			char lo[24], hi[24];

			duration_words(min_ns, lo, sizeof(lo));
			duration_words(max_ns, hi, sizeof(hi));
			snprintf(why, len, "bad %s '%s': give %s to %s", opt, s, lo, hi);
			return -1;
		}
		*out = v * duration_units[i].ns;
		return 0;
	}
	snprintf(why, len, "bad %s '%s': %s, use ms, s, m, h or d (250ms, 30s, 5m, 1h, 7d)", opt, s,
		 s[n] ? "unsupported unit" : "a duration needs a unit");
	return -1;
}

void duration_words(__u64 ns, char *buf, size_t len)
{
	for (size_t i = 0; i < sizeof(duration_units) / sizeof(duration_units[0]); i++)
		if (ns && ns % duration_units[i].ns == 0) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(ns / duration_units[i].ns),
				 duration_units[i].suffix);
			return;
		}
	/* Not whole milliseconds (never written by the parser): round up. */
	snprintf(buf, len, "%llums", (unsigned long long)((ns + 999999) / 1000000));
}

static int parse_proto(const char *s, struct rule *r, char *why, size_t len)
{
	__u64 v;

	for (size_t i = 0; i < sizeof(protos) / sizeof(protos[0]); i++)
		if (!strcmp(s, protos[i].name)) {
			r->match.proto = protos[i].proto;
			return 0;
		}
	if (!parse_u64(s, 1, 255, &v)) {
		snprintf(why, len, "bad --proto '%s': give tcp, udp, icmp, icmpv6 or a protocol "
			 "number 1..255", s);
		return -1;
	}
	r->match.proto = (__u8)v;
	return 0;
}

static int parse_port(const char *s, __u16 *out)
{
	__u64 v;

	if (!parse_u64(s, 1, PORT_MAX, &v))
		return -1;
	*out = (__u16)v;
	return 0;
}

static int parse_dport(const char *s, struct rule *r, char *why, size_t len)
{
	char buf[16];
	const char *dash = strchr(s, '-');

	if (strlen(s) >= sizeof(buf))
		goto bad;
	memcpy(buf, s, strlen(s) + 1);
	if (dash) {
		buf[dash - s] = '\0';
		if (parse_port(buf, &r->match.dport_lo) || parse_port(dash + 1, &r->match.dport_hi))
			goto bad;
		if (r->match.dport_lo > r->match.dport_hi) {
			snprintf(why, len, "bad --dport '%s': the range is backwards, write %u-%u",
				 s, r->match.dport_hi, r->match.dport_lo);
			return -1;
		}
		return 0;
	}
	if (parse_port(buf, &r->match.dport_lo))
		goto bad;
	r->match.dport_hi = r->match.dport_lo;
	return 0;
bad:
	snprintf(why, len, "bad --dport '%s': give a port or a range N-M of ports 1..65535", s);
	return -1;
}

/* --proto, --dport, --syn against the rule's family. */
static int parse_match(const struct cli_args *a, struct rule *r, char *why, size_t len)
{
	bool v4 = cidr_family(&r->cidr) == SLUICE_FAMILY_V4;
	char name[16];

	if (a->val[O_PROTO]) {
		if (parse_proto(a->val[O_PROTO], r, why, len))
			return -1;
		r->match.flags |= SLUICE_MATCH_PROTO;
		if (r->match.proto == IPPROTO_ICMP_NUM && !v4) {
			snprintf(why, len, "--proto icmp on an IPv6 rule: use --proto icmpv6");
			return -1;
		}
		if (r->match.proto == IPPROTO_ICMPV6_NUM && v4) {
			snprintf(why, len, "--proto icmpv6 on an IPv4 rule: use --proto icmp");
			return -1;
		}
	}
	if (a->val[O_SYN]) {
		if ((r->match.flags & SLUICE_MATCH_PROTO) && r->match.proto != IPPROTO_TCP_NUM) {
			proto_name(r->match.proto, name, sizeof(name));
			snprintf(why, len, "--syn matches TCP segments: it cannot go with --proto %s",
				 name);
			return -1;
		}
		r->match.flags |= SLUICE_MATCH_SYN | SLUICE_MATCH_PROTO;
		r->match.proto = IPPROTO_TCP_NUM;
	}
	if (a->val[O_DPORT]) {
		if (!(r->match.flags & SLUICE_MATCH_PROTO) ||
		    (r->match.proto != IPPROTO_TCP_NUM && r->match.proto != IPPROTO_UDP_NUM)) {
			snprintf(why, len, "--dport needs a port protocol: add --proto tcp or "
				 "--proto udp (or --syn)");
			return -1;
		}
		if (parse_dport(a->val[O_DPORT], r, why, len))
			return -1;
		r->match.flags |= SLUICE_MATCH_PORT;
	}
	return 0;
}

/* --per source|/LEN|rule. */
static int parse_per(const char *s, struct rule *r, bool is_default, char *why, size_t len)
{
	bool v4 = cidr_family(&r->cidr) == SLUICE_FAMILY_V4;
	__u32 own = v4 ? r->cidr.prefixlen - SLUICE_V4_MAPPED_PREFIX : r->cidr.prefixlen;
	__u32 max = v4 ? 32 : 128;
	__u64 n;

	if (!strcmp(s, "source")) {
		r->per = SLUICE_PER_SOURCE;
		return 0;
	}
	if (!strcmp(s, "rule")) {
		r->per = SLUICE_PER_RULE;
		return 0;
	}
	if (s[0] != '/') {
		snprintf(why, len, "bad --per '%s': give source, /LEN (a bucket per /LEN of the "
			 "source) or rule", s);
		return -1;
	}
	if (is_default) {
		snprintf(why, len, "limit default takes --per source or rule: for a bucket per %s, "
			 "set rules for 0.0.0.0/0 and ::/0 with --per %s", s, s);
		return -1;
	}
	if (!parse_u64(s + 1, 0, 255, &n)) {
		snprintf(why, len, "bad --per '%s': give /LEN, a prefix length", s);
		return -1;
	}
	if (n == 0) {
		snprintf(why, len, "bad --per '/0': one bucket for the whole rule is --per rule");
		return -1;
	}
	if (n > max) {
		snprintf(why, len, "bad --per '%s': an %s address has %u bits", s,
			 v4 ? "IPv4" : "IPv6", max);
		return -1;
	}
	if (n < own) {
		snprintf(why, len, "bad --per '%s': shorter than the rule's own /%u; one bucket "
			 "for the whole rule is --per rule", s, own);
		return -1;
	}
	if (n == max) {		/* a bucket per address: the default */
		r->per = SLUICE_PER_SOURCE;
		return 0;
	}
	r->per = SLUICE_PER_PREFIX;
	r->per_len = (__u32)n;
	return 0;
}

/* --window (s, NULL for the default) after the rate, for r->algo. */
int rule_parse_window(const char *s, struct rule *r, char *why, size_t len)
{
	char win[24], rate[32];
	unsigned __int128 units;
	__u64 period_ns, max;
	const char *what;

	period_ns = (__u64)r->period * SLUICE_NS_PER_SEC;
	r->window_ns = period_ns;
	if (s && rule_parse_duration("--window", s, SLUICE_WINDOW_NS_MIN, SLUICE_WINDOW_NS_MAX,
				     &r->window_ns, why, len))
		return -1;
	what = unit_name(r->unit);
	duration_words(r->window_ns, win, sizeof(win));
	rule_rate_words(r, rate, sizeof(rate));
	units = (unsigned __int128)r->rate * r->window_ns;
	if (units % period_ns) {
		snprintf(why, len, "%s %s over --window %s is %.6g %s a window: make rate x "
			 "window a whole number", unit_option(r->unit),
			 rate, win, (double)units / (double)period_ns, what);
		return -1;
	}
	units /= period_ns;
	max = r->algo == SLUICE_ALGO_SLIDING_WINDOW ? SLUICE_SW_BUDGET_MAX : SLUICE_FW_BUDGET_MAX;
	if (units > max) {
		snprintf(why, len, "%s %s over --window %s is %llu %s a window: --algo %s holds "
			 "at most %llu; shorten --window", unit_option(r->unit), rate, win, (unsigned long long)units, what,
			 algo_name(r->algo), (unsigned long long)max);
		return -1;
	}
	r->burst = (__u64)units;
	return 0;
}

/* --algo and --window, after the rate: a window algorithm's budget is
 * rate x window, a whole number of units that its state word can hold. */
static int parse_algo(const struct cli_args *a, struct rule *r, char *why, size_t len)
{
	char win[24], ban[24];
	__u64 max, bw;

	if (a->val[O_ALGO] && algo_parse(a->val[O_ALGO], &r->algo)) {
		snprintf(why, len, "bad --algo '%s': give token-bucket, fixed-window or "
			 "sliding-window", a->val[O_ALGO]);
		return -1;
	}
	if (r->algo == SLUICE_ALGO_TOKEN_BUCKET) {
		if (a->val[O_WINDOW]) {
			snprintf(why, len, "--window goes with --algo fixed-window or sliding-window; "
				 "a token bucket has --burst");
			return -1;
		}
		return 0;
	}
	if (a->val[O_BURST]) {
		snprintf(why, len, "--burst is a token bucket's: --algo %s admits rate x window "
			 "per window (set --window)", algo_name(r->algo));
		return -1;
	}
	if (rule_parse_window(a->val[O_WINDOW], r, why, len))
		return -1;
	if (r->algo == SLUICE_ALGO_SLIDING_WINDOW && r->ban_ns) {
		/* A ban keeps its window in the word's tag: it may lie at
		 * most a quarter of the tag's range ahead. */
		bw = sw_ban_windows(r->ban_ns, r->window_ns);
		max = 1ULL << (sw_tag_bits(window_count_bits(r->burst)) - 2);
		if (bw > max) {
			duration_words(r->ban_ns, ban, sizeof(ban));
			duration_words(r->window_ns, win, sizeof(win));
			snprintf(why, len, "--ban %s is %llu windows of %s: a sliding window's ban "
				 "spans at most %llu; lengthen --window or shorten --ban", ban,
				 (unsigned long long)bw, win, (unsigned long long)max);
			return -1;
		}
	}
	return 0;
}

/* --burst N after the rate. */
int rule_parse_burst(const char *s, struct rule *r, char *why, size_t len)
{
	__u64 burst;

	if (!parse_u64(s, SLUICE_BURST_MIN, SLUICE_BURST_MAX, &burst)) {
		snprintf(why, len, "bad --burst '%s': give %llu..%llu %s", s,
			 SLUICE_BURST_MIN, SLUICE_BURST_MAX, unit_name(r->unit));
		return -1;
	}
	/* burst * period <= 1e9 * 3600 fits in 64 bits. */
	if (burst * r->period / r->rate >= SLUICE_BURST_SECONDS_MAX) {
		snprintf(why, len, "bad --burst %llu: worth %llu seconds or more of the rate; "
			 "at most %llu seconds' worth", (unsigned long long)burst,
			 SLUICE_BURST_SECONDS_MAX, SLUICE_BURST_SECONDS_MAX);
		return -1;
	}
	r->burst = burst;
	return 0;
}

/* A request rule (--requests) counts HTTP requests the check server sees,
 * not packets: it has no match, and needs a CIDR. */
/* A request rule has no match (limit default refuses --requests in its
 * option table). */
static int check_requests(const struct cli_args *a, char *why, size_t len)
{
	static const int packet_only[] = { O_PROTO, O_DPORT, O_SYN };

	for (size_t i = 0; i < sizeof(packet_only) / sizeof(packet_only[0]); i++)
		if (a->val[packet_only[i]]) {
			snprintf(why, len, "--%s matches packets: a --requests rule counts the HTTP "
				 "requests of its sources, whatever their packets",
				 rule_opts[packet_only[i]].name);
			return -1;
		}
	return 0;
}

/* --ban-after N: a request rule's, with its --ban. */
static int parse_ban_after(const struct cli_args *a, struct rule *r, char *why, size_t len)
{
	__u64 n = SLUICE_BAN_AFTER_DEFAULT;

	if (a->val[O_BAN_AFTER]) {
		if (!rule_is_request(r)) {
			snprintf(why, len, "--ban-after goes with --requests: a packet rule's --ban "
				 "starts when it limits");
			return -1;
		}
		if (!r->ban_ns) {
			snprintf(why, len, "--ban-after needs --ban DURATION: how long to ban");
			return -1;
		}
		if (!parse_u64(a->val[O_BAN_AFTER], SLUICE_BAN_AFTER_MIN, SLUICE_BAN_AFTER_MAX, &n)) {
			snprintf(why, len, "bad --ban-after '%s': give %llu..%llu requests",
				 a->val[O_BAN_AFTER], SLUICE_BAN_AFTER_MIN, SLUICE_BAN_AFTER_MAX);
			return -1;
		}
	}
	if (rule_is_request(r) && r->ban_ns)
		r->ban_after = (__u32)n;
	return 0;
}

/* --cluster: a packet token bucket whose Redis-side bucket keeps a TAT in
 * microseconds (as a double), without a ban (a ban is one host's). */
static int check_cluster(const struct rule *r, char *why, size_t len)
{
	const char *no = rule_is_request(r) ? "--requests (the check server is one host's)" :
			 r->unit == SLUICE_UNIT_BYTES ? "--bytes (leases count packets)" :
			 r->algo != SLUICE_ALGO_TOKEN_BUCKET ? "--algo windows (the Redis side is a token bucket)" :
			 r->ban_ns ? "--ban (a ban is one host's)" :
			 r->monitor ? "--monitor (a monitored rule spends no lease)" : NULL;

	if (no) {
		snprintf(why, len, "--cluster does not go with %s", no);
		return -1;
	}
	if (r->rate > SLUICE_CLUSTER_RATE_MAX * r->period) {
		snprintf(why, len, "--cluster takes at most %llu per second: Redis keeps its "
			 "buckets in microseconds", SLUICE_CLUSTER_RATE_MAX);
		return -1;
	}
	return 0;
}

/* --rate/--bytes/--requests, --burst, --per, --ban, --ban-after, --monitor,
 * --algo, --window. */
static int parse_limit(const struct cli_args *a, struct rule *r, bool is_default,
		       char *why, size_t len)
{
	int given = !!a->val[O_RATE] + !!a->val[O_BYTES] + !!a->val[O_REQUESTS];
	const char *val, *per;

	if (given > 1) {
		snprintf(why, len, "give one of --rate (packets), --bytes or --requests: one rule "
			 "limits one unit");
		return -1;
	}
	if (!given) {
		snprintf(why, len, "missing --rate N (packets), --bytes N or --requests N: what to "
			 "limit");
		return -1;
	}
	r->action = SLUICE_ACT_LIMIT;
	r->unit = a->val[O_BYTES] ? SLUICE_UNIT_BYTES :
		  a->val[O_REQUESTS] ? SLUICE_UNIT_REQUESTS : SLUICE_UNIT_PACKETS;
	val = a->val[O_BYTES] ? a->val[O_BYTES] :
	      a->val[O_REQUESTS] ? a->val[O_REQUESTS] : a->val[O_RATE];
	if (rule_parse_rate(unit_option(r->unit), val, r, why, len))
		return -1;
	/* Default burst: one second's worth, at least 1. */
	r->burst = (r->rate + r->period - 1) / r->period;
	if (a->val[O_BURST] && rule_parse_burst(a->val[O_BURST], r, why, len))
		return -1;
	per = a->val[O_PER] ? a->val[O_PER] : a->val[O_PER_DEFAULT];
	if (per && parse_per(per, r, is_default, why, len))
		return -1;
	if (a->val[O_BAN] && rule_parse_duration("--ban", a->val[O_BAN], SLUICE_BAN_NS_MIN,
					     SLUICE_BAN_NS_MAX, &r->ban_ns, why, len))
		return -1;
	if (parse_ban_after(a, r, why, len))
		return -1;
	r->monitor = a->val[O_MONITOR] != NULL;
	if (parse_algo(a, r, why, len))
		return -1;
	r->cluster = a->val[O_CLUSTER] != NULL;
	return r->cluster ? check_cluster(r, why, len) : 0;
}

/* Every "from" in the message why becomes "to" (as room allows). */
static void replace_words(char *why, size_t len, const char *from, const char *to)
{
	char out[512], *hit;
	const char *s = why;
	size_t n = 0, fl = strlen(from);

	while ((hit = strstr(s, from)) && n < sizeof(out)) {
		n += (size_t)snprintf(out + n, sizeof(out) - n, "%.*s%s", (int)(hit - s), s, to);
		s = hit + fl;
	}
	if (n >= sizeof(out) || s == why)
		return;
	snprintf(out + n, sizeof(out) - n, "%s", s);
	snprintf(why, len, "%s", out);
}

int rule_from_args(const struct cli_cmd *c, const struct cli_args *a, struct rule *r,
		   char *why, size_t len)
{
	struct cli_args budget;	/* new-sources: its --rate where parse_limit reads it */

	memset(r, 0, sizeof(*r));
	r->period = SLUICE_PERIOD_SEC;
	if (a->val[O_REQUESTS] && check_requests(a, why, len))
		return -1;
	if (c->id != RULE_DEFAULT && c->id != RULE_NEW_SOURCES) {
		if (a->npos < 1) {
			snprintf(why, len, "%s needs a CIDR (e.g. 198.18.0.0/15 or 2001:2::/48)",
				 c->path);
			return -1;
		}
		if (parse_cidr(a->pos[0], &r->cidr, why, len))
			return -1;
		if (parse_match(a, r, why, len))
			return -1;
	}
	switch (c->id) {
	case RULE_NEW_SOURCES:
		if (a->npos == 1) {
			if (strcmp(a->pos[0], "off") != 0) {
				snprintf(why, len, "unknown word '%s': give --rate N [--burst M] "
					 "or off", a->pos[0]);
				return -1;
			}
			if (a->val[O_RATE_BUDGET] || a->val[O_BURST]) {
				snprintf(why, len, "'off' takes no --rate or --burst");
				return -1;
			}
			return 0;	/* rate 0: off */
		}
		if (!a->val[O_RATE_BUDGET]) {
			snprintf(why, len, "missing --rate N[/s|/m|/h]: new sources per second, "
				 "minute or hour (or 'off')");
			return -1;
		}
		budget = *a;
		budget.val[O_RATE] = a->val[O_RATE_BUDGET];
		if (parse_limit(&budget, r, true, why, len)) {
			/* The budget counts new sources, not packets. */
			replace_words(why, len, "packets", "new sources");
			return -1;
		}
		return 0;
	case RULE_SET:
	case RULE_DEFAULT:
		return parse_limit(a, r, c->id == RULE_DEFAULT, why, len);
	case RULE_ALLOW:
		r->action = SLUICE_ACT_ALLOW;
		return 0;
	case RULE_DENY:
		r->action = SLUICE_ACT_DENY;
		return 0;
	case RULE_DEL:
		if (a->val[O_REQUESTS_RULE]) {
			if (r->match.flags) {
				snprintf(why, len, "a request rule has no match: give limit del CIDR "
					 "--requests alone");
				return -1;
			}
			r->unit = SLUICE_UNIT_REQUESTS;
		}
		return 0;
	default:
		return 0;
	}
}

int rule_parse_words(int argc, char **argv, struct rule *r, enum rule_verb *verb,
		     char *why, size_t len)
{
	const struct cli_cmd *c = NULL;
	struct cli_args a;
	int skip = 1;

	if (argc < 1) {
		snprintf(why, len, "empty rule: expected limit, allow or deny");
		return -1;
	}
	if (!strcmp(argv[0], "allow")) {
		c = &rule_cmd_allow;
	} else if (!strcmp(argv[0], "deny")) {
		c = &rule_cmd_deny;
	} else if (!strcmp(argv[0], "limit")) {
		skip = 2;
		if (argc < 2) {
			snprintf(why, len, "limit needs default, set, del or new-sources");
			return -1;
		}
		if (!strcmp(argv[1], "set"))
			c = &rule_cmd_set;
		else if (!strcmp(argv[1], "default"))
			c = &rule_cmd_default;
		else if (!strcmp(argv[1], "del"))
			c = &rule_cmd_del;
		else if (!strcmp(argv[1], "new-sources"))
			c = &rule_cmd_new_sources;
		if (!c) {
			snprintf(why, len, "unknown limit command '%s': expected default, set, del "
				 "or new-sources", argv[1]);
			return -1;
		}
	} else {
		snprintf(why, len, "unknown rule '%s': expected limit, allow or deny", argv[0]);
		return -1;
	}
	if (cli_parse(c, argc - skip, argv + skip, &a, why, len))
		return -1;
	*verb = (enum rule_verb)c->id;
	return rule_from_args(c, &a, r, why, len);
}

int rule_parse_line(char *line, struct rule *r, enum rule_verb *verb, char *why, size_t len)
{
	char *words[RULE_WORDS_MAX];
	int n = 0;
	char *s = line;

	for (;;) {
		while (isspace((unsigned char)*s))
			s++;
		if (!*s || *s == '#')
			break;
		if (n == RULE_WORDS_MAX) {
			snprintf(why, len, "too many words: a rule has at most %d", RULE_WORDS_MAX);
			return -1;
		}
		words[n++] = s;
		while (*s && !isspace((unsigned char)*s) && *s != '#')
			s++;
		if (*s == '#') {
			*s = '\0';
			break;
		}
		if (*s)
			*s++ = '\0';
	}
	if (n == 0)
		return 0;
	return rule_parse_words(n, words, r, verb, why, len) ? -1 : 1;
}
