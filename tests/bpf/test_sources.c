// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The source table under floods of never-seen sources, through
 * BPF_PROG_TEST_RUN with a tiny table: the new-source budget admits
 * exactly its burst, sources already known keep their buckets and counts,
 * an established client keeps its slot through any flood (idle, in debt,
 * or beside a budgeted flood), the flood churns only probation slots, an
 * established slot is reused only after the table's idle time, and the
 * budget bounds what a flood holds, and the occupancy the datapath counts
 * is what a walk of the table finds. Tests that need time between packets
 * sleep for at least it (never at most), so a slow machine passes too. */
#include <time.h>
#include <unistd.h>
#include "fixture.h"
#include "../lib/harness.h"
#include "sluice/srctab.h"

#define TINY_TABLE	SLUICE_MAX_SOURCES_MIN	/* 1024 entries */

static struct fixture fx;

static int setup(__u32 max_sources, const char *policy)
{
	fixture_close(&fx);
	if (fixture_open(&fx, max_sources))
		return -1;
	return fixture_policy(&fx, policy);
}

/* The n-th source of a flood: distinct for n < 2^17, all in 198.18.0.0/15
 * but outside 198.18.0.0/24, where the clients are. */
static void flood_source(unsigned int n, char *buf, size_t len)
{
	n += 256;
	snprintf(buf, len, "198.%u.%u.%u", 18 + (n >> 16 & 1), n >> 8 & 0xff, n & 0xff);
}

static __u64 events_now(__u32 ev)
{
	__u64 *v = calloc((size_t)fx.m.ncpus, sizeof(*v)), sum = 0;

	if (v && !bpf_map_lookup_elem(fx.m.events, &ev, v))
		for (int c = 0; c < fx.m.ncpus; c++)
			sum += v[c];
	free(v);
	return sum;
}

/* A count the datapath keeps (enum sluice_src_stat): its per-CPU deltas
 * summed. */
static __s64 src_stat_now(__u32 stat)
{
	__u64 *v = calloc((size_t)fx.m.ncpus, sizeof(*v));
	__s64 sum = 0;

	if (v && !bpf_map_lookup_elem(fx.m.src_stats, &stat, v))
		for (int c = 0; c < fx.m.ncpus; c++)
			sum += (__s64)v[c];
	free(v);
	return sum;
}

/* The table's idle time for established sources (attach
 * --established-idle), written as attach writes it. */
static int set_idle_ns(__u64 ns)
{
	struct sluice_config cfg;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fx.m.config, &zero, &cfg))
		return -errno;
	cfg.src_idle_ns = ns;
	return bpf_map_update_elem(fx.m.config, &zero, &cfg, BPF_ANY) ? -errno : 0;
}

static void sleep_ms(unsigned int ms)
{
	usleep(ms * 1000U);	/* at least ms: all the tests below rely on */
}

/* The budget admits exactly its burst of new sources; the rest are dropped
 * as new_source_limited and take no entry. */
static void budget_admits_its_burst(void)
{
	struct sluice_counter c[SLUICE_R_MAX];
	struct frame f;
	char src[32];

	CHECK(setup(TINY_TABLE, "limit default --rate 1/h --burst 5") == 0, "setup");
	CHECK(new_sources_write(&fx.m, 1, SLUICE_PERIOD_HOUR, 100) == 0, "budget");
	for (unsigned int n = 0; n < 1000; n++) {
		flood_source(n, src, sizeof(src));
		frame_udp_from(&f, src);
		run_frame(&fx, &f, 1, NULL);
	}
	counters_now(&fx, c);
	CHECK(c[SLUICE_R_WITHIN_LIMIT].packets == 100 &&
	      c[SLUICE_R_NEW_SOURCE_LIMITED].packets == 900,
	      "within %llu, new_source_limited %llu; want 100 and 900",
	      (unsigned long long)c[SLUICE_R_WITHIN_LIMIT].packets,
	      (unsigned long long)c[SLUICE_R_NEW_SOURCE_LIMITED].packets);
	CHECK(events_now(SLUICE_EV_NEW_SOURCE_ADMITTED) == 100, "%llu new entries counted",
	      (unsigned long long)events_now(SLUICE_EV_NEW_SOURCE_ADMITTED));
	CHECK(count_sources(&fx.m) == 100, "%ld entries in the table, want 100",
	      count_sources(&fx.m));
	/* the admitted ones are known now: judged by their own buckets */
	flood_source(0, src, sizeof(src));
	frame_udp_from(&f, src);
	CHECK(run_frame(&fx, &f, 4, NULL) == XDP_PASS, "a known source");
	CHECK(run_frame(&fx, &f, 1, NULL) == XDP_DROP, "a known source's own limit");
}

