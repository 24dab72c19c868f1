// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer target: the single-word parsers, user/lib/parse.c (address, CIDR,
 * source, number, interface name) and rule.c's rate, burst, duration and
 * window. The first byte picks the parser, the rest (to a NUL) is the word.
 * Whatever parses must format to text that parses to the same value; numbers
 * are checked against a reference written here; refusals say why. */
#include "fuzz.h"
#include "rule.h"
#include "sluice/window.h"

enum { P_CIDR, P_ADDR, P_SOURCE, P_U64, P_RATE, P_BAN, P_WINDOW_DUR, P_BURST, P_WINDOW,
       P_IFNAME, P_MAX };

static void check_cidr(const char *s)
{
	char why[256] = "", text[SLUICE_CIDR_STR_MAX], again[SLUICE_CIDR_STR_MAX];
	struct cidr c, c2;
	const char *e = parse_cidr(s, &c, why, sizeof(why));

	if (e) {
		FUZZ_CHECK(e == why && why[0], "refused '%s' without a reason", s);
		return;
	}
	FUZZ_CHECK(c.prefixlen <= 128, "'%s': prefix length %u", s, c.prefixlen);
	if (addr_is_v4(&c.addr))
		FUZZ_CHECK(c.prefixlen >= SLUICE_V4_MAPPED_PREFIX, "'%s': IPv4 /%u", s, c.prefixlen);
	for (__u32 bit = c.prefixlen; bit < 128; bit++)
		FUZZ_CHECK(!(c.addr.a[bit / 8] & (0x80 >> (bit % 8))), "'%s': host bit %u set", s,
			   bit);
	format_cidr(&c, text, sizeof(text));
	e = parse_cidr(text, &c2, why, sizeof(why));
	FUZZ_CHECK(!e, "'%s' formats as '%s', which is refused: %s", s, text, why);
	FUZZ_CHECK(!memcmp(&c.addr, &c2.addr, sizeof(c.addr)) && c.prefixlen == c2.prefixlen,
		   "'%s' formats as '%s', another CIDR", s, text);
	format_cidr(&c2, again, sizeof(again));
	FUZZ_CHECK(!strcmp(text, again), "'%s' then '%s'", text, again);
	FUZZ_CHECK(cidr_family(&c) == (strchr(text, ':') ? SLUICE_FAMILY_V6 : SLUICE_FAMILY_V4),
		   "'%s': family %u", text, cidr_family(&c));
}

static void check_addr(const char *s)
{
	char text[INET6_ADDRSTRLEN];
	struct sluice_addr a, a2;
	const char *e = parse_addr(s, &a);

	if (e) {
		FUZZ_CHECK(*e, "refused '%s' without a reason", s);
		return;
	}
	format_addr(&a, text, sizeof(text));
	e = parse_addr(text, &a2);
	FUZZ_CHECK(!e && !memcmp(&a, &a2, sizeof(a)), "'%s' formats as '%s': %s", s, text,
		   e ? e : "another address");
}

static void check_source(const char *s)
{
	char text[SLUICE_CIDR_STR_MAX];
	struct sluice_src_key k, k2;
	const char *e = parse_source(s, &k);

	if (e)
		return;
	/* IPv4-mapped text is the IPv4 source. */
	FUZZ_CHECK(k.family == (strchr(s, ':') && memcmp(k.a, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) ?
				SLUICE_FAMILY_V6 : SLUICE_FAMILY_V4),
		   "'%s': family %u", s, k.family);
	format_source(&k, text, sizeof(text));
	e = parse_source(text, &k2);
	FUZZ_CHECK(!e && k.family == k2.family && !memcmp(k.a, k2.a, sizeof(k.a)) &&
		   k.key_len == k2.key_len && k.policy == k2.policy,
		   "'%s' formats as '%s': %s", s, text, e ? e : "another source");
}

