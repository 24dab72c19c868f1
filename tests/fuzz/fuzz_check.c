// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer target: the check server's request handling (user/daemon/check/,
 * through its exported handler check_on_request) with everything under
 * it: the trust test, the address header, status=, X-Request-ID repeats
 * (on), the source table, judge(), the answer and /metrics. libmicrohttpd
 * runs in this thread with the servers' own callbacks and limits
 * (user/daemon/httpd.c); each input is one selector byte, then the raw
 * bytes a client sends on one connection, handed over a socketpair with
 * MHD_add_connection; the client then shuts its side and reads every
 * answer until the server closes.
 *
 * The selector byte picks the peer (the byte mod 8): 127.0.0.1, ::1,
 * 127.9.8.7, ::ffff:127.0.0.1, 127.0.0.1, 127.0.0.1 are trusted (the
 * default --trust, 127.0.0.0/8,::1/128); 198.18.255.1 and 2001:2:ffff::1
 * are not. The server has the request rules of fz_rules (parsed by
 * rule_parse_line and converted by the server's own check_policy_add,
 * indexes 1..) and no interface: its ban writer (ban_writer_open) has a
 * real BPF hash map of the ban table's layout and mmapped ban state and
 * config arrays (bpf_map_create, as root, as CI runs the fuzz targets).
 * State lives on from input to input, on the real clock.
 *
 * Each request the handler gets is watched as it is answered (its
 * headers, the answers counters before and after, the clock) and matched
 * with the answers read back. Properties, besides no crash, leak or
 * sanitizer report:
 * - the answers are well-formed HTTP, one for each request the handler
 *   answered, in order; besides those, only libmicrohttpd's or httpd.c's
 *   refusals (405, a malformed method's 400, a last 400/413/414/431/501/
 *   505 before it closes; libmicrohttpd 0.9.75's doubled 400 header block
 *   to an HTTP/1.1 request without Host is not the check server's);
 * - /check answers 200, 429, 403 or 400, anything else 404, /metrics 200;
 *   an untrusted peer's /check is 403 and changes only the "untrusted"
 *   counter (the table, repeats, counters, ban word compared byte for
 *   byte); a bad status= or an address header missing, repeated or not
 *   one address (inet_pton, blanks around it trimmed) is 400;
 * - each /check moves exactly one answers counter, the one its status
 *   says; the rule it names is the model's (longest prefix, same family);
 *   a 200 from a rule carries RateLimit-Policy exactly as worked out by
 *   hand from the rule's words and RateLimit "NAME";r=R;t=T with R <= q
 *   and 1 <= T <= w; a 429, and a 403 of ?status=403, has Retry-After >= 1
 *   (at most one refill or two windows, or the ban); an unlimited 200 has
 *   no fields;
 * - admissions per bucket (the rule's key of the address, masked here)
 *   stay within burst + elapsed / interval + 1 (token bucket) or budget x
 *   (elapsed / window + 2) (windows), elapsed from the bucket's first
 *   admission seen; and a bucket asked again at or after the Retry-After
 *   of its last 429, with nothing admitted since, admits (never early);
 * - an escalation (the rule's bans counter moves) puts the source's home
 *   key in the ban table with the rule's index and now + --ban, Retry-After
 *   the ban; a repeated X-Request-ID (one header, 1..64 visible characters)
 *   for the same address gets the same answer, uncharged;
 * - /metrics has the server's counters then (refusals add up to table_full).
 * tests/fuzz/fuzz.mk plants Retry-After rounded down (PLANT_check) to show
 * that this fails (in about a second, "a 429 ... after an earlier 429's
 * Retry-After ran out"); a copy serving untrusted peers fails the
 * self-test. SLUICE_FUZZ_SHOW=1 prints each input's answers. */
#include "fuzz.h"
#include "fuzz_http.h"
#include "fuzz_check_answers.h"
#include "fuzz_check_rules.h"
#include <signal.h>
#include <bpf/bpf.h>
#include "check.h"
#include "hash.h"
#include "rule.h"

#define FZ_SOURCES		1024U	/* --max-sources: small, so the table fills */
#define SHADOW_SLOTS		4096U
#define SEEN_SLOTS		512U

/* Each rule's CIDR, read from its name by inet_pton. */
static struct {
	__u8 family;
	__u8 net[16];
	__u32 plen;
} fz_nets[FZ_NRULES];

/* The peers the selector byte picks. */
static const struct {
	const char *addr;
	bool trusted;
} fz_peers[8] = {
	{ "127.0.0.1", true }, { "::1", true }, { "127.9.8.7", true },
	{ "::ffff:127.0.0.1", true }, { "127.0.0.1", true }, { "127.0.0.1", true },
	{ "198.18.255.1", false }, { "2001:2:ffff::1", false },
};

/* What one handler call was asked and did, seen from here. */
enum fz_kind { K_UNTRUSTED, K_BAD, K_JUDGED, K_METRICS, K_NOT_FOUND };
struct fz_call {
	enum fz_kind kind;
	bool mode403;
	struct fz_addr src;
	int rule;			/* the model's rule (fz_rules), -1 none */
	int outcome;			/* the answers counter that moved, -1 none */
	bool escalated;			/* its rule's bans counter moved */
	char id[REQUEST_ID_MAX + 1];	/* X-Request-ID the server must honour, "" none */
	__u64 t0, t1;			/* the clock around the call */
	__u64 answers[OUT_MAX];		/* /metrics: the counters then */
	struct rule_counts counts[FZ_NRULES];
	__u64 ban_failures;
	__u64 refused[REFUSE_MAX];
	__u32 used;
};

/* A bucket as the model counts it. */
struct shadow {
	bool used;
	int rule;
	__u8 key[16];
	__u64 first_ns;		/* t0 of the first admission counted */
	__u64 admitted;
	__u64 due_ns;		/* 0, or the earliest Retry-After end of a 429 since
				 * the last admission: a check from then on admits */
};

/* An answer with an X-Request-ID, for its repeats. */
struct seen {
	char id[REQUEST_ID_MAX + 1];
	struct fz_addr src;
	__u64 t1;
	int status;
	char policy[FIELD_MAX], limit[FIELD_MAX], retry[FIELD_MAX];
};

static struct check_server *fz;
static struct MHD_Daemon *fz_d;
static char *resp;
static struct fz_call calls[FZ_CALLS_MAX];
static unsigned int ncalls;
static bool peer_trusted;
static struct shadow shadow[SHADOW_SLOTS];
static unsigned int shadow_used;
static struct seen seen[SEEN_SLOTS];
static __u64 last_sweep;
/* An untrusted input's "before". */
static struct table snap_t;	/* its links, keys and values */
static struct repeat_slot *snap_rep;
static __u64 snap_answers[OUT_MAX], snap_bans_word, snap_ban_failures;
static struct rule_counts snap_counts[SLUICE_MAX_POLICIES];
static __u32 snap_used;

/* --- the model --- */

/* The longest prefix of the same family covering a, or -1. */
static int model_rule(const struct fz_addr *a)
{
	int best = -1;

	for (unsigned int i = 0; i < FZ_NRULES; i++) {
		if (fz_nets[i].family == a->family && bits_equal(fz_nets[i].net, a->a, fz_nets[i].plen) &&
		    (best < 0 || fz_nets[i].plen > fz_nets[best].plen))
			best = (int)i;
	}
	return best;
}

static struct shadow *shadow_of(int rule, const struct fz_addr *a)
{
	__u8 key[16] = { 0 };
	__u64 h = (__u64)rule + 1;

	for (__u32 i = 0; i < fz_rules[rule].key_bits; i++)
		key[i / 8] |= a->a[i / 8] & (0x80 >> (i % 8));
	for (int i = 0; i < 16; i++)
		h = (h ^ key[i]) * 0x100000001b3ULL;
	/* Forgetting is safe: each bound holds over any interval. */
	if (shadow_used >= SHADOW_SLOTS * 3 / 4) {
		memset(shadow, 0, sizeof(shadow));
		shadow_used = 0;
	}
	for (__u32 i = (__u32)(h % SHADOW_SLOTS);; i = (i + 1) % SHADOW_SLOTS) {
		struct shadow *sh = &shadow[i];

		if (!sh->used) {
			sh->used = true;
			sh->rule = rule;
			memcpy(sh->key, key, sizeof(key));
			shadow_used++;
			return sh;
		}
		if (sh->rule == rule && !memcmp(sh->key, key, sizeof(key)))
			return sh;
	}
}

static struct seen *seen_of(const char *id, const struct fz_addr *a)
{
	__u64 h = hash_bytes(hash_bytes(7, a, sizeof(*a)), id, strlen(id));

	return &seen[h % SEEN_SLOTS];
}

/* --- watching the handler --- */

/* A header's one value is read with the server's own check_one_header (a
 * name missing or repeated is NULL); the model judges the value. */

/* What a request asks, by the model, into c. */
static void fz_classify(struct fz_call *c, struct MHD_Connection *conn, const char *url)
{
	const char *mode, *addr, *id;

	memset(c, 0, sizeof(*c));
	c->rule = -1;
	c->outcome = -1;
	if (strcmp(url, "/check") != 0) {
		c->kind = strcmp(url, "/metrics") ? K_NOT_FOUND : K_METRICS;
		return;
	}
	mode = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "status");
	addr = check_one_header(conn, HEADER_DEFAULT);
	c->mode403 = mode && !strcmp(mode, "403");
	if (!peer_trusted)
		c->kind = K_UNTRUSTED;
	else if ((mode && strcmp(mode, "403") && strcmp(mode, "429")) || !addr ||
		 !model_addr(addr, &c->src))
		c->kind = K_BAD;
	else
		c->kind = K_JUDGED;
	if (c->kind == K_JUDGED) {
		c->rule = model_rule(&c->src);
		id = check_one_header(conn, "X-Request-ID");
		if (id && *id && strlen(id) <= REQUEST_ID_MAX) {
			snprintf(c->id, sizeof(c->id), "%s", id);
			for (const char *p = id; *p; p++)
				if (*p <= ' ' || *p >= 127)
					c->id[0] = '\0';
		}
	}
}

/* Exactly one answers counter moves for a /check, none otherwise: the
 * one that moved into c->outcome. */
static void check_answers_moved(struct fz_call *c, const char *url, const __u64 *before)
{
	for (int o = 0; o < OUT_MAX; o++) {
		__u64 d = fz->answers[o] - before[o];

		FUZZ_CHECK(d <= 1, "%s moved answers{%s} by %llu", url, outcome_names[o],
			   (unsigned long long)d);
		if (d) {
			FUZZ_CHECK(c->outcome < 0, "%s moved answers{%s} and {%s}", url,
				   outcome_names[c->outcome], outcome_names[o]);
			c->outcome = o;
		}
	}
	if (c->kind == K_METRICS || c->kind == K_NOT_FOUND) {
		FUZZ_CHECK(c->outcome < 0, "%s moved answers{%s}", url, outcome_names[c->outcome]);
		return;
	}
	FUZZ_CHECK(c->outcome >= 0, "a /check moved no answers counter");
	if (c->kind == K_UNTRUSTED)
		FUZZ_CHECK(c->outcome == OUT_UNTRUSTED, "an untrusted peer's check counted as %s",
			   outcome_names[c->outcome]);
	else if (c->kind == K_BAD)
		FUZZ_CHECK(c->outcome == OUT_BAD_REQUEST, "a bad check counted as %s",
			   outcome_names[c->outcome]);
	else
		FUZZ_CHECK(c->outcome != OUT_UNTRUSTED && c->outcome != OUT_BAD_REQUEST,
			   "a good check from a trusted peer counted as %s",
			   outcome_names[c->outcome]);
}

/* Rule counters: only the judged rule's, by one; a repeat none. */
static void check_rules_moved(struct fz_call *c, const struct rule_counts *cbefore)
{
	for (unsigned int i = 0; i < FZ_NRULES; i++) {
		__u64 dp = c->counts[i].pass - cbefore[i].pass;
		__u64 dl = c->counts[i].limited - cbefore[i].limited;
		__u64 db = c->counts[i].bans - cbefore[i].bans;
		bool judged = c->kind == K_JUDGED && (int)i == c->rule &&
			      (c->outcome == OUT_OK || c->outcome == OUT_LIMITED ||
			       c->outcome == OUT_MONITORED);

		FUZZ_CHECK(judged ? dp + dl == 1 : dp + dl + db == 0,
			   "rule %s: pass +%llu limited +%llu bans +%llu for a %s answer of rule %d",
			   fz_rules[i].name, (unsigned long long)dp, (unsigned long long)dl,
			   (unsigned long long)db, outcome_names[c->outcome], c->rule);
		FUZZ_CHECK(db <= dl, "rule %s banned without limiting", fz_rules[i].name);
		if (judged) {
			FUZZ_CHECK(dp == (c->outcome == OUT_OK), "rule %s: %s answer, pass +%llu",
				   fz_rules[i].name, outcome_names[c->outcome],
				   (unsigned long long)dp);
			c->escalated = db == 1;
		}
	}
}

/* The escalation's ban: the home key, the rule's index, now + --ban. */
static void check_escalation_ban(const struct fz_call *c)
{
	const struct fz_rule *r = &fz_rules[c->rule];
	struct sluice_src_key k = { .family = c->src.family,
				    .key_len = SLUICE_KEY_LEN_SOURCE,
				    .policy = SLUICE_KEY_HOME };
	struct sluice_ban b;

	memcpy(k.a, c->src.a, sizeof(k.a));
	FUZZ_CHECK(r->ban_ns, "rule %s has no --ban, yet banned", r->name);
	FUZZ_CHECK(!bpf_map_lookup_elem(fz->bans.fd, &k, &b),
		   "escalated by %s, yet not in the ban table", r->name);
	FUZZ_CHECK(b.policy == (__u32)c->rule + 1, "ban of rule %u, want %d", b.policy,
		   c->rule + 1);
	FUZZ_CHECK(b.until_ns >= c->t0 + r->ban_ns && b.until_ns <= c->t1 + r->ban_ns,
		   "ban until %llu, want %llu + [0, %llu]", (unsigned long long)b.until_ns,
		   (unsigned long long)(c->t0 + r->ban_ns),
		   (unsigned long long)(c->t1 - c->t0));
	FUZZ_CHECK(__atomic_load_n(&fz->bans.state->bans, __ATOMIC_ACQUIRE) &
			   SLUICE_BANS_LIVE, "a ban, and the ban state's word is not live");
}

/* The server's handler, watched: what the request asks, by the model, and
 * what moved in the server while it answered. */
static enum MHD_Result fz_on_request(void *cls, struct MHD_Connection *conn, const char *url)
{
	struct fz_call *c;
	__u64 before[OUT_MAX];
	struct rule_counts cbefore[FZ_NRULES];
	__u32 used_before;
	enum MHD_Result ret;

	FUZZ_CHECK(ncalls < FZ_CALLS_MAX, "more than %u requests on one connection", FZ_CALLS_MAX);
	c = &calls[ncalls++];
	fz_classify(c, conn, url);
	memcpy(before, fz->answers, sizeof(before));
	memcpy(cbefore, &fz->counts[1], sizeof(cbefore));
	used_before = fz->t.used;
	c->t0 = mono_now_ns();
	ret = check_on_request(cls, conn, url);
	c->t1 = mono_now_ns();
	FUZZ_CHECK(ret == MHD_YES, "the handler could not answer %s", url);
	memcpy(c->answers, fz->answers, sizeof(c->answers));
	memcpy(c->counts, &fz->counts[1], sizeof(c->counts));
	c->used = fz->t.used;
	c->ban_failures = fz->ban_failures;
	memcpy(c->refused, fz->refused, sizeof(c->refused));

	check_answers_moved(c, url, before);
	if (c->kind == K_METRICS || c->kind == K_NOT_FOUND)
		return ret;
	check_rules_moved(c, cbefore);
	if (c->kind != K_JUDGED || c->outcome == OUT_REPEAT || c->outcome == OUT_BANNED ||
	    c->outcome == OUT_UNLIMITED)
		FUZZ_CHECK(fz->t.used == used_before, "a %s check changed the table (%u -> %u)",
			   outcome_names[c->outcome], used_before, fz->t.used);
	FUZZ_CHECK(fz->t.used <= fz->t.cap, "%u entries of %u", fz->t.used, fz->t.cap);
	if (c->escalated)
		check_escalation_ban(c);
	return ret;
}

/* --- reading the answers back --- */

/* Sends data as one client from peer, shuts the sending side, and reads
 * everything the server answers until it closes. The answer's length. */
static size_t exchange(const uint8_t *data, size_t size, const char *peer)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	socklen_t sslen;

	if (strchr(peer, ':')) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(40000);
		if (inet_pton(AF_INET6, peer, &s6->sin6_addr) != 1)
			abort();
		sslen = sizeof(*s6);
	} else {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(40000);
		if (inet_pton(AF_INET, peer, &s4->sin_addr) != 1)
			abort();
		sslen = sizeof(*s4);
	}
	return fuzz_http_exchange(fz_d, (struct sockaddr *)&ss, sslen, data, size, resp);
}

/* /metrics: Prometheus text, every line a comment or NAME{LABELS} VALUE,
 * and the series say what the server's counters said then. */
static void check_metrics(const struct fz_call *c, const struct fz_answer *a)
{
	const char *p = a->body, *end;
	char series[256];

	if (!a->body)
		return;	/* HEAD (and no NULL + 0, which UBSan rightly reports) */
	end = a->body + a->body_len;
	FUZZ_CHECK(a->body_len && end[-1] == '\n', "/metrics does not end with a newline");
	for (const char *eol; p < end; p = eol + 1) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (!strncmp(p, "# HELP ", 7) || !strncmp(p, "# TYPE ", 7))
			continue;
		FUZZ_CHECK(!strncmp(p, "sluice_", 7), "/metrics line '%.*s'", (int)(eol - p), p);
		for (const char *q = p; q < eol; q++)
			FUZZ_CHECK(*q >= ' ' && *q < 127, "/metrics: a control character");
		FUZZ_CHECK(memchr(p, '{', (size_t)(eol - p)) && memmem(p, (size_t)(eol - p), "} ", 2),
			   "/metrics line '%.*s'", (int)(eol - p), p);
	}
	for (int o = 0; o < OUT_MAX; o++) {
		snprintf(series, sizeof(series),
			 "sluice_check_answers_total{interface=\"fz0\",outcome=\"%s\"}",
			 outcome_names[o]);
		FUZZ_CHECK(page_value(a, series) == c->answers[o], "%s is %llu, the server's %llu",
			   series, (unsigned long long)page_value(a, series),
			   (unsigned long long)c->answers[o]);
	}
	for (unsigned int i = 0; i < FZ_NRULES; i++) {
		snprintf(series, sizeof(series), "sluice_check_requests_total{interface=\"fz0\","
			 "rule=\"%s\",verdict=\"pass\"}", fz_rules[i].name);
		FUZZ_CHECK(page_value(a, series) == c->counts[i].pass, "%s", series);
		snprintf(series, sizeof(series), "sluice_check_requests_total{interface=\"fz0\","
			 "rule=\"%s\",verdict=\"limited\"}", fz_rules[i].name);
		FUZZ_CHECK(page_value(a, series) == c->counts[i].limited, "%s", series);
		snprintf(series, sizeof(series), "sluice_check_escalation_bans_total{interface="
			 "\"fz0\",rule=\"%s\"}", fz_rules[i].name);
		FUZZ_CHECK(page_value(a, series) == c->counts[i].bans, "%s", series);
	}
	FUZZ_CHECK(page_value(a, "sluice_check_escalation_ban_failures_total{interface=\"fz0\"}") ==
		   c->ban_failures, "escalation_ban_failures_total");
	FUZZ_CHECK(page_value(a, "sluice_check_tracked_sources{interface=\"fz0\"}") == c->used,
		   "tracked_sources");
	FUZZ_CHECK(page_value(a, "sluice_check_tracked_sources_capacity{interface=\"fz0\"}") ==
		   FZ_SOURCES, "tracked_sources_capacity");
	for (int r = 0; r < REFUSE_MAX; r++) {
		snprintf(series, sizeof(series), "sluice_check_table_refusals_total{interface="
			 "\"fz0\",reason=\"%s\"}", refusal_names[r]);
		FUZZ_CHECK(page_value(a, series) == c->refused[r], "%s", series);
	}
	FUZZ_CHECK(c->refused[REFUSE_FULL] + c->refused[REFUSE_PREFIX] == c->answers[OUT_TABLE_FULL],
		   "the refusals by reason do not add up to the table_full answers");
}