/* Allow and deny take no entry, so the budget does not touch them. */
static void budget_spares_allow_and_deny(void)
{
	struct frame f;

	CHECK(setup(TINY_TABLE, "limit default --rate 1/h --burst 5;allow 198.18.0.0/24") == 0,
	      "setup");
	CHECK(new_sources_write(&fx.m, 1, SLUICE_PERIOD_HOUR, 1) == 0, "budget");
	frame_udp_from(&f, "198.19.0.1");
	CHECK(run_frame(&fx, &f, 1, NULL) == XDP_PASS, "the budget's one");
	frame_udp_from(&f, "198.19.0.2");
	CHECK(run_frame(&fx, &f, 1, NULL) == XDP_DROP, "over the budget");
	frame_udp_from(&f, "198.18.0.9");
	CHECK(run_frame(&fx, &f, 10, NULL) == XDP_PASS, "allowed, budget or not");
}

/* The reason of one run of frame f, and its action in *act. */
static int reason_of(const struct frame *f, int *act)
{
	struct sluice_counter before[SLUICE_R_MAX], after[SLUICE_R_MAX];

	counters_now(&fx, before);
	*act = run_frame(&fx, f, 1, NULL);
	counters_now(&fx, after);
	for (int r = 0; r < SLUICE_R_MAX; r++)
		if (after[r].packets != before[r].packets)
			return r;
	return -1;
}

/* A source that spent its home bucket, then an L4 rule over it that its
 * packets do not match: they go to a keyed bucket of the same rule, which
 * starts from the home bucket's state (no fresh burst), and the source is
 * not new (the spent new-source budget does not drop it). */
static int l4_rule_case(const char *policy, const char *with_l4)
{
	struct frame f;
	int act, r;

	CHECK_OR(-1, setup(TINY_TABLE, policy) == 0, "setup %s", policy);
	frame_udp_from(&f, "198.18.0.20");
	CHECK_OR(-1, send_n_frames(&fx, &f, 4) == 3, "%s: the burst of 3", policy);
	CHECK_OR(-1, new_sources_write(&fx.m, 1, SLUICE_PERIOD_HOUR, 1) == 0, "budget");
	frame_udp_from(&f, "198.19.0.1");
	CHECK_OR(-1, run_frame(&fx, &f, 1, NULL) == XDP_PASS, "the budget's one");
	CHECK_OR(-1, fixture_policy(&fx, with_l4) == 0, "%s", with_l4);
	/* the commit carries no budget: the spent one again (its TAT stays) */
	CHECK_OR(-1, new_sources_write(&fx.m, 1, SLUICE_PERIOD_HOUR, 1) == 0, "budget again");
	frame_udp_from(&f, "198.19.0.2");
	CHECK_OR(-1, run_frame(&fx, &f, 1, NULL) == XDP_DROP, "the budget is spent");
	frame_udp_from(&f, "198.18.0.20");
	r = reason_of(&f, &act);
	CHECK_OR(-1, r == SLUICE_R_RATE_LIMITED && act == XDP_DROP,
		 "%s: the spent source's packet counted as %d (action %d), want rate_limited",
		 with_l4, r, act);
	CHECK_OR(-1, new_sources_write(&fx.m, 0, SLUICE_PERIOD_SEC, 0) == 0, "budget off");
	CHECK_OR(-1, send_n_frames(&fx, &f, 3) == 0, "%s: a fresh burst for a spent source", with_l4);
	/* its home entry, left behind, its keyed one, and the budget's one */
	CHECK_OR(-1, count_sources(&fx.m) == 3, "%ld entries in the table, want 3",
		 count_sources(&fx.m));
	return 0;
}

static void l4_rule_keeps_home_state(void)
{
	if (l4_rule_case("limit default --rate 1/h --burst 3",
			 "limit default --rate 1/h --burst 3;"
			 "deny 0.0.0.0/0 --proto udp --dport 19"))
		return;
	l4_rule_case("limit default --rate 1/h --burst 1;"
		     "limit set 198.18.0.20/32 --rate 1/h --burst 3",
		     "limit default --rate 1/h --burst 1;"
		     "limit set 198.18.0.20/32 --rate 1/h --burst 3;"
		     "deny 198.18.0.20/32 --proto udp --dport 19");
}

/* Clients that were seen before the flood send one packet between every
 * `gap` flood packets of never-seen sources; returns how many of them
 * kept their bucket with every packet counted. */
static int clients_through_flood(unsigned int flood, unsigned int gap, unsigned int primed)
{
	struct sluice_bucket b;
	struct frame f;
	char src[32];
	unsigned int sent[8] = { 0 };
	int kept = 0;

	for (unsigned int n = 0; n < flood; n++) {
		if (n % gap == 0) {
			unsigned int k = n / gap % 8;

			snprintf(src, sizeof(src), "198.18.0.%u", k + 1);
			frame_udp_from(&f, src);
			run_frame(&fx, &f, 1, NULL);
			sent[k]++;
		}
		flood_source(n, src, sizeof(src));
		frame_udp_from(&f, src);
		run_frame(&fx, &f, 1, NULL);
	}
	for (unsigned int k = 0; k < 8; k++) {
		snprintf(src, sizeof(src), "198.18.0.%u", k + 1);
		if (!bucket_of(&fx, src, &b) && b.passed + b.dropped == sent[k] + primed)
			kept++;
	}
	return kept;
}

