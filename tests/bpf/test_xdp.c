// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The XDP program through BPF_PROG_TEST_RUN with crafted frames: every frame
 * kind lands under the right reason, policy precedence, exact admission. */
#include <time.h>
#include <unistd.h>
#include "fixture.h"
#include "sluice/gcra.h"
#include "../lib/harness.h"
#include "sources.h"
#include "sluice_nobucket.skel.h"

static struct fixture fx;

/* A fresh program's maps for each case, so counts start at zero (the
 * program itself loaded once: fixture_fresh). */
static int setup(const char *policy)
{
	if (fixture_fresh(&fx, 0, sluice_bpf__open))
		return -1;
	return policy ? fixture_policy(&fx, policy) : 0;
}

/* Run one frame once; check action and that exactly `reason` counted it. */
static int one_frame_reason(const struct frame *f, __u32 reason, int *action)
{
	struct sluice_counter before[SLUICE_R_MAX], after[SLUICE_R_MAX];

	counters_now(&fx, before);
	*action = run_frame(&fx, f, 1, NULL);
	counters_now(&fx, after);
	for (__u32 r = 0; r < SLUICE_R_MAX; r++) {
		__u64 d = after[r].packets - before[r].packets;
		__u64 db = after[r].bytes - before[r].bytes;

		if (d != (r == reason) || db != (r == reason ? f->len : 0)) {
			printf("  reason %s counted %llu packets %llu bytes\n", reason_name(r),
			       (unsigned long long)d, (unsigned long long)db);
			return -1;
		}
	}
	return 0;
}

#define EXPECT_REASON(f, reason, act)                                          \
	do {                                                                   \
		int a_;                                                        \
		CHECK(one_frame_reason(f, reason, &a_) == 0,                   \
		      "frame not counted exactly once as %s", reason_name(reason)); \
		CHECK(a_ == (act), "action %d, want %d", a_, act);             \
	} while (0)

static void non_ip_frames_pass(void)
{
	struct frame f;

	CHECK(setup("limit default --rate 1 --burst 1") == 0, "setup");
	frame_eth(&f, ETH_P_ARP);
	frame_put(&f, NULL, 28);
	EXPECT_REASON(&f, SLUICE_R_NON_IP, XDP_PASS);
	frame_eth(&f, 0x88cc);		/* LLDP */
	frame_put(&f, NULL, 40);
	EXPECT_REASON(&f, SLUICE_R_NON_IP, XDP_PASS);
	/* a non-IP frame behind tags is still not IP */
	frame_eth(&f, ETH_P_8021AD);
	frame_vlan(&f, ETH_P_8021Q);
	frame_vlan(&f, ETH_P_ARP);
	frame_put(&f, NULL, 28);
	EXPECT_REASON(&f, SLUICE_R_NON_IP, XDP_PASS);
}

/* Ethernet and n priority tags (VLAN ID 0, as Linux strips them nested),
 * the outer one 802.1ad, the rest 802.1Q, the innermost carrying inner. */
static void frame_tags(struct frame *f, unsigned int n, __u16 inner)
{
	frame_eth(f, n ? ETH_P_8021AD : inner);
	for (unsigned int i = 0; i < n; i++) {
		__be16 tag[2] = { htons(0), htons(i + 1 < n ? ETH_P_8021Q : inner) };

		frame_put(f, tag, sizeof(tag));
	}
}

/* Every depth up to SLUICE_MAX_VLAN_TAGS is judged by the packet inside (a
 * deny rule drops it as denied, IPv4 and IPv6); one tagged deeper than that
 * is dropped as vlan_too_deep, whatever it carries; a stack cut short has
 * no source and passes as malformed. */
static void vlan_stack_depths(void)
{
	struct frame f;
	unsigned int n;
	char name[32];

	CHECK(setup("deny 198.18.0.66/32; deny 2001:2::66/128") == 0, "setup");
	for (n = 0; n <= SLUICE_MAX_VLAN_TAGS + 2; n++) {
		__u32 want = n <= SLUICE_MAX_VLAN_TAGS ? SLUICE_R_DENIED : SLUICE_R_VLAN_TOO_DEEP;

		snprintf(name, sizeof(name), "%u tags", n);
		CASE(name);
		frame_tags(&f, n, ETH_P_IP);
		frame_ipv4(&f, "198.18.0.66", 5);
		frame_udp(&f);
		EXPECT_REASON(&f, want, XDP_DROP);
		frame_tags(&f, n, ETH_P_IPV6);
		frame_ipv6(&f, "2001:2::66", IPPROTO_UDP)->payload_len = htons(8);
		frame_udp(&f);
		EXPECT_REASON(&f, want, XDP_DROP);
		/* an undenied source at the same depth passes */
		frame_tags(&f, n, ETH_P_IP);
		frame_ipv4(&f, "198.18.0.67", 5);
		frame_udp(&f);
		EXPECT_REASON(&f, n <= SLUICE_MAX_VLAN_TAGS ? SLUICE_R_ALLOWED
							    : SLUICE_R_VLAN_TOO_DEEP,
			      n <= SLUICE_MAX_VLAN_TAGS ? XDP_PASS : XDP_DROP);
		/* the stack cut inside its last tag */
		if (n) {
			frame_tags(&f, n, ETH_P_IP);
			f.len -= 2;
			EXPECT_REASON(&f, n <= SLUICE_MAX_VLAN_TAGS ? SLUICE_R_MALFORMED
								    : SLUICE_R_VLAN_TOO_DEEP,
				      n <= SLUICE_MAX_VLAN_TAGS ? XDP_PASS : XDP_DROP);
		}
	}
	CASE("vlan_stack_depths");
	/* the most tags walked, then an IPv4 header cut short: no source */
	frame_tags(&f, SLUICE_MAX_VLAN_TAGS, ETH_P_IP);
	frame_put(&f, NULL, 10);
	EXPECT_REASON(&f, SLUICE_R_MALFORMED, XDP_PASS);
}