/* A judged answer's RateLimit-Policy, RateLimit and Retry-After, read. */
struct fz_fields {
	char policy[FIELD_MAX], limit[FIELD_MAX], retry[FIELD_MAX], name[FIELD_MAX];
	__u64 q, w, rem, t, ra;
	bool fields;			/* RateLimit-Policy or RateLimit */
};

static void read_fields(const struct fz_answer *a, int o, struct fz_fields *f)
{
	char name2[FIELD_MAX];

	memset(f, 0, sizeof(*f));
	answer_header(a, "RateLimit-Policy", f->policy);
	answer_header(a, "RateLimit", f->limit);
	answer_header(a, "Retry-After", f->retry);
	f->fields = f->policy[0] || f->limit[0];
	if (f->fields) {
		FUZZ_CHECK(parse_field(f->policy, "q=", "w=", f->name, &f->q, &f->w),
			   "RateLimit-Policy '%s'", f->policy);
		FUZZ_CHECK(parse_field(f->limit, "r=", "t=", name2, &f->rem, &f->t),
			   "RateLimit '%s'", f->limit);
		FUZZ_CHECK(!strcmp(f->name, name2), "RateLimit-Policy of %s, RateLimit of %s",
			   f->name, name2);
	}
	if (f->retry[0]) {
		const char *p = f->retry;

		FUZZ_CHECK(take_u64(&p, &f->ra) && !*p, "Retry-After '%s'", f->retry);
		FUZZ_CHECK(f->ra >= 1, "Retry-After %llu", (unsigned long long)f->ra);
	}
	if (a->status == 429 || a->status == 403)
		FUZZ_CHECK(f->retry[0], "a %d without Retry-After (%s)", a->status, outcome_names[o]);
}