static void prime_clients(void)
{
	struct frame f;
	char src[32];

	for (unsigned int k = 0; k < 8; k++) {
		snprintf(src, sizeof(src), "198.18.0.%u", k + 1);
		frame_udp_from(&f, src);
		run_frame(&fx, &f, 1, NULL);
	}
}

/* Clients that came back once (established: two packets 150 ms apart
 * under their 10/s rule), then over their rate: a flood of never-seen
 * sources 20 x the table, each over its rate too, leaves every client its
 * slot with every packet counted. The flood takes the rest of the table
 * and churns it: each new flood source takes the slot of an earlier one
 * (probation, least debt first), so none is refused, and every packet
 * that is refused is counted as no_bucket, never admitted unjudged. */
#define CLIENT_RULE	"limit set 198.18.0.0/24 --rate 10 --burst 1"

static void clients_in_debt_keep_slots(void)
{
	struct sluice_counter c[SLUICE_R_MAX];
	__u64 refused0, refused, nb0, reclaimed0, reclaimed;
	long held;
	int kept;

	CHECK(setup(TINY_TABLE, "limit default --rate 1/m --burst 1;" CLIENT_RULE) == 0, "setup");
	prime_clients();
	sleep_ms(150);
	prime_clients();
	CHECK(src_stat_now(SLUICE_SRC_STAT_ESTABLISHED) == 8, "%lld established, want 8",
	      (long long)src_stat_now(SLUICE_SRC_STAT_ESTABLISHED));
	refused0 = events_now(SLUICE_EV_SOURCE_REFUSED);
	reclaimed0 = events_now(SLUICE_EV_SOURCE_RECLAIMED);
	CHECK(read_counters(&fx.m, c) == 0, "counters");
	nb0 = c[SLUICE_R_NO_BUCKET].packets;
	kept = clients_through_flood(20 * TINY_TABLE, TINY_TABLE / 4, 2);
	CHECK(kept == 8, "%d of 8 clients kept their slots", kept);
	held = table_sources(&fx.m);
	refused = events_now(SLUICE_EV_SOURCE_REFUSED) - refused0;
	reclaimed = events_now(SLUICE_EV_SOURCE_RECLAIMED) - reclaimed0;
	CHECK(read_counters(&fx.m, c) == 0, "counters");
	printf("  without a budget: %ld slots held of %u, %llu flood sources took another's "
	       "slot, %llu refused\n", held, srctab_buckets(TINY_TABLE) * SLUICE_SLOTS_PER_BUCKET,
	       (unsigned long long)reclaimed, (unsigned long long)refused);
	CHECK(held == (long)(srctab_buckets(TINY_TABLE) * SLUICE_SLOTS_PER_BUCKET), "%ld slots held",
	      held);
	CHECK(reclaimed + refused >= 20 * TINY_TABLE - (__u64)held &&
	      c[SLUICE_R_NO_BUCKET].packets - nb0 == refused,
	      "%llu reclaimed, %llu refused, %llu no_bucket drops, for a flood of %u into %ld slots",
	      (unsigned long long)reclaimed, (unsigned long long)refused,
	      (unsigned long long)(c[SLUICE_R_NO_BUCKET].packets - nb0), 20 * TINY_TABLE, held);
	CHECK(events_now(SLUICE_EV_ESTABLISHED_RECLAIMED) == 0, "an established slot was reclaimed");
}

/* With the budget, the flood holds what the budget admits (its burst, at
 * one an hour), and the clients keep their slots. */
static void budget_bounds_the_flood(void)
{
	long held;
	int kept;

	CHECK(setup(TINY_TABLE, "limit default --rate 1/m --burst 1") == 0, "setup");
	prime_clients();
	CHECK(new_sources_write(&fx.m, 1, SLUICE_PERIOD_HOUR, TINY_TABLE / 8) == 0, "budget");
	kept = clients_through_flood(20 * TINY_TABLE, TINY_TABLE / 4, 1);
	held = table_sources(&fx.m);
	printf("  with a budget of %u: %ld slots held\n", TINY_TABLE / 8, held);
	CHECK(kept == 8, "%d of 8 clients kept their slots", kept);
	CHECK(held == 8 + TINY_TABLE / 8, "%ld slots held, want 8 clients + %u", held,
	      TINY_TABLE / 8);
}

/* 50 clients with a history, each 6 packets 1.2 s apart under `limit
 * default --rate 1 --burst 1` (all within it; established at the second),
 * idle for 1.5 s (so idle: their buckets full again), then 40,000 fresh
 * sources, one packet each, into a table of 1,024 sources (1,600 slots),
 * each in debt for a second after it: the flood churns the slots of
 * probation sources only, and the clients' next packets pass. A table
 * whose reclaim takes any idle slot gives the flood the clients' slots,
 * and refuses the clients (no_bucket) while the flood holds every slot
 * in debt. */
#define IDLE_CLIENTS	50
#define IDLE_FLOOD	40000U

static void client_source(unsigned int k, char *buf, size_t len)
{
	snprintf(buf, len, "198.18.0.%u", k + 1);
}

