/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One rule parser: words ("limit set CIDR --rate 10/m --per /24") to a
 * struct rule and back, for the command line, policy files and the tests. */
#ifndef SLUICE_RULE_H
#define SLUICE_RULE_H

#include <stdio.h>
#include "policy.h"
#include "cli.h"

/* What a rule line does; also the cli_cmd.id of its command. */
enum rule_verb {
	RULE_SET = 1,		/* limit set CIDR ... */
	RULE_DEFAULT,		/* limit default ... */
	RULE_DEL,		/* limit del CIDR [match] */
	RULE_ALLOW,		/* allow CIDR [match] */
	RULE_DENY,		/* deny CIDR [match] */
	RULE_NEW_SOURCES,	/* limit new-sources --rate N [--burst M] | off */
};

/* The option table of every rule command; each command takes the entries
 * whose only has its cli_cmd.on bit. */
#define RULE_ON_SET	0x1
#define RULE_ON_DEFAULT	0x2
#define RULE_ON_DEL	0x4
#define RULE_ON_ACCESS	0x8	/* allow, deny */
#define RULE_ON_BUDGET	0x10	/* limit new-sources */
extern const struct cli_opt rule_opts[];

/* The rule commands (limit set/default/del, allow, deny). */
extern const struct cli_cmd rule_cmd_set, rule_cmd_default, rule_cmd_del,
	rule_cmd_allow, rule_cmd_deny, rule_cmd_new_sources;
/* Their run function (limit.c): one live edit. */
int rule_edit_run(const struct cli_cmd *c, struct cli_args *a);

/* A parsed rule command line into *r. 0, or -1 with the reason in why. */
int rule_from_args(const struct cli_cmd *c, const struct cli_args *a, struct rule *r,
		   char *why, size_t len);
/* Words from the verb on ("limit set 198.18.0.0/16 --rate 5"): 0 and *r,
 * *verb filled, or -1 with the reason in why. */
int rule_parse_words(int argc, char **argv, struct rule *r, enum rule_verb *verb,
		     char *why, size_t len);
/* One policy-file line (modified in place: split into words; '#' starts a
 * comment). 1 when it held a rule, 0 for a blank or comment line, -1 with
 * the reason in why. */
int rule_parse_line(char *line, struct rule *r, enum rule_verb *verb, char *why, size_t len);

/* The parsers of single rule words, for commands that take the same words
 * with the same meaning and errors (sluice simulate); each is 0, or -1 with
 * the reason in why. The rate first (r->unit set): into r->rate and
 * r->period. --burst N into r->burst. A DURATION (250ms, 30s, 5m, 1h, 1d) in
 * [min_ns, max_ns]. --window (s; NULL for the rate's unit) into
 * r->window_ns, and the budget rate x window, which must be whole and fit
 * r->algo's word, into r->burst. */
int rule_parse_rate(const char *opt, const char *s, struct rule *r, char *why, size_t len);
int rule_parse_burst(const char *s, struct rule *r, char *why, size_t len);
int rule_parse_duration(const char *opt, const char *s, __u64 min_ns, __u64 max_ns, __u64 *out,
			char *why, size_t len);
int rule_parse_window(const char *s, struct rule *r, char *why, size_t len);

/* The words of r: "limit default ...", "limit set CIDR ...", "allow CIDR
 * ..." (is_default for the default). A default that does not limit has no
 * words: the empty string. */
void rule_format(const struct rule *r, bool is_default, char *buf, size_t len);
/* The keys every rule listing has in JSON (limit list -j; query -j adds
 * its own). */
struct json;
void rule_json_fields(struct json *j, const struct rule *r, bool is_default);
/* The new-source budget as words: "limit new-sources --rate N --burst M",
 * or "limit new-sources off" when r's rate is 0. */
void budget_format(const struct rule *r, char *buf, size_t len);
/* The match as words ("--proto udp --dport 53"), "" for none. */
void rule_match_words(const struct rule_match *m, char *buf, size_t len);
/* "198.18.0.0/16" or "198.18.0.0/16 --proto udp --dport 53": a rule's
 * name (identity) for listings; "default" for the default. */
void rule_label(const struct rule *r, bool is_default, char *buf, size_t len);
/* --rate/--bytes value: "100", "600/m", "5/h". */
void rule_rate_words(const struct rule *r, char *buf, size_t len);
/* A duration as its words: "250ms", "30s", "5m", "1h". */
void duration_words(__u64 ns, char *buf, size_t len);
/* "tcp", "udp", "icmp", "icmpv6" or the number. */
void proto_name(__u8 proto, char *buf, size_t len);
const char *per_name(__u32 per);
const char *unit_name(__u32 unit);
/* The option that sets a unit: "--rate", "--bytes", "--requests". */
const char *unit_option(__u32 unit);
/* "token-bucket", "fixed-window", "sliding-window"; and back (0, or -1). */
const char *algo_name(__u32 algo);
int algo_parse(const char *s, __u32 *algo);
/* Bits a sliding window's counts need to hold budget. */
__u32 window_count_bits(__u64 budget);

/* Rules in a stable order (qsort): IPv4 first, by address, prefix, then
 * match. */
int rule_cmp(const void *a, const void *b);
/* The whole policy as a file, in that order, as `policy show` prints it
 * and `policy apply` reads it back: into buf (always NUL-terminated), and
 * returns the length the whole text needs, as snprintf does (SIZE_MAX
 * when out of memory). */
size_t policy_format(const struct policy *p, const char *iface, char *buf, size_t len);

/* A policy file, or the text of one read from stream f (name in errors):
 * every line parsed into p, which starts empty. On a bad line prints
 * "NAME:LINE: why" and returns EXIT_USAGE, p then being partial. */
/* Where policy save writes IFACE.policy, and the units read it. */
#ifndef SLUICE_CONF_DIR
#define SLUICE_CONF_DIR "/etc/sluice"
#endif
#define POLICY_LINE_MAX 1022	/* characters, without the newline (doc/policy.rst) */
int policy_parse_stream(FILE *f, const char *name, struct policy *p);
int policy_parse_file(const char *path, struct policy *p);

#define RULE_WORDS_MAX	32	/* words of one rule line */
#define RULE_TEXT_MAX	SLUICE_RULE_TEXT_MAX	/* rule_format's longest output */

#endif /* SLUICE_RULE_H */