/* A repeat gets the first answer again (true: nothing more to check); an
 * answer to a usable X-Request-ID is remembered for its repeats. */
static bool check_repeat(const struct fz_call *c, const struct fz_answer *a,
			 const struct fz_fields *f)
{
	struct seen *sn;

	if (c->outcome == OUT_REPEAT) {
		FUZZ_CHECK(c->id[0], "a repeat without a usable X-Request-ID");
		sn = seen_of(c->id, &c->src);
		if (!strcmp(sn->id, c->id) && !memcmp(&sn->src, &c->src, sizeof(c->src)) &&
		    c->t0 - sn->t1 < REPEAT_NS) {
			FUZZ_CHECK(a->status == sn->status && !strcmp(f->policy, sn->policy) &&
				   !strcmp(f->limit, sn->limit) && !strcmp(f->retry, sn->retry),
				   "repeat of '%s': %d '%s' '%s' '%s', first %d '%s' '%s' '%s'",
				   c->id, a->status, f->policy, f->limit, f->retry, sn->status,
				   sn->policy, sn->limit, sn->retry);
		}
		return true;
	}
	if (c->id[0]) {
		sn = seen_of(c->id, &c->src);
		snprintf(sn->id, sizeof(sn->id), "%s", c->id);
		sn->src = c->src;
		sn->t1 = c->t1;
		sn->status = a->status;
		snprintf(sn->policy, sizeof(sn->policy), "%s", f->policy);
		snprintf(sn->limit, sizeof(sn->limit), "%s", f->limit);
		snprintf(sn->retry, sizeof(sn->retry), "%s", f->retry);
	}
	return false;
}