/* n rounds of one packet from each of the clients, gap_ms apart; returns
 * the packets that passed. */
static unsigned int client_rounds(unsigned int n, unsigned int gap_ms)
{
	unsigned int passed = 0;
	struct frame f;
	char src[32];

	for (unsigned int r = 0; r < n; r++) {
		if (r)
			sleep_ms(gap_ms);
		for (unsigned int k = 0; k < IDLE_CLIENTS; k++) {
			client_source(k, src, sizeof(src));
			frame_udp_from(&f, src);
			passed += run_frame(&fx, &f, 1, NULL) == XDP_PASS;
		}
	}
	return passed;
}

static void flood_of_from(unsigned int first, unsigned int n)
{
	struct frame f;
	char src[32];

	for (unsigned int i = first; i < first + n; i++) {
		flood_source(i, src, sizeof(src));
		frame_udp_from(&f, src);
		run_frame(&fx, &f, 1, NULL);
	}
}

/* n fresh IPv6 sources from the first-th on, in 2001:2::/48: distinct
 * for any number a test sends. */
static void flood6_of_from(unsigned int first, unsigned int n)
{
	struct frame f;
	char src[64];

	for (unsigned int i = first; i < first + n; i++) {
		snprintf(src, sizeof(src), "2001:2:0:%x::%x", i >> 16, i & 0xffff);
		frame_udp_from(&f, src);
		run_frame(&fx, &f, 1, NULL);
	}
}

static void flood_of(unsigned int n)
{
	flood_of_from(0, n);
}

static void idle_clients_after_flood(void)
{
	struct sluice_counter c[SLUICE_R_MAX];
	unsigned int passed;

	CHECK(setup(TINY_TABLE, "limit default --rate 1 --burst 1") == 0, "setup");
	passed = client_rounds(6, 1200);
	CHECK(passed == 6 * IDLE_CLIENTS, "%u of %u history packets passed", passed,
	      6 * IDLE_CLIENTS);
	sleep_ms(1500);
	flood_of(IDLE_FLOOD);
	passed = client_rounds(1, 0);
	counters_now(&fx, c);
	printf("  %u of %d idle clients passed after the flood; %llu reclaims (%llu established),"
	       " %llu refused, %lld slots live\n", passed, IDLE_CLIENTS,
	       (unsigned long long)events_now(SLUICE_EV_SOURCE_RECLAIMED),
	       (unsigned long long)events_now(SLUICE_EV_ESTABLISHED_RECLAIMED),
	       (unsigned long long)events_now(SLUICE_EV_SOURCE_REFUSED),
	       (long long)src_stat_now(SLUICE_SRC_STAT_LIVE));
	CHECK(passed >= 48, "%u of %d clients' next packets passed (no_bucket drops: %llu)",
	      passed, IDLE_CLIENTS, (unsigned long long)c[SLUICE_R_NO_BUCKET].packets);
	CHECK(src_stat_now(SLUICE_SRC_STAT_ESTABLISHED) == IDLE_CLIENTS,
	      "%lld established, want %d", (long long)src_stat_now(SLUICE_SRC_STAT_ESTABLISHED),
	      IDLE_CLIENTS);
	CHECK(events_now(SLUICE_EV_ESTABLISHED_RECLAIMED) == 0,
	      "%llu established slots reclaimed by fresh sources",
	      (unsigned long long)events_now(SLUICE_EV_ESTABLISHED_RECLAIMED));
	CHECK(events_now(SLUICE_EV_SOURCE_RECLAIMED) > 0, "the flood churned no probation slot");
	CHECK(src_stat_now(SLUICE_SRC_STAT_LIVE) ==
	      (__s64)(srctab_buckets(TINY_TABLE) * SLUICE_SLOTS_PER_BUCKET),
	      "%lld slots live, want the whole table", (long long)src_stat_now(SLUICE_SRC_STAT_LIVE));
}

/* The same clients, now idle for longer than the table's idle time (1 s
 * here): the flood takes their slots (before any probation slot in debt),
 * each counted once as an established slot reclaimed. */
static void established_idle_past_time_reclaimed(void)
{
	__u64 est_reclaimed;

	CHECK(setup(TINY_TABLE, "limit default --rate 1 --burst 1") == 0, "setup");
	CHECK(set_idle_ns(SLUICE_EST_IDLE_NS_MIN) == 0, "idle time");
	CHECK(client_rounds(2, 1200) == 2 * IDLE_CLIENTS, "history");
	CHECK(src_stat_now(SLUICE_SRC_STAT_ESTABLISHED) == IDLE_CLIENTS, "%lld established",
	      (long long)src_stat_now(SLUICE_SRC_STAT_ESTABLISHED));
	sleep_ms(2500);		/* their last TAT, 1 s after their last packet, + 1 s */
	flood_of(IDLE_FLOOD / 2);
	est_reclaimed = events_now(SLUICE_EV_ESTABLISHED_RECLAIMED);
	printf("  %llu of %d established slots idle past the idle time reclaimed\n",
	       (unsigned long long)est_reclaimed, IDLE_CLIENTS);
	CHECK(est_reclaimed == IDLE_CLIENTS, "%llu established slots reclaimed, want %d",
	      (unsigned long long)est_reclaimed, IDLE_CLIENTS);
	CHECK(src_stat_now(SLUICE_SRC_STAT_ESTABLISHED) == 0, "%lld still counted established",
	      (long long)src_stat_now(SLUICE_SRC_STAT_ESTABLISHED));
}