static void vlan_tagged_ip_is_limited(void)
{
	struct frame f;
	struct sluice_bucket b;

	CHECK(setup("limit default --rate 1 --burst 1") == 0, "setup");
	frame_eth(&f, ETH_P_8021Q);
	frame_vlan(&f, ETH_P_IP);
	frame_ipv4(&f, "198.18.7.1", 5);
	frame_udp(&f);
	EXPECT_REASON(&f, SLUICE_R_WITHIN_LIMIT, XDP_PASS);
	EXPECT_REASON(&f, SLUICE_R_RATE_LIMITED, XDP_DROP);
	CHECK(bucket_of(&fx, "198.18.7.1", &b) == 0, "no bucket for the tagged source");
	frame_eth(&f, ETH_P_8021AD);
	frame_vlan(&f, ETH_P_8021Q);
	frame_vlan(&f, ETH_P_IPV6);
	frame_ipv6(&f, "2001:2::77", IPPROTO_UDP);
	frame_udp(&f);
	EXPECT_REASON(&f, SLUICE_R_WITHIN_LIMIT, XDP_PASS);
	EXPECT_REASON(&f, SLUICE_R_RATE_LIMITED, XDP_DROP);
	CHECK(bucket_of(&fx, "2001:2::77", &b) == 0, "no bucket for the QinQ source");
}

/* Malformed IPv4 passes to the stack, counted as malformed; one that still
 * names a source is charged to it like any other, so breaking a header is
 * no way around a limit. */
static void malformed_ipv4_passes_counted(void)
{
	static const struct {
		const char *src;
		int ihl, version, tot_len;
	} charged[] = {
		{ "198.18.0.2", 4, 4, 0 },	/* ihl below 5 */
		{ "198.18.0.3", 15, 4, 0 },	/* 60 bytes claimed, 20 present */
		{ "198.18.0.4", 5, 6, 0 },	/* version 6 behind the IPv4 type */
		{ "198.18.0.5", 5, 4, 12 },	/* total length below the header */
	};
	struct sluice_bucket b;
	struct iphdr *ip;
	struct frame f;

	CHECK(setup("limit default --rate 1 --burst 1") == 0, "setup");
	/* no source: 10 bytes of a 20-byte header; a VLAN tag cut short */
	frame_eth(&f, ETH_P_IP);
	frame_put(&f, NULL, 10);
	f.buf[14] = 0x45;
	EXPECT_REASON(&f, SLUICE_R_MALFORMED, XDP_PASS);
	EXPECT_REASON(&f, SLUICE_R_MALFORMED, XDP_PASS);
	frame_eth(&f, ETH_P_8021Q);
	frame_put(&f, NULL, 2);
	EXPECT_REASON(&f, SLUICE_R_MALFORMED, XDP_PASS);

	for (size_t i = 0; i < sizeof(charged) / sizeof(charged[0]); i++) {
		CASE(charged[i].src);
		frame_eth(&f, ETH_P_IP);
		ip = frame_ipv4(&f, charged[i].src, 5);
		ip->ihl = charged[i].ihl;
		ip->version = charged[i].version;
		if (charged[i].tot_len)
			ip->tot_len = htons(charged[i].tot_len);
		EXPECT_REASON(&f, SLUICE_R_MALFORMED, XDP_PASS);
		EXPECT_REASON(&f, SLUICE_R_RATE_LIMITED, XDP_DROP);
		CHECK(bucket_of(&fx, charged[i].src, &b) == 0 && b.passed == 1 && b.dropped == 1,
		      "the source's own counters: %llu/%llu", (unsigned long long)b.passed,
		      (unsigned long long)b.dropped);
	}
	CASE("malformed_ipv4_passes_counted");
}