/* A 429 (403) of rule r: its Retry-After, and never early. */
static void check_limited(const struct fz_call *c, const struct fz_answer *a,
			  const struct fz_fields *f, const struct fz_rule *r, struct shadow *sh)
{
	int over = c->mode403 ? 403 : 429;
	__u64 ra = f->ra;
	__u64 most = c->escalated ? (r->ban_ns + SLUICE_NS_PER_SEC - 1) / SLUICE_NS_PER_SEC :
		     r->window ? (2 * r->per_ns + SLUICE_NS_PER_SEC - 1) / SLUICE_NS_PER_SEC :
				 (r->per_ns + SLUICE_NS_PER_SEC - 1) / SLUICE_NS_PER_SEC;

	FUZZ_CHECK(!r->monitor, "a --monitor rule limited");
	FUZZ_CHECK(a->status == over, "limited: %d, want %d", a->status, over);
	FUZZ_CHECK(c->escalated ? ra == most : ra <= most,
		   "Retry-After %llu of %s (%s), want %s%llu", (unsigned long long)ra,
		   r->name, c->escalated ? "escalated" : "limited",
		   c->escalated ? "" : "at most ", (unsigned long long)most);
	/* Never early: from the end of a 429's call plus its
	 * Retry-After on, with nothing admitted meanwhile, the bucket
	 * admits (its wait is not longer, and only an admission
	 * lengthens it). */
	FUZZ_CHECK(!sh->due_ns || c->t0 < sh->due_ns,
		   "%s: a 429 %.3f s after an earlier 429's Retry-After ran out, nothing "
		   "admitted since", r->name, (double)(c->t0 - sh->due_ns) / 1e9);
	if (!c->escalated && (!sh->due_ns || c->t1 + ra * SLUICE_NS_PER_SEC < sh->due_ns))
		sh->due_ns = c->t1 + ra * SLUICE_NS_PER_SEC;
}