/* Whole-string unsigned decimal in [min, max], by hand. */
static bool ref_u64(const char *s, __u64 min, __u64 max, __u64 *out)
{
	__u64 v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (v > (UINT64_MAX - (__u64)(*s - '0')) / 10)
			return false;
		v = v * 10 + (__u64)(*s - '0');
	}
	*out = v;
	return v >= min && v <= max;
}

static void check_u64(const char *s)
{
	static const __u64 bounds[][2] = { { 0, UINT64_MAX }, { 1, 65535 }, { 0, 255 } };

	for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
		__u64 v = 0, want = 0;
		bool ok = parse_u64(s, bounds[i][0], bounds[i][1], &v);
		bool ref = ref_u64(s, bounds[i][0], bounds[i][1], &want);

		FUZZ_CHECK(ok == ref, "parse_u64('%s', %llu, %llu) says %d, the reference %d", s,
			   (unsigned long long)bounds[i][0], (unsigned long long)bounds[i][1], ok, ref);
		FUZZ_CHECK(!ok || v == want, "parse_u64('%s') is %llu, not %llu", s,
			   (unsigned long long)v, (unsigned long long)want);
	}
}

static void check_rate(const char *s, __u32 unit)
{
	char why[256] = "", text[32];
	struct rule r = { .unit = unit }, r2 = { .unit = unit };

	if (rule_parse_rate("--rate", s, &r, why, sizeof(why))) {
		FUZZ_CHECK(why[0], "refused '%s' without a reason", s);
		return;
	}
	FUZZ_CHECK(r.period == SLUICE_PERIOD_SEC || r.period == SLUICE_PERIOD_MIN ||
		   r.period == SLUICE_PERIOD_HOUR, "'%s': period %u", s, r.period);
	FUZZ_CHECK(r.rate >= SLUICE_RATE_MIN && r.rate <= SLUICE_RATE_MAX * r.period,
		   "'%s': rate %llu per %u s", s, (unsigned long long)r.rate, r.period);
	rule_rate_words(&r, text, sizeof(text));
	FUZZ_CHECK(!rule_parse_rate("--rate", text, &r2, why, sizeof(why)) &&
		   r2.rate == r.rate && r2.period == r.period, "'%s' formats as '%s' (%s)", s, text,
		   why);
}

static void check_duration(const char *s, __u64 min_ns, __u64 max_ns)
{
	char why[256] = "", text[32];
	__u64 ns = 0, ns2 = 0;

	if (rule_parse_duration("--ban", s, min_ns, max_ns, &ns, why, sizeof(why))) {
		FUZZ_CHECK(why[0], "refused '%s' without a reason", s);
		return;
	}
	FUZZ_CHECK(ns >= min_ns && ns <= max_ns, "'%s' is %llu ns, out of [%llu, %llu]", s,
		   (unsigned long long)ns, (unsigned long long)min_ns, (unsigned long long)max_ns);
	duration_words(ns, text, sizeof(text));
	FUZZ_CHECK(!rule_parse_duration("--ban", text, min_ns, max_ns, &ns2, why, sizeof(why)) &&
		   ns2 == ns, "'%s' formats as '%s' (%s)", s, text, why);
}

/* "RATE BURST": the burst after a rate, as parse_limit does it. */
static void check_burst(const char *s)
{
	char *copy = strdup(s), *sp = copy ? strchr(copy, ' ') : NULL, why[256] = "";
	struct rule r = { .unit = SLUICE_UNIT_PACKETS };

	if (sp) {
		*sp = '\0';
		if (!rule_parse_rate("--rate", copy, &r, why, sizeof(why)) &&
		    !rule_parse_burst(sp + 1, &r, why, sizeof(why))) {
			FUZZ_CHECK(r.burst >= SLUICE_BURST_MIN && r.burst <= SLUICE_BURST_MAX,
				   "'%s': burst %llu", s, (unsigned long long)r.burst);
			FUZZ_CHECK((unsigned __int128)r.burst * r.period <
				   (unsigned __int128)SLUICE_BURST_SECONDS_MAX * r.rate,
				   "'%s': burst worth too many seconds", s);
		}
	}
	free(copy);
}