static void ipv4_options_are_parsed(void)
{
	struct frame f;

	CHECK(setup("limit default --rate 1 --burst 2") == 0, "setup");
	frame_eth(&f, ETH_P_IP);
	frame_ipv4(&f, "198.18.3.3", 15);	/* 40 bytes of options */
	frame_udp(&f);
	EXPECT_REASON(&f, SLUICE_R_WITHIN_LIMIT, XDP_PASS);
	EXPECT_REASON(&f, SLUICE_R_WITHIN_LIMIT, XDP_PASS);
	EXPECT_REASON(&f, SLUICE_R_RATE_LIMITED, XDP_DROP);
}

/* IPv6 with extension headers: hop-by-hop, destination options, fragment. */
static void ipv6_extension_headers(void)
{
	struct frame f;
	__u8 *e;
	int i;

	CHECK(setup("limit default --rate 1 --burst 1") == 0, "setup");
	frame_eth(&f, ETH_P_IPV6);
	frame_ipv6(&f, "2001:2::10", IPPROTO_HOPOPTS);
	e = frame_put(&f, NULL, 8);
	e[0] = IPPROTO_DSTOPTS;
	e = frame_put(&f, NULL, 16);
	e[0] = IPPROTO_FRAGMENT;
	e[1] = 1;			/* 16 bytes */
	e = frame_put(&f, NULL, 8);
	e[0] = IPPROTO_UDP;
	frame_udp(&f);
	EXPECT_REASON(&f, SLUICE_R_WITHIN_LIMIT, XDP_PASS);
	EXPECT_REASON(&f, SLUICE_R_RATE_LIMITED, XDP_DROP);

	/* chain cut short: destination options claim 16 bytes, 8 present;
	 * malformed, but still charged to its source */
	frame_eth(&f, ETH_P_IPV6);
	frame_ipv6(&f, "2001:2::11", IPPROTO_DSTOPTS);
	e = frame_put(&f, NULL, 8);
	e[0] = IPPROTO_UDP;
	e[1] = 1;
	EXPECT_REASON(&f, SLUICE_R_MALFORMED, XDP_PASS);
	EXPECT_REASON(&f, SLUICE_R_RATE_LIMITED, XDP_DROP);

	/* more extension headers than the bound: no way around the limit */
	frame_eth(&f, ETH_P_IPV6);
	frame_ipv6(&f, "2001:2::12", IPPROTO_DSTOPTS);
	for (i = 0; i < SLUICE_MAX_IPV6_EXT_HDRS + 1; i++) {
		e = frame_put(&f, NULL, 8);
		e[0] = i < SLUICE_MAX_IPV6_EXT_HDRS ? IPPROTO_DSTOPTS : IPPROTO_UDP;
	}
	EXPECT_REASON(&f, SLUICE_R_MALFORMED, XDP_PASS);
	EXPECT_REASON(&f, SLUICE_R_RATE_LIMITED, XDP_DROP);

	/* truncated fixed header */
	frame_eth(&f, ETH_P_IPV6);
	e = frame_put(&f, NULL, 20);
	e[0] = 0x60;
	EXPECT_REASON(&f, SLUICE_R_MALFORMED, XDP_PASS);

	/* wrong version: still charged to the source it claims */
	frame_eth(&f, ETH_P_IPV6);
	frame_ipv6(&f, "2001:2::13", IPPROTO_UDP)->version = 4;
	EXPECT_REASON(&f, SLUICE_R_MALFORMED, XDP_PASS);
	EXPECT_REASON(&f, SLUICE_R_RATE_LIMITED, XDP_DROP);
}

static void precedence_most_specific_wins(void)
{
	static const struct {
		const char *src;
		__u32 reason;
	} cases[] = {
		{ "198.18.5.200", SLUICE_R_DENIED },	/* /25 deny */
		{ "198.18.5.1", SLUICE_R_ALLOWED },	/* /24 allow */
		{ "198.18.9.9", SLUICE_R_RATE_LIMITED },	/* /16 burst 1 */
		{ "198.19.0.1", SLUICE_R_WITHIN_LIMIT },	/* default burst 5 */
		{ "2001:2:0:1::5", SLUICE_R_DENIED },	/* /64 deny */
		{ "2001:2::5", SLUICE_R_ALLOWED },	/* /48 allow */
		{ "2001:3::1", SLUICE_R_WITHIN_LIMIT },	/* default */
	};
	struct frame f;

	CHECK(setup("limit default --rate 1 --burst 5;"
		    "limit set 198.18.0.0/16 --rate 1 --burst 1;"
		    "allow 198.18.5.0/24;"
		    "deny 198.18.5.128/25;"
		    "allow 2001:2::/48;"
		    "deny 2001:2:0:1::/64") == 0, "setup");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		frame_udp_from(&f, cases[i].src);
		/* first packet of the /16 source spends its burst of one */
		if (cases[i].reason == SLUICE_R_RATE_LIMITED)
			EXPECT_REASON(&f, SLUICE_R_WITHIN_LIMIT, XDP_PASS);
		CASE(cases[i].src);
		EXPECT_REASON(&f, cases[i].reason,
			      sluice_reason_is_drop(cases[i].reason) ? XDP_DROP : XDP_PASS);
	}
	CASE("precedence_most_specific_wins");
}