/* Admitted: within the bound since the bucket's first admission. */
static void check_admitted(const struct fz_call *c, const struct fz_rule *r, struct shadow *sh)
{
	__u64 el, bound;

	if (!sh->admitted)
		sh->first_ns = c->t0;
	sh->admitted++;
	sh->due_ns = 0;
	el = c->t1 - sh->first_ns;
	bound = r->window ? r->n * (el / r->per_ns + 2) : r->n + el / r->per_ns + 1;
	FUZZ_CHECK(sh->admitted <= bound, "%s: %llu admitted in %.3f s, at most %llu",
		   r->name, (unsigned long long)sh->admitted, (double)el / 1e9,
		   (unsigned long long)bound);
}

/* A judged /check's answer a, by the model. */
static void check_judged(const struct fz_call *c, const struct fz_answer *a)
{
	const struct fz_rule *r = c->rule >= 0 ? &fz_rules[c->rule] : NULL;
	int o = c->outcome, over = c->mode403 ? 403 : 429;
	struct fz_fields f;
	struct shadow *sh;

	read_fields(a, o, &f);
	if (check_repeat(c, a, &f))
		return;
	switch (o) {
	case OUT_UNLIMITED:
		FUZZ_CHECK(!r, "unlimited, yet %s covers the client", r->name);
		FUZZ_CHECK(a->status == 200 && !f.fields && !f.retry[0],
			   "unlimited: %d '%s' '%s'", a->status, f.policy, f.retry);
		return;
	case OUT_BANNED:
		FUZZ_CHECK(r && r->ban_ns, "banned, yet no --ban rule covers the client");
		FUZZ_CHECK(a->status == over && !f.fields, "banned: %d '%s'", a->status, f.policy);
		return;
	case OUT_TABLE_FULL:
		FUZZ_CHECK(r && a->status == over && !f.fields && f.ra == 1,
			   "table full: %d '%s' '%s'", a->status, f.policy, f.retry);
		return;
	case OUT_OK:
	case OUT_MONITORED:
	case OUT_LIMITED:
		break;
	default:
		FUZZ_CHECK(false, "a judged check counted as %s", outcome_names[o]);
	}
	FUZZ_CHECK(r, "%s, yet no rule covers the client", outcome_names[o]);
	FUZZ_CHECK(f.fields, "%s by %s without the RateLimit fields", outcome_names[o], r->name);
	FUZZ_CHECK(!strcmp(f.name, r->name), "judged by %s, want %s", f.name, r->name);
	FUZZ_CHECK(!strcmp(f.policy, r->policy), "RateLimit-Policy '%s', want '%s'", f.policy,
		   r->policy);
	FUZZ_CHECK(f.rem <= f.q && f.t >= 1 && f.t <= f.w, "RateLimit '%s' under '%s'", f.limit,
		   f.policy);
	sh = shadow_of(c->rule, &c->src);
	if (o == OUT_LIMITED) {
		check_limited(c, a, &f, r, sh);
		return;
	}
	FUZZ_CHECK(a->status == 200 && !f.retry[0], "%s: %d, Retry-After '%s'", outcome_names[o],
		   a->status, f.retry);
	if (o == OUT_MONITORED) {
		FUZZ_CHECK(r->monitor, "monitored by %s, not a --monitor rule", r->name);
		return;
	}
	check_admitted(c, r, sh);
}