/* Clients at 10 packets a second under a 100/s rule, established in a
 * first second, beside a flood of fresh sources at full speed through
 * `limit new-sources --rate 1000 --burst 100`, into a table of 1,024
 * sources (1,600 slots) that the flood fills in under two seconds: the
 * clients are known, so the budget never charges them, and their slots,
 * idle 90 % of the time, are never the flood's: all of their packets
 * pass. A table that reclaims idle slots for the flood makes each client
 * win a budget token (the flood spends them) to come back. */
#define BUDGET_ROUNDS	40	/* rounds of 100 ms: 4 s of flood */
#define BUDGET_FLOOD	64U	/* fresh sources between two looks at the clock */

static void clients_beside_budgeted_flood(void)
{
	unsigned int passed = 0, sent = 0, n = 0;
	struct timespec t0, t;
	long ms;

	CHECK(setup(TINY_TABLE, "limit default --rate 100 --burst 100") == 0, "setup");
	CHECK(new_sources_write(&fx.m, 1000, SLUICE_PERIOD_SEC, 100) == 0, "budget");
	CHECK(client_rounds(10, 100) == 10 * IDLE_CLIENTS, "a first second");
	for (unsigned int r = 0; r < BUDGET_ROUNDS; r++) {
		/* 100 ms (at least) of fresh sources as fast as they go (far
		 * over the budget: it is spent all the time), then one packet
		 * of each client */
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			flood6_of_from(n, BUDGET_FLOOD);
			n += BUDGET_FLOOD;
			clock_gettime(CLOCK_MONOTONIC, &t);
			ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		} while (ms < 100);
		passed += client_rounds(1, 0);
		sent += IDLE_CLIENTS;
	}
	printf("  clients passed %u of %u packets beside a flood of %u fresh sources "
	       "(%lld slots live, %llu reclaims)\n", passed, sent, n,
	       (long long)src_stat_now(SLUICE_SRC_STAT_LIVE),
	       (unsigned long long)events_now(SLUICE_EV_SOURCE_RECLAIMED));
	CHECK(passed * 100 >= sent * 95, "clients passed %u of %u packets (%u %%)", passed, sent,
	      passed * 100 / sent);
	CHECK(src_stat_now(SLUICE_SRC_STAT_LIVE) ==
	      (__s64)(srctab_buckets(TINY_TABLE) * SLUICE_SLOTS_PER_BUCKET),
	      "the flood did not fill the table: %lld slots live",
	      (long long)src_stat_now(SLUICE_SRC_STAT_LIVE));
}

/* Never-seen sources of a rule that leaves them idle within a microsecond
 * (so they reclaim slots all the time, each other's and any other idle
 * one), one packet each, 20 x the table: every slot that is idle is
 * reclaimed. Returns how many reclaims it made. */
#define FAST_RULE	"limit set 198.18.0.0/16 --rate 1000000 --burst 1"
#define DEBTOR		"198.19.0.20"

static __u64 reclaiming_flood(void)
{
	__u64 r0 = events_now(SLUICE_EV_SOURCE_RECLAIMED);
	struct frame f;
	char src[32];

	for (unsigned int n = 0; n < 20 * TINY_TABLE; n++) {
		flood_source(n, src, sizeof(src));
		frame_udp_from(&f, src);
		run_frame(&fx, &f, 1, NULL);
	}
	return events_now(SLUICE_EV_SOURCE_RECLAIMED) - r0;
}

/* The debtor's slot after a reclaiming flood: kept, and its next packets
 * get no fresh burst (its debt of its old rule carried to the new one). */
static int debtor_kept_debt(const char *what)
{
	struct sluice_bucket b;
	struct frame f;
	__u64 reclaims = reclaiming_flood(), a;

	CHECK_OR(-1, reclaims > 1000, "%s: %llu reclaims: the flood did not churn", what,
		 (unsigned long long)reclaims);
	frame_udp_from(&f, DEBTOR);
	a = send_n_frames(&fx, &f, 3);
	CHECK_OR(-1, a == 0, "%s: the debtor got a fresh burst after the flood: %llu of 3 passed "
		 "(slot %s)", what, (unsigned long long)a,
		 bucket_of(&fx, DEBTOR, &b) ? "gone" : "there");
	CHECK_OR(-1, !bucket_of(&fx, DEBTOR, &b), "%s: the debtor lost its slot", what);
	return 1;
}

/* A source in debt under its own rule, which is then deleted (the default,
 * as strict, applies): its slot is bound to a rule no longer in the
 * policy, and the reclaim must judge it by the rule it resolves to now,
 * in which it is still in debt. */