static double mono_s(void)
{
	return (double)mono_now_ns() / 1e9;
}

/* Burst B at rate 1: exactly B of N identical packets pass (plus one per
 * whole second the run took, which the check accounts for). */
static void exact_burst_of_identical_packets(void)
{
	static const __u64 bursts[] = { 1, 7, 100, 1000 };
	struct sluice_counter c[SLUICE_R_MAX];
	struct sluice_bucket b;
	struct frame f;
	char pol[96];

	for (size_t i = 0; i < sizeof(bursts) / sizeof(bursts[0]); i++) {
		__u32 n = 10000;
		double t0, t1;
		__u64 most;

		snprintf(pol, sizeof(pol), "limit default --rate 1 --burst %llu",
			 (unsigned long long)bursts[i]);
		CHECK(setup(pol) == 0, "setup");
		frame_udp_from(&f, "198.18.0.9");
		t0 = mono_s();
		CHECK(run_frame(&fx, &f, n, NULL) == XDP_DROP, "last of %u not dropped", n);
		t1 = mono_s();
		counters_now(&fx, c);
		most = bursts[i] + (__u64)(t1 - t0);	/* one refill per whole second */
		CHECK(c[SLUICE_R_WITHIN_LIMIT].packets >= bursts[i] &&
		      c[SLUICE_R_WITHIN_LIMIT].packets <= most,
		      "burst %llu: %llu of %u passed in %.3fs", (unsigned long long)bursts[i],
		      (unsigned long long)c[SLUICE_R_WITHIN_LIMIT].packets, n, t1 - t0);
		CHECK(c[SLUICE_R_WITHIN_LIMIT].packets + c[SLUICE_R_RATE_LIMITED].packets == n,
		      "pass + drop != %u", n);
		CHECK(bucket_of(&fx, "198.18.0.9", &b) == 0 &&
		      b.passed == c[SLUICE_R_WITHIN_LIMIT].packets &&
		      b.dropped == c[SLUICE_R_RATE_LIMITED].packets,
		      "per-source counters disagree with the totals");
	}
}

/* Refill: after the burst is spent, waiting k intervals admits k more. */
static void refill_after_idle(void)
{
	struct sluice_counter c[SLUICE_R_MAX];
	struct frame f;

	CHECK(setup("limit default --rate 20 --burst 3") == 0, "setup");	/* T = 50 ms */
	frame_udp_from(&f, "198.18.0.10");
	run_frame(&fx, &f, 100, NULL);
	counters_now(&fx, c);
	CHECK(c[SLUICE_R_WITHIN_LIMIT].packets == 3, "burst: %llu passed",
	      (unsigned long long)c[SLUICE_R_WITHIN_LIMIT].packets);
	usleep(170 * 1000);	/* 3.4 intervals: 3 more, not 4 */
	run_frame(&fx, &f, 100, NULL);
	counters_now(&fx, c);
	CHECK(c[SLUICE_R_WITHIN_LIMIT].packets == 6, "after idle: %llu passed, want 6",
	      (unsigned long long)c[SLUICE_R_WITHIN_LIMIT].packets);
}

static void sources_have_their_own_buckets(void)
{
	struct sluice_counter c[SLUICE_R_MAX];
	char src[64];
	struct frame f;
	int i;

	CHECK(setup("limit default --rate 1 --burst 2") == 0, "setup");
	for (i = 0; i < 50; i++) {
		snprintf(src, sizeof(src), "198.18.1.%d", i + 1);
		frame_udp_from(&f, src);
		run_frame(&fx, &f, 5, NULL);
		snprintf(src, sizeof(src), "2001:2::%x", i + 1);
		frame_udp_from(&f, src);
		run_frame(&fx, &f, 5, NULL);
	}
	counters_now(&fx, c);
	CHECK(c[SLUICE_R_WITHIN_LIMIT].packets == 200, "%llu passed, want 100 sources x 2",
	      (unsigned long long)c[SLUICE_R_WITHIN_LIMIT].packets);
	CHECK(c[SLUICE_R_RATE_LIMITED].packets == 300, "%llu dropped, want 300",
	      (unsigned long long)c[SLUICE_R_RATE_LIMITED].packets);
	CHECK(count_sources(&fx.m) == 100, "%ld sources tracked, want 100", count_sources(&fx.m));
}

/* A source whose rule was deleted, idle across one more commit: its old
 * limit is unknown (its index is free, not "unchanged since"), so it
 * starts its new rule spent, never with a fresh budget. */