/* "ALGO RATE [WINDOW]": a window algorithm's budget, rate x window. */
static void check_window(const char *s)
{
	char *copy = strdup(s), *w[3] = { NULL }, *save = NULL, why[256] = "";
	struct rule r = { .unit = SLUICE_UNIT_PACKETS };
	unsigned __int128 lhs, rhs;
	__u64 max;
	int n = 0;

	if (!copy)
		abort();
	for (char *t = strtok_r(copy, " ", &save); t && n < 3; t = strtok_r(NULL, " ", &save))
		w[n++] = t;
	if (n >= 2 && !algo_parse(w[0], &r.algo) && r.algo != SLUICE_ALGO_TOKEN_BUCKET &&
	    !rule_parse_rate("--rate", w[1], &r, why, sizeof(why)) &&
	    !rule_parse_window(w[2], &r, why, sizeof(why))) {
		max = r.algo == SLUICE_ALGO_SLIDING_WINDOW ? SLUICE_SW_BUDGET_MAX :
							     SLUICE_FW_BUDGET_MAX;
		lhs = (unsigned __int128)r.burst * r.period * SLUICE_NS_PER_SEC;
		rhs = (unsigned __int128)r.rate * r.window_ns;
		FUZZ_CHECK(lhs == rhs, "'%s': budget %llu is not rate x window", s,
			   (unsigned long long)r.burst);
		FUZZ_CHECK(r.burst >= 1 && r.burst <= max, "'%s': budget %llu", s,
			   (unsigned long long)r.burst);
		FUZZ_CHECK(r.window_ns >= SLUICE_WINDOW_NS_MIN && r.window_ns <= SLUICE_WINDOW_NS_MAX,
			   "'%s': window %llu ns", s, (unsigned long long)r.window_ns);
	}
	free(copy);
}

static void check_iface_name(const char *s)
{
	size_t len = strlen(s);
	bool ref = len > 0 && len < IF_NAMESIZE && strcmp(s, ".") && strcmp(s, "..") &&
		   !strpbrk(s, "/: \t\n");
	struct fuzz_capture cap;
	int rc;

	capture_begin(&cap);
	rc = validate_ifname(s);
	capture_end(&cap);
	FUZZ_CHECK(rc == (ref ? 0 : EXIT_USAGE), "validate_ifname('%s') is %d", s, rc);
	if (rc)
		FUZZ_CHECK(count_lines(cap.err_buf, cap.err_len) == 1 && cap.out_len == 0,
			   "not one line: '%s'", cap.err_buf);
	else
		FUZZ_CHECK(cap.err_len == 0 && cap.out_len == 0, "printed '%s'", cap.err_buf);
	capture_free(&cap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s;

	if (size < 1)
		return 0;
	s = fuzz_str(data + 1, size - 1);
	switch (data[0] % P_MAX) {
	case P_CIDR: check_cidr(s); break;
	case P_ADDR: check_addr(s); break;
	case P_SOURCE: check_source(s); break;
	case P_U64: check_u64(s); break;
	case P_RATE: check_rate(s, data[0] & 0x80 ? SLUICE_UNIT_BYTES : SLUICE_UNIT_PACKETS); break;
	case P_BAN: check_duration(s, SLUICE_BAN_NS_MIN, SLUICE_BAN_NS_MAX); break;
	case P_WINDOW_DUR: check_duration(s, SLUICE_WINDOW_NS_MIN, SLUICE_WINDOW_NS_MAX); break;
	case P_BURST: check_burst(s); break;
	case P_WINDOW: check_window(s); break;
	case P_IFNAME: check_iface_name(s); break;
	}
	free(s);
	return 0;
}