static void reclaim_keeps_debt_of_deleted_rule(void)
{
	struct frame f;

	CHECK(setup(TINY_TABLE, "limit default --rate 1/h --burst 3;" FAST_RULE ";"
		    "limit set " DEBTOR "/32 --rate 1/h --burst 3") == 0, "setup");
	frame_udp_from(&f, DEBTOR);
	CHECK(send_n_frames(&fx, &f, 4) == 3, "the debtor's burst of 3");
	CHECK(fixture_policy(&fx, "limit default --rate 1/h --burst 3;" FAST_RULE) == 0,
	      "delete its rule");
	debtor_kept_debt("rule deleted");
}

/* A source in debt under a lenient rule (1/s), moved to a stricter one
 * (1/h) within a second, so at the move it has no token; 3.5 s later it
 * would be idle under the lenient rule, but under the one it resolves to
 * now it is still in debt. Returns 0 when the move took a second or more
 * (run again). */
static int try_stricter_rule(void)
{
	struct frame f;
	__u64 t0, t1;

	CHECK_OR(1, setup(TINY_TABLE, "limit default --rate 1/h --burst 3;" FAST_RULE ";"
			  "limit set 198.19.0.0/24 --rate 1 --burst 3") == 0, "setup");
	frame_udp_from(&f, DEBTOR);
	CHECK_OR(1, send_n_frames(&fx, &f, 4) == 3, "the debtor's burst of 3");
	t0 = mono_now_ns();
	CHECK_OR(1, fixture_policy(&fx, "limit default --rate 1/h --burst 3;" FAST_RULE ";"
				   "limit set 198.19.0.0/24 --rate 1 --burst 3;"
				   "limit set " DEBTOR "/32 --rate 1/h --burst 3") == 0,
		 "a stricter rule for the debtor");
	t1 = mono_now_ns();
	if (t1 - t0 >= 900 * 1000000ULL) {
		printf("  the commit took %llu ms, again\n",
		       (unsigned long long)((t1 - t0) / 1000000));
		return 0;
	}
	usleep(3500 * 1000);	/* full again at 1/s: idle by its old rule */
	debtor_kept_debt("moved to a stricter rule");
	return 1;
}

static void reclaim_keeps_debt_of_stricter_rule(void)
{
	for (int i = 0; i < 4; i++)
		if (try_stricter_rule())
			return;
	CHECK(0, "the machine took a second or more for each of 4 commits");
}

/* The slots held as the datapath counts them (src_stats LIVE, its per-CPU
 * deltas summed, not clamped), and as a walk of the table finds them. */
static __s64 held_counted(void)
{
	__u64 *v = calloc((size_t)fx.m.ncpus, sizeof(*v)), sum = 0;
	__u32 stat = SLUICE_SRC_STAT_LIVE;

	if (v && !bpf_map_lookup_elem(fx.m.src_stats, &stat, v))
		for (int c = 0; c < fx.m.ncpus; c++)
			sum += v[c];
	free(v);
	return (__s64)sum;
}

static long held_walked(void)
{
	struct srctab t;
	long n;

	if (srctab_open(&fx.m, &t))
		return -1;
	n = srctab_live(&t);
	srctab_close(&t);
	return n;
}

/* status and scrapes read the occupancy the datapath keeps: it equals a
 * walk of the table after new sources took empty slots, and after a flood
 * 20 x the table that reclaimed idle slots over and over (a reclaim holds
 * no more slots than before), beside clients in debt. */
static void occupancy_counts_what_a_walk_finds(void)
{
	__u64 reclaims;

	CHECK(setup(TINY_TABLE, "limit default --rate 1/h --burst 1;" FAST_RULE) == 0, "setup");
	prime_clients();
	CHECK(held_counted() == 8 && held_walked() == 8, "after 8 clients: %lld counted, %ld walked",
	      (long long)held_counted(), held_walked());
	reclaims = reclaiming_flood();
	CHECK(reclaims > 1000, "%llu reclaims: the flood did not churn",
	      (unsigned long long)reclaims);
	CHECK(held_counted() == held_walked(),
	      "after a flood that reclaimed %llu slots: %lld counted, %ld walked",
	      (unsigned long long)reclaims, (long long)held_counted(), held_walked());
	printf("  %ld slots held, %llu reclaims: counted as walked\n", held_walked(),
	       (unsigned long long)reclaims);
}

/* A policy entry never written (both slots zeroed, as a table made anew,
 * then the policy committed into it: the commits before the carried-over
 * table) is no allow: a source banned by a --ban rule, whose rule now has
 * another index, is re-bound with its old limit not known (spent as of the
 * change), not handed a full bucket, which would end its ban. */