static void deleted_rule_idle_source_starts_spent(void)
{
	struct frame f;

	CHECK(setup("limit default --rate 1/h --burst 5;"
		    "limit set 198.18.3.0/24 --rate 1/h --burst 1") == 0, "setup");
	frame_udp_from(&f, "198.18.3.3");
	EXPECT_REASON(&f, SLUICE_R_WITHIN_LIMIT, XDP_PASS);
	EXPECT_REASON(&f, SLUICE_R_RATE_LIMITED, XDP_DROP);
	CHECK(fixture_policy(&fx, "limit default --rate 1/h --burst 5") == 0, "delete the /24");
	CHECK(fixture_policy(&fx, "limit default --rate 2/h --burst 5") == 0, "another commit");
	EXPECT_REASON(&f, SLUICE_R_RATE_LIMITED, XDP_DROP);
}

/* Whether the default policy, as committed, is judged by the coarse clock. */
static int default_is_coarse(const char *policy)
{
	struct sluice_config cfg;
	struct sluice_policy sp;

	if (setup(policy))
		return -1;
	live_config(&fx.m, &cfg);
	if (policy_entry(&fx.m, SLUICE_GEN_SLOT(cfg.gen_slot), SLUICE_POLICY_DEFAULT, &sp))
		return -1;
	return !!(sp.flags & SLUICE_POLICY_COARSE_CLOCK);
}

/* The coarse clock (~20 ns cheaper a packet) only where its lag, under one
 * tick, is worth at most one packet: token buckets without a ban whose
 * interval is at least a tick. */
static void coarse_clock_only_where_a_tick_is_one_packet(void)
{
	__u64 tick = coarse_tick_ns();
	char pol[96];

	CHECK(tick > 0 && tick <= 100 * 1000 * 1000, "coarse clock tick %llu ns",
	      (unsigned long long)tick);
	snprintf(pol, sizeof(pol), "limit default --rate %llu --burst 5",
		 (unsigned long long)(SLUICE_NS_PER_SEC / tick));
	CHECK(default_is_coarse(pol) == 1, "%s: not coarse", pol);
	CHECK(default_is_coarse("limit default --rate 1 --burst 1") == 1, "1/s: not coarse");
	snprintf(pol, sizeof(pol), "limit default --rate %llu --burst 5",
		 (unsigned long long)(SLUICE_NS_PER_SEC / tick + 1));
	CHECK(default_is_coarse(pol) == 0, "%s: coarse", pol);
	CHECK(default_is_coarse("limit default --rate 1 --burst 1 --ban 1s") == 0,
	      "with --ban: coarse");
	CHECK(default_is_coarse("limit default --rate 1/s --algo fixed-window") == 0,
	      "fixed window: coarse");
	CHECK(default_is_coarse("limit default --bytes 100000 --burst 100000") == 0,
	      "100000 bytes/s: coarse");
	CHECK(default_is_coarse("limit default --bytes 100 --burst 1500") == 1,
	      "100 bytes/s: not coarse");
}

/* A coarse-clock rule really is judged by the coarse clock: a fresh source's
 * first packet sets TAT to the clock's reading + T, and that reading lies
 * between CLOCK_MONOTONIC_COARSE read before and after the run (a precise
 * reading is nearly always past the second). */
static void coarse_rule_reads_the_coarse_clock(void)
{
	__u64 interval = gcra_interval(1), c0, c1;
	struct sluice_bucket b;
	struct frame f;
	char src[32];

	CHECK(setup("limit default --rate 1 --burst 5") == 0, "setup");
	for (int i = 0; i < 3; i++) {
		snprintf(src, sizeof(src), "198.18.0.%d", 100 + i);
		frame_udp_from(&f, src);
		c0 = coarse_now_ns();
		run_frame(&fx, &f, 1, NULL);
		c1 = coarse_now_ns();
		CHECK(bucket_of(&fx, src, &b) == 0, "%s: no bucket", src);
		CHECK(b.tat >= interval && b.tat - interval >= gcra_now(c0) &&
		      b.tat - interval <= gcra_now(c1),
		      "%s: judged at %llu ns, the coarse clock read %llu..%llu", src,
		      (unsigned long long)((b.tat - interval) >> SLUICE_GCRA_SHIFT),
		      (unsigned long long)c0, (unsigned long long)c1);
	}
}

/* A source's passed and dropped (32 bits each) stop at SLUICE_SRC_COUNT_MAX
 * and never wrap to small numbers, which would hide a flood from `top`. */
static void source_counters_saturate(void)
{
	struct sluice_src_key k;
	struct sluice_bucket b;
	struct frame f;

	CHECK(setup("limit default --rate 1/h --burst 1") == 0, "setup");
	frame_udp_from(&f, "198.18.0.91");
	run_frame(&fx, &f, 2, NULL);
	CHECK(parse_source("198.18.0.91", &k) == 0 && bucket_of(&fx, "198.18.0.91", &b) == 0,
	      "no bucket");
	CHECK(b.passed == 1 && b.dropped == 1, "passed %u dropped %u, want 1 and 1", b.passed,
	      b.dropped);
	CHECK(set_source_counts(&fx, "198.18.0.91", SLUICE_SRC_COUNT_MAX - 1,
				SLUICE_SRC_COUNT_MAX - 2) == 0, "update");
	run_frame(&fx, &f, 5, NULL);
	CHECK(bucket_of(&fx, "198.18.0.91", &b) == 0 && b.dropped == SLUICE_SRC_COUNT_MAX &&
	      b.passed == SLUICE_SRC_COUNT_MAX - 1,
	      "after 5 drops: passed %u dropped %u, want %u and %u", b.passed, b.dropped,
	      SLUICE_SRC_COUNT_MAX - 1, SLUICE_SRC_COUNT_MAX);
}