/* The answers against the handler calls, in order. */
static void check_exchange(const char *r, size_t len)
{
	static struct fz_answer ans[FZ_ANSWERS_MAX];
	static const int closing[] = { 400, 413, 414, 431, 501, 505 };
	unsigned int n = parse_answers(r, len, ans), ci = 0;
	char tmp[FIELD_MAX];

	for (unsigned int i = 0; i < n; i++) {
		const struct fz_answer *a = &ans[i];
		const struct fz_call *c;
		bool known = false;

		/* httpd.c's refusals before the handler, and libmicrohttpd's
		 * interim 100 Continue: not a call's answer. */
		if (a->status == 100)
			continue;
		if (a->status == 405 ||
		    (a->status == 400 && has_body(a, "400 bad request: malformed method\n"))) {
			if (a->status == 405)
				FUZZ_CHECK(!strcmp(answer_header(a, "Allow", tmp), "GET, HEAD"),
					   "a 405 with Allow '%s'", tmp);
			continue;
		}
		if (ci == ncalls) {
			/* libmicrohttpd's own answer to a malformed request, then it
			 * closes. libmicrohttpd 0.9.75 sends the header block of some
			 * of these twice (a missing Host of HTTP/1.1, for one), the
			 * first without its body: not the check server's. */
			if (i + 2 == n && !a->body && ans[i + 1].status == a->status &&
			    a->head_end - a->head == ans[i + 1].head_end - ans[i + 1].head)
				continue;
			for (size_t k = 0; k < sizeof(closing) / sizeof(closing[0]); k++)
				known |= a->status == closing[k];
			FUZZ_CHECK(known && i + 1 == n, "answer %u (%d) after the %u requests the "
				   "handler answered%s", i, a->status, ncalls,
				   i + 1 == n ? "" : ", and not the last");
			continue;
		}
		c = &calls[ci++];
		switch (c->kind) {
		case K_NOT_FOUND:
			FUZZ_CHECK(a->status == 404, "a wrong path answered %d", a->status);
			break;
		case K_METRICS:
			FUZZ_CHECK(a->status == 200, "/metrics answered %d", a->status);
			check_metrics(c, a);
			break;
		case K_UNTRUSTED:
			FUZZ_CHECK(a->status == 403 &&
					   (!a->body || body_has(a, "not in the check server's --trust")),
				   "an untrusted peer's check answered %d", a->status);
			FUZZ_CHECK(!answer_header(a, "RateLimit", tmp)[0] &&
					   !answer_header(a, "Retry-After", tmp)[0],
				   "an untrusted peer's 403 with RateLimit or Retry-After");
			break;
		case K_BAD:
			FUZZ_CHECK(a->status == 400, "a bad check answered %d", a->status);
			FUZZ_CHECK(!answer_header(a, "RateLimit", tmp)[0] &&
					   !answer_header(a, "Retry-After", tmp)[0],
				   "a 400 with RateLimit or Retry-After");
			break;
		case K_JUDGED:
			check_judged(c, a);
			break;
		}
	}
	FUZZ_CHECK(ci == ncalls, "%u requests answered by the handler, %u answers sent", ncalls,
		   ci);
}

/* --- the untrusted peer's "nothing changed" --- */