static void unwritten_entry_is_not_allow(void)
{
	static const char *const with_gap = "limit default --rate 1/h --burst 3;"
		"limit set 198.19.1.0/24 --rate 1/h;"
		"limit set 198.19.0.0/24 --rate 1/h --burst 2 --ban 1h";
	static const char *const alone = "limit default --rate 1/h --burst 3;"
		"limit set 198.19.0.0/24 --rate 1/h --burst 2 --ban 1h";
	struct sluice_policy zero = { 0 };
	struct frame f;
	__u64 a;

	CHECK(setup(TINY_TABLE, with_gap) == 0, "setup");
	frame_udp_from(&f, "198.19.0.30");
	CHECK(send_n_frames(&fx, &f, 3) == 2, "the burst of 2, then banned");
	for (__u32 k = 0; k < SLUICE_POLICY_SLOTS * SLUICE_MAX_POLICIES; k++)
		CHECK(bpf_map_update_elem(fx.m.policy_table, &k, &zero, BPF_ANY) == 0,
		      "zero policy entry %u", k);
	CHECK(fixture_policy(&fx, alone) == 0, "the policy committed into the empty table");
	a = send_n_frames(&fx, &f, 2);
	CHECK(a == 0, "%llu of 2 passed: the banned source got a full bucket", (unsigned long long)a);
}

/* The n-th source of a keyed flood: distinct for n < 2^16, all in
 * 198.19.0.0/16, away from the debtors of 198.18.0.0/16. */
static void keyed_flood_source(unsigned int n, char *buf, size_t len)
{
	snprintf(buf, len, "198.19.%u.%u", n >> 8 & 0xff, n & 0xff);
}

#define KEYED_FLOOD	40000U	/* never-seen sources, 39 x the table */
#define KEYED_DEBTORS	20U
#define FLOOD_RULE	"limit set 198.19.0.0/16 --proto udp --rate 1/h --burst 1"

/* The i-th debtor of a keyed-debt case, as the source of its `nth`
 * packet: one /24 per debtor, so --per /24 gives each its own bucket; a
 * /24's packets come from one address after another when `roam`. */
static void keyed_debtor(unsigned int i, unsigned int nth, int roam, char *buf, size_t len)
{
	snprintf(buf, len, "198.18.%u.%u", i, 7 + (roam ? nth : 0));
}

/*
 * Debtors of a keyed rule (policy: the rule, then FLOOD_RULE) spend
 * `spend` packets each (all within the rule's burst), then KEYED_FLOOD
 * never-seen sources, one packet each under FLOOD_RULE (another keyed
 * rule), then each debtor sends 3 more (from other addresses of its /24
 * when roam): none of them may pass. The flood
 * takes what is left of the table and is refused the rest (no_bucket); no
 * debt is forgotten to make room.
 */
static int keyed_debts_case(const char *what, const char *policy, unsigned int spend, int roam)
{
	__u64 refused0, passed = 0, keyed;
	struct frame f;
	char src[32];

	CHECK_OR(-1, setup(TINY_TABLE, policy) == 0, "%s: setup", what);
	for (unsigned int i = 0; i < KEYED_DEBTORS; i++)
		for (unsigned int k = 0; k < spend; k++) {
			keyed_debtor(i, k, roam, src, sizeof(src));
			frame_udp_from(&f, src);
			CHECK_OR(-1, run_frame(&fx, &f, 1, NULL) == XDP_PASS,
				 "%s: debtor %u's packet %u within the burst", what, i, k);
		}
	refused0 = events_now(SLUICE_EV_SOURCE_REFUSED);
	for (unsigned int n = 0; n < KEYED_FLOOD; n++) {
		keyed_flood_source(n, src, sizeof(src));
		frame_udp_from(&f, src);
		run_frame(&fx, &f, 1, NULL);
	}
	for (unsigned int i = 0; i < KEYED_DEBTORS; i++)
		for (unsigned int k = 0; k < 3; k++) {
			keyed_debtor(i, spend + k, roam, src, sizeof(src));
			frame_udp_from(&f, src);
			passed += run_frame(&fx, &f, 1, NULL) == XDP_PASS;
		}
	CHECK_OR(-1, passed == 0, "%s: %llu of %u debtors' packets passed after a flood of %u "
		 "keyed sources, want 0", what, (unsigned long long)passed, 3 * KEYED_DEBTORS,
		 KEYED_FLOOD);
	keyed = (__u64)src_stat_now(SLUICE_SRC_STAT_KEYED);
	printf("  %s: %llu keyed slots held, %llu flood sources refused\n", what,
	       (unsigned long long)keyed,
	       (unsigned long long)(events_now(SLUICE_EV_SOURCE_REFUSED) - refused0));
	CHECK_OR(-1, (long)keyed == table_sources(&fx.m), "%s: %llu keyed slots counted, %ld held",
		 what, (unsigned long long)keyed, table_sources(&fx.m));
	return 0;
}

/* Keyed buckets keep their debts through a flood of never-seen sources
 * under another keyed rule: per source under an L4 rule, per /24, per
 * rule. */
static void keyed_debts_l4_rule(void)
{
	keyed_debts_case("--proto udp", "limit default --rate 1/h --burst 3;"
			 "limit set 198.18.0.0/16 --proto udp --rate 1/h --burst 3;" FLOOD_RULE, 3, 0);
}