/* A policy change reaches sources that already have a bucket. */
static void policy_change_reaches_known_sources(void)
{
	struct sluice_policy_counter pc;
	struct frame f;
	__u64 drops;

	CHECK(setup("limit default --rate 1 --burst 1") == 0, "setup");
	frame_udp_from(&f, "198.18.2.2");
	EXPECT_REASON(&f, SLUICE_R_WITHIN_LIMIT, XDP_PASS);
	EXPECT_REASON(&f, SLUICE_R_RATE_LIMITED, XDP_DROP);
	CHECK(fixture_policy(&fx, "limit default --rate 1 --burst 1;allow 198.18.2.0/24") == 0,
	      "allow");
	EXPECT_REASON(&f, SLUICE_R_ALLOWED, XDP_PASS);
	CHECK(fixture_policy(&fx, "limit default --rate 1 --burst 1;deny 198.18.2.0/24") == 0,
	      "deny");
	EXPECT_REASON(&f, SLUICE_R_DENIED, XDP_DROP);
	/* A limit for the same CIDR: the source's bucket was last judged by
	 * the default, which has not changed since, so its tokens are known
	 * (none: it spent its one) and carry over, clamped to the new burst;
	 * the /24's rule (index 1) judges it now. */
	CHECK(read_policy_counter(&fx.m, 1, &pc) == 0, "read the /24's counters");
	drops = pc.drop_packets;
	CHECK(fixture_policy(&fx, "limit default --rate 1 --burst 1;"
			     "limit set 198.18.2.0/24 --rate 1 --burst 3") == 0, "limit");
	EXPECT_REASON(&f, SLUICE_R_RATE_LIMITED, XDP_DROP);
	CHECK(read_policy_counter(&fx.m, 1, &pc) == 0 && pc.drop_packets == drops + 1,
	      "the /24's rule dropped %llu, want %llu", (unsigned long long)pc.drop_packets,
	      (unsigned long long)drops + 1);
	/* per-policy counters follow the CIDR, the default saw its two */
	CHECK(read_policy_counter(&fx.m, SLUICE_POLICY_DEFAULT, &pc) == 0 &&
	      pc.pass_packets == 1 && pc.drop_packets == 1,
	      "default policy counted %llu/%llu", (unsigned long long)pc.pass_packets,
	      (unsigned long long)pc.drop_packets);
}

/* IPv6 prefixes never cover IPv4 sources, even ::/0; and an IPv6 packet is
 * judged by IPv6 rules whatever its source looks like: ::ffff:198.18.0.60
 * is not IPv4 198.18.0.60, neither for the rules nor for the bucket. */
static void families_are_separate(void)
{
	struct sluice_bucket b4, b6;
	struct frame f4, f6;

	CHECK(setup("limit default --rate 1 --burst 1;deny ::/0;allow 0.0.0.0/0") == 0, "setup");
	frame_udp_from(&f4, "198.18.0.60");
	EXPECT_REASON(&f4, SLUICE_R_ALLOWED, XDP_PASS);
	frame_udp_from(&f6, "2001:2::60");
	EXPECT_REASON(&f6, SLUICE_R_DENIED, XDP_DROP);
	frame_udp_from(&f6, "::ffff:198.18.0.60");
	EXPECT_REASON(&f6, SLUICE_R_DENIED, XDP_DROP);
	EXPECT_REASON(&f6, SLUICE_R_DENIED, XDP_DROP);

	/* each family's own rule and own bucket */
	CHECK(setup("limit default --rate 1 --burst 1;limit set ::/0 --rate 1 --burst 3") == 0,
	      "setup");
	EXPECT_REASON(&f4, SLUICE_R_WITHIN_LIMIT, XDP_PASS);
	EXPECT_REASON(&f4, SLUICE_R_RATE_LIMITED, XDP_DROP);
	EXPECT_REASON(&f6, SLUICE_R_WITHIN_LIMIT, XDP_PASS);
	EXPECT_REASON(&f6, SLUICE_R_WITHIN_LIMIT, XDP_PASS);
	EXPECT_REASON(&f6, SLUICE_R_WITHIN_LIMIT, XDP_PASS);
	EXPECT_REASON(&f6, SLUICE_R_RATE_LIMITED, XDP_DROP);
	CHECK(bucket_of(&fx, "198.18.0.60", &b4) == 0 && bucket_of_v6(&fx, "::ffff:198.18.0.60", &b6) == 0,
	      "want a bucket for each family");
	CHECK(b4.passed == 1 && b4.dropped == 1 && b6.passed == 3 && b6.dropped == 1,
	      "buckets counted v4 %llu/%llu, v6 %llu/%llu", (unsigned long long)b4.passed,
	      (unsigned long long)b4.dropped, (unsigned long long)b6.passed,
	      (unsigned long long)b6.dropped);
	CHECK(count_sources(&fx.m) == 2, "%ld sources tracked, want 2", count_sources(&fx.m));
}