static void snapshot(void)
{
	memcpy(snap_t.links, fz->t.links, FZ_SOURCES * sizeof(*snap_t.links));
	memcpy(snap_t.keys, fz->t.keys, FZ_SOURCES * sizeof(struct check_key));
	memcpy(snap_t.vals, fz->t.vals, FZ_SOURCES * sizeof(struct check_entry));
	memcpy(snap_rep, fz->repeats, REPEAT_SLOTS * sizeof(*fz->repeats));
	memcpy(snap_answers, fz->answers, sizeof(snap_answers));
	memcpy(snap_counts, fz->counts, sizeof(snap_counts));
	snap_used = fz->t.used;
	snap_ban_failures = fz->ban_failures;
	snap_bans_word = __atomic_load_n(&fz->bans.state->bans, __ATOMIC_ACQUIRE);
}

static void check_unchanged(void)
{
	FUZZ_CHECK(fz->t.used == snap_used, "an untrusted peer changed the table: %u -> %u entries",
		   snap_used, fz->t.used);
	FUZZ_CHECK(!memcmp(snap_t.links, fz->t.links, FZ_SOURCES * sizeof(*snap_t.links)) &&
		   !memcmp(snap_t.keys, fz->t.keys, FZ_SOURCES * sizeof(struct check_key)) &&
		   !memcmp(snap_t.vals, fz->t.vals, FZ_SOURCES * sizeof(struct check_entry)),
		   "an untrusted peer changed the source table");
	FUZZ_CHECK(!memcmp(snap_rep, fz->repeats, REPEAT_SLOTS * sizeof(*fz->repeats)),
		   "an untrusted peer changed the repeats");
	FUZZ_CHECK(!memcmp(snap_counts, fz->counts, sizeof(snap_counts)),
		   "an untrusted peer changed the rule counters");
	for (int o = 0; o < OUT_MAX; o++)
		FUZZ_CHECK(o == OUT_UNTRUSTED || snap_answers[o] == fz->answers[o],
			   "an untrusted peer moved answers{%s}", outcome_names[o]);
	FUZZ_CHECK(snap_ban_failures == fz->ban_failures, "an untrusted peer failed a ban");
	FUZZ_CHECK(snap_bans_word == __atomic_load_n(&fz->bans.state->bans, __ATOMIC_ACQUIRE),
		   "an untrusted peer wrote the ban table");
}

/* One input: the selector byte, then the stream. */
static void run_one(const uint8_t *data, size_t size)
{
	const char *peer = fz_peers[size ? data[0] % 8 : 0].addr;
	size_t len;

	peer_trusted = fz_peers[size ? data[0] % 8 : 0].trusted;
	if (size) {
		data++;
		size--;
	}
	if (!peer_trusted)
		snapshot();
	ncalls = 0;
	len = exchange(data, size, peer);
	if (getenv("SLUICE_FUZZ_SHOW"))	/* what the server answered, to see a failure */
		dprintf(2, "fuzz_check: %u calls, answers:\n%s\n", ncalls, resp);
	check_exchange(resp, len);
	if (!peer_trusted)
		check_unchanged();
	/* The serve loop's sweep, about once a second. */
	if (mono_now_ns() - last_sweep >= SWEEP_NS) {
		last_sweep = mono_now_ns();
		FUZZ_CHECK(ban_sweep(&fz->bans) >= 0, "ban_sweep failed");
	}
}

/* --- the server --- */

/* The ban table, its state and the config map of an attached interface,
 * made here: bpf_map_create with bpf/sluice.bpf.c's layouts. */
static void make_maps(struct sluice_maps *m)
{
	LIBBPF_OPTS(bpf_map_create_opts, hash, .map_flags = BPF_F_NO_PREALLOC);
	LIBBPF_OPTS(bpf_map_create_opts, arr, .map_flags = BPF_F_MMAPABLE);

	memset(m, 0xff, sizeof(*m));	/* every fd -1 */
	snprintf(m->iface, sizeof(m->iface), "fz0");
	m->dir[0] = '\0';
	m->ncpus = 1;
	m->bans = bpf_map_create(BPF_MAP_TYPE_HASH, "fz_bans", sizeof(struct sluice_src_key),
				 sizeof(struct sluice_ban), SLUICE_MAX_ESCALATION_BANS, &hash);
	m->config = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fz_config", sizeof(__u32),
				   sizeof(struct sluice_config), 1, &arr);
	m->ban_state = bpf_map_create(BPF_MAP_TYPE_ARRAY, "fz_ban_state", sizeof(__u32),
				      sizeof(struct sluice_ban_state), 1, &arr);
	if (m->bans < 0 || m->config < 0 || m->ban_state < 0) {
		dprintf(2, "fuzz_check: cannot create BPF maps (%s): run as root with BPF\n",
			strerror(errno));
		exit(1);
	}
}

static void make_policy(struct check_policy *p)
{
	memset(p, 0, sizeof(*p));
	for (unsigned int i = 0; i < FZ_NRULES; i++) {
		const struct fz_rule *fr = &fz_rules[i];
		char line[RULE_TEXT_MAX], why[256], *slash;
		char net[64];
		enum rule_verb verb;
		struct fz_addr a;
		struct rule r;

		snprintf(line, sizeof(line), "%s", fr->line);
		FUZZ_CHECK(rule_parse_line(line, &r, &verb, why, sizeof(why)) == 1 &&
			   verb == RULE_SET && r.unit == SLUICE_UNIT_REQUESTS,
			   "rule '%s': %s", fr->line, why);
		r.index = i + 1;	/* as a commit numbers them */
		check_policy_add(p, &r);
		snprintf(net, sizeof(net), "%s", fr->name);
		slash = strchr(net, '/');
		*slash = '\0';
		FUZZ_CHECK(model_addr(net, &a), "rule name %s", fr->name);
		fz_nets[i].family = a.family;
		memcpy(fz_nets[i].net, a.a, sizeof(fz_nets[i].net));
		fz_nets[i].plen = (__u32)atoi(slash + 1) + (a.family == SLUICE_FAMILY_V4 ? 96 : 0);
	}
	FUZZ_CHECK(p->n == FZ_NRULES, "%u request rules of %zu", p->n, FZ_NRULES);
}