static void keyed_debts_per_prefix(void)
{
	keyed_debts_case("--per /24", "limit default --rate 1/h --burst 3;"
			 "limit set 198.18.0.0/16 --rate 1/h --burst 3 --per /24;" FLOOD_RULE, 3, 1);
}

static void keyed_debts_per_rule(void)
{
	keyed_debts_case("--per rule", "limit default --rate 1/h --burst 3;"
			 "limit set 198.18.0.0/16 --rate 1/h --burst 20 --per rule;" FLOOD_RULE, 1, 1);
}

/* Keeps each bucket walk_buckets meets (up to 8). */
struct seen {
	struct sluice_src_key k[8];
	struct sluice_bucket b[8];
	int n;
};

static int keep_bucket(const struct sluice_src_key *k, const struct sluice_bucket *b, void *ctx)
{
	struct seen *s = ctx;

	if (s->n < 8) {
		s->k[s->n] = *k;
		s->b[s->n] = *b;
	}
	s->n++;
	return 0;
}

/* Whether key k is keyed, key_len long, and holds the address of text. */
static int key_is(const struct sluice_src_key *k, const char *text, __u8 key_len)
{
	struct sluice_src_key want;

	return !parse_source(text, &want) && k->family == want.family &&
	       k->key_len == key_len && k->policy != SLUICE_KEY_HOME &&
	       !memcmp(k->a, want.a, sizeof(k->a));
}

/* Keyed slots read back as the keys they hold, for each way a key's length
 * is kept (a sentinel bit within the address, in the first and the second
 * word; none for a whole address): an IPv6 /56, an IPv4 /24 and a whole
 * IPv4 address under an L4 rule. Each key a walk gives finds its slot
 * again, with its source's packet counted. */
static void keyed_slots_read_back(void)
{
	static const struct { const char *src, *key; __u8 len; } want[] = {
		{ "2001:2:0:12ff::1", "2001:2:0:1200::", 56 },
		{ "198.19.3.4", "198.19.3.0", 96 + 24 },
		{ "198.18.0.9", "198.18.0.9", 128 },
	};
	struct sluice_bucket b;
	struct seen seen = { .n = 0 };
	struct frame f;
	int found;

	CHECK(setup(TINY_TABLE, "limit default --rate 1/h --burst 5;"
		    "limit set 2001:2::/48 --rate 1/h --burst 5 --per /56;"
		    "limit set 198.19.0.0/16 --rate 1/h --burst 5 --per /24;"
		    "limit set 198.18.0.0/16 --proto udp --rate 1/h --burst 5") == 0, "setup");
	for (size_t i = 0; i < 3; i++) {
		frame_udp_from(&f, want[i].src);
		CHECK(run_frame(&fx, &f, 1, NULL) == XDP_PASS, "%s's packet", want[i].src);
	}
	CHECK(walk_buckets(&fx.m, keep_bucket, &seen) == 3 && seen.n == 3,
	      "%d buckets in the table, want 3 keyed ones", seen.n);
	CHECK(src_stat_now(SLUICE_SRC_STAT_KEYED) == 3, "%lld keyed slots counted, want 3",
	      (long long)src_stat_now(SLUICE_SRC_STAT_KEYED));
	for (size_t i = 0; i < 3; i++) {
		found = -1;
		for (int j = 0; j < seen.n && j < 8; j++)
			if (key_is(&seen.k[j], want[i].key, want[i].len))
				found = j;
		CHECK(found >= 0, "no bucket read back as %s/%u", want[i].key, want[i].len);
		if (found < 0)
			continue;
		CHECK(seen.b[found].passed == 1, "%s's bucket passed %u, want 1", want[i].src,
		      seen.b[found].passed);
		CHECK(bucket_lookup(&fx.m, &seen.k[found], &b) == 0 && b.passed == 1,
		      "the key read back as %s/%u does not find its slot", want[i].key, want[i].len);
	}
}

int main(int argc, char **argv)
{
	int err = fixture_main_open(&fx);

	if (err)
		return err;
	harness_select(argc, argv);
	RUN_SELECTED(budget_admits_its_burst);
	RUN_SELECTED(budget_spares_allow_and_deny);
	RUN_SELECTED(l4_rule_keeps_home_state);
	RUN_SELECTED(clients_in_debt_keep_slots);
	RUN_SELECTED(budget_bounds_the_flood);
	RUN_SELECTED(idle_clients_after_flood);
	RUN_SELECTED(established_idle_past_time_reclaimed);
	RUN_SELECTED(clients_beside_budgeted_flood);
	RUN_SELECTED(reclaim_keeps_debt_of_deleted_rule);
	RUN_SELECTED(reclaim_keeps_debt_of_stricter_rule);
	RUN_SELECTED(unwritten_entry_is_not_allow);
	RUN_SELECTED(keyed_debts_l4_rule);
	RUN_SELECTED(keyed_debts_per_prefix);
	RUN_SELECTED(keyed_debts_per_rule);
	RUN_SELECTED(keyed_slots_read_back);
	RUN_SELECTED(occupancy_counts_what_a_walk_finds);
	fixture_close(&fx);
	return check_summary();
}