/* Passed packets out of `n` sent back to back. */
static __u64 passed_of(const struct frame *f, __u32 n)
{
	struct sluice_counter a[SLUICE_R_MAX], b[SLUICE_R_MAX];

	counters_now(&fx, a);
	run_frame(&fx, f, n, NULL);
	counters_now(&fx, b);
	return b[SLUICE_R_WITHIN_LIMIT].packets - a[SLUICE_R_WITHIN_LIMIT].packets;
}

/* Raising a limit takes effect now: the source keeps its tokens (none),
 * not the old limit's debt (1000 s at 1/s). */
static void raised_limit_takes_effect_now(void)
{
	__u64 t0, t1, got;
	struct frame f;

	CHECK(setup("limit default --rate 1 --burst 1000") == 0, "setup");
	frame_udp_from(&f, "198.18.0.80");
	CHECK((got = passed_of(&f, 1001)) == 1000, "burst: %llu passed", (unsigned long long)got);
	t0 = mono_now_ns();
	CHECK(fixture_policy(&fx, "limit default --rate 100000 --burst 100000") == 0, "raise");
	usleep(1000);
	EXPECT_REASON(&f, SLUICE_R_WITHIN_LIMIT, XDP_PASS);
	/* ... carrying no tokens: what the new rate refilled, not a new burst */
	got = passed_of(&f, 100000);
	t1 = mono_now_ns();
	CHECK(got + 1 <= 100000 * (t1 - t0) / SLUICE_NS_PER_SEC + 1,
	      "%llu passed in %.3f ms after the raise: more than the new rate refilled",
	      (unsigned long long)got + 1, (double)(t1 - t0) / 1e6);
}

/* Lowering the burst clamps the tokens to it: a full bucket moving from
 * burst 500 to 5 gets exactly 5, and an empty one owes no more than 5. */
static void lowered_burst_clamps_tokens(void)
{
	__u64 got;
	struct frame f;

	CHECK(setup("limit default --rate 1000000 --burst 500") == 0, "setup");
	frame_udp_from(&f, "198.18.0.81");
	CHECK(passed_of(&f, 1) == 1, "first packet");
	/* Refilled (500 tokens) 0.5 ms after it; the new rule converts on the
	 * coarse clock, which may lag by a few ticks when the VM is busy, so
	 * wait well past that for its reading to see a full bucket too. */
	usleep(50 * 1000);
	CHECK(fixture_policy(&fx, "limit default --rate 1 --burst 5") == 0, "lower");
	CHECK((got = passed_of(&f, 100)) == 5, "%llu passed, want exactly 5",
	      (unsigned long long)got);

	CHECK(setup("limit default --rate 1000 --burst 500") == 0, "setup");
	CHECK((got = passed_of(&f, 600)) == 500, "burst: %llu passed", (unsigned long long)got);
	CHECK(fixture_policy(&fx, "limit default --rate 1000 --burst 5") == 0, "lower");
	usleep(20 * 1000);	/* 20 tokens' worth at 1000/s, clamped to 5 */
	CHECK((got = passed_of(&f, 100)) == 5, "%llu passed 20 ms after lowering, want 5",
	      (unsigned long long)got);
}

static struct sluice_bpf *open_nobucket(void)
{
	return (struct sluice_bpf *)sluice_nobucket_bpf__open();
}

/* A source table that never gives a bucket: allow and deny still hold, and
 * a limited source is dropped as no_bucket, never passed unjudged. */
static void no_bucket_judged(void)
{
	struct frame f;

	CHECK(fixture_policy(&fx, "limit default --rate 1000 --burst 1000;"
			     "deny 198.18.9.0/24;allow 198.18.10.0/24") == 0, "policy");
	frame_udp_from(&f, "198.18.9.1");
	EXPECT_REASON(&f, SLUICE_R_DENIED, XDP_DROP);
	frame_udp_from(&f, "198.18.10.1");
	EXPECT_REASON(&f, SLUICE_R_ALLOWED, XDP_PASS);
	frame_udp_from(&f, "198.18.11.1");
	EXPECT_REASON(&f, SLUICE_R_NO_BUCKET, XDP_DROP);
	EXPECT_REASON(&f, SLUICE_R_NO_BUCKET, XDP_DROP);
	CHECK(count_sources(&fx.m) == 0, "%ld sources tracked", count_sources(&fx.m));
}