/* What the harness must see before it can fuzz anything: the server's
 * own answers on each path. */
static void self_test(void)
{
	static const struct {
		const char *req, *want;
	} cases[] = {
		{ "0GET /check HTTP/1.1\r\nHost: x\r\nX-Real-IP: 198.18.9.9\r\n\r\n",
		  "RateLimit-Policy: \"198.18.0.0/15\";q=5;w=1\r\n" },
		{ "0GET /check HTTP/1.1\r\nHost: x\r\nX-Real-IP: 198.18.0.9\r\n\r\n",
		  "RateLimit: \"198.18.0.0/24\";r=1;t=1\r\n" },
		{ "1HEAD /check?status=403 HTTP/1.1\r\nHost: x\r\nX-Real-IP: 2001:2:0:1::7\r\n\r\n",
		  "RateLimit-Policy: \"2001:2:0:1::/64\";q=2;w=4\r\n" },
		{ "0GET /check HTTP/1.1\r\nHost: x\r\nX-Real-IP: 203.0.113.5\r\n\r\n",
		  "200 ok: no request rule covers this client\n" },
		{ "6GET /check HTTP/1.1\r\nHost: x\r\nX-Real-IP: 198.18.9.9\r\n\r\n",
		  "HTTP/1.1 403 Forbidden" },
		{ "0GET /check HTTP/1.1\r\nHost: x\r\n\r\n", "X-Real-IP must hold exactly one" },
		{ "0GET /check?status=500 HTTP/1.1\r\nHost: x\r\nX-Real-IP: 198.18.9.9\r\n\r\n",
		  "status= takes 403 or 429" },
		{ "0GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404" },
		{ "0POST /check HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 405" },
		{ "0GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
		  "sluice_check_answers_total{interface=\"fz0\",outcome=\"untrusted\"} 1\n" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		run_one((const uint8_t *)cases[i].req, strlen(cases[i].req));
		FUZZ_CHECK(strstr(resp, cases[i].want), "self-test: '%s' got '%.300s'",
			   cases[i].req + 1, resp);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	signal(SIGPIPE, SIG_IGN);
	opts.bpffs = "/nonexistent/sluice-fuzz-check";	/* no pins are used */
	resp = malloc(FUZZ_RESPONSE_MAX + 1);
	fz = calloc(1, sizeof(*fz));
	if (!resp || !fz)
		abort();
	fz->header = HEADER_DEFAULT;
	fz->repeat_ids = true;	/* --trust-request-id */
	if (check_parse_trust(TRUST_DEFAULT, fz))
		abort();
	make_maps(&fz->m);
	fz->pol = malloc(sizeof(*fz->pol));
	if (!fz->pol)
		abort();
	make_policy(fz->pol);
	if (check_table_init(fz, FZ_SOURCES) || ban_writer_open(&fz->m, &fz->bans))
		abort();
	snap_rep = malloc(REPEAT_SLOTS * sizeof(*snap_rep));
	if (table_init(&snap_t, FZ_SOURCES, sizeof(struct check_key), sizeof(struct check_entry),
		       0) || !snap_rep)
		abort();
	pthread_mutex_init(&fz->lock, NULL);
	fz->http.name = "check-server";
	fz->http.not_allowed = "405 method not allowed: checks and metrics are read with GET\n";
	fz->http.handler = fz_on_request;
	fz->http.gateway = check_gateway_peer;
	fz->http.cls = fz;
	if (httpd_init(&fz->http))
		abort();
	fz->http.log_requests = getenv("SLUICE_DEBUG") != NULL;
	/* No listening socket, no thread pool: MHD_run() in this thread. */
	fz_d = httpd_daemon(&fz->http, -1, 0);
	if (!fz_d)
		abort();
	last_sweep = mono_now_ns();
	self_test();
	return 0;
}

/* Whether buf holds only whole log lines of escalated bans, "sluice:
 * IFACE: ban added: ...", and of the full source table, "sluice: warning:
 * check-server: IFACE: the source table is full ..." (stderr is no journal
 * here: no priorities). */
static bool only_ban_lines(const char *buf, size_t len)
{
	static const char full[] = "sluice: warning: check-server: ";
	const char *p = buf, *end = buf + len, *nl;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			return false;
		if (!strncmp(p, full, sizeof(full) - 1)) {
			if (!memmem(p, (size_t)(nl - p), ": the source table is full (", 28))
				return false;
		} else if (strncmp(p, "sluice: ", 8) != 0 ||
			   !memmem(p, (size_t)(nl - p), ": ban added: ", 13)) {
			return false;
		}
		p = nl + 1;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_capture cap;

	capture_begin(&cap);
	run_one(data, size);
	capture_end(&cap);
	/* Nothing printed but the log lines of escalated bans (one each) and of
	 * the full table. */
	FUZZ_CHECK(cap.out_len == 0 && (cap.err_len == 0 || fz->http.log_requests ||
					only_ban_lines(cap.err_buf, cap.err_len)),
		   "the check server printed '%s%s'", cap.out_buf, cap.err_buf);
	capture_free(&cap);
	return 0;
}