/* The no-bucket variant beside the real program, which stays loaded for
 * the cases after this one. */
static void no_bucket_fails_closed(void)
{
	struct fixture real = fx, nobucket = { 0 };
	int err = fixture_fresh(&nobucket, 0, open_nobucket);

	if (!err) {
		fx = nobucket;
		no_bucket_judged();
		fx = real;
	}
	fixture_close(&nobucket);
	CHECK(err == 0, "load the no-bucket variant");
}

/* Allow and deny need no bucket: they hold for sources never seen, take no
 * table entry, and so cannot fail open when the table cannot give one. */
static void allow_deny_need_no_bucket(void)
{
	char src[64];
	struct frame f;

	CHECK(setup("limit default --rate 1 --burst 1;deny 198.18.0.0/16;allow 2001:2::/48") == 0,
	      "setup");
	for (int i = 0; i < 200; i++) {
		snprintf(src, sizeof(src), "198.18.%d.%d", i / 250, i % 250 + 1);
		frame_udp_from(&f, src);
		EXPECT_REASON(&f, SLUICE_R_DENIED, XDP_DROP);
		snprintf(src, sizeof(src), "2001:2::%x", i + 1);
		frame_udp_from(&f, src);
		EXPECT_REASON(&f, SLUICE_R_ALLOWED, XDP_PASS);
	}
	CHECK(count_sources(&fx.m) == 0, "%ld sources tracked, want none", count_sources(&fx.m));
}

/* Editing one rule keeps the counters of every other rule. */
static void edits_keep_other_rules_counters(void)
{
	struct sluice_policy_counter before, after;
	struct policy *p = malloc(sizeof(*p));
	struct frame f;
	__u32 idx = 0;

	CHECK(p, "out of memory");
	CHECK(setup("limit default --rate 1 --burst 1;limit set 198.18.77.0/24 --rate 1 --burst 2")
	      == 0, "setup");
	frame_udp_from(&f, "198.18.77.5");
	run_frame(&fx, &f, 10, NULL);
	CHECK(policy_read(&fx.m, p) == 0 && p->n == 1, "read policy");
	idx = p->rules[0].index;
	CHECK(read_policy_counter(&fx.m, idx, &before) == 0 && before.pass_packets == 2 &&
	      before.drop_packets == 8, "rule counted %llu/%llu, want 2/8",
	      (unsigned long long)before.pass_packets, (unsigned long long)before.drop_packets);
	CHECK(fixture_policy(&fx, "limit default --rate 1 --burst 1;"
			     "limit set 198.18.77.0/24 --rate 1 --burst 2;allow 198.18.78.0/24") == 0,
	      "edit");
	CHECK(policy_read(&fx.m, p) == 0 && p->n == 2, "read policy");
	for (unsigned int i = 0; i < p->n; i++)
		if (p->rules[i].cidr.addr.a[14] == 77)
			CHECK(p->rules[i].index == idx, "rule moved from index %u to %u", idx,
			      p->rules[i].index);
	CHECK(read_policy_counter(&fx.m, idx, &after) == 0 &&
	      after.pass_packets == before.pass_packets &&
	      after.drop_packets == before.drop_packets,
	      "an unrelated edit reset the rule's counters to %llu/%llu",
	      (unsigned long long)after.pass_packets, (unsigned long long)after.drop_packets);
	free(p);
}

/* Until a default is set, nothing is limited. */
static void initial_policy_limits_nothing(void)
{
	struct frame f;

	CHECK(setup(NULL) == 0, "setup");
	frame_udp_from(&f, "198.18.0.50");
	for (int i = 0; i < 5; i++)
		EXPECT_REASON(&f, SLUICE_R_ALLOWED, XDP_PASS);
}

int main(void)
{
	int err = fixture_main_open(&fx);

	if (err)
		return err;
	RUN(non_ip_frames_pass);
	RUN(vlan_stack_depths);
	RUN(vlan_tagged_ip_is_limited);
	RUN(malformed_ipv4_passes_counted);
	RUN(ipv4_options_are_parsed);
	RUN(ipv6_extension_headers);
	RUN(precedence_most_specific_wins);
	RUN(exact_burst_of_identical_packets);
	RUN(refill_after_idle);
	RUN(source_counters_saturate);
	RUN(coarse_rule_reads_the_coarse_clock);
	RUN(coarse_clock_only_where_a_tick_is_one_packet);
	RUN(sources_have_their_own_buckets);
	RUN(deleted_rule_idle_source_starts_spent);
	RUN(policy_change_reaches_known_sources);
	RUN(initial_policy_limits_nothing);
	RUN(families_are_separate);
	RUN(raised_limit_takes_effect_now);
	RUN(lowered_burst_clamps_tokens);
	RUN(allow_deny_need_no_bucket);
	RUN(no_bucket_fails_closed);
	RUN(edits_keep_other_rules_counters);
	fixture_close(&fx);
	return check_summary();
}
