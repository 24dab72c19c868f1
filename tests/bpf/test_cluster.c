// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Cluster-wide limits in the XDP program through
 * BPF_PROG_TEST_RUN with crafted frames: a --cluster rule's share as the
 * commit computes it from the agent's state (cluster_recommit), the hot
 * notices of its rejected buckets (hot_pop), and the leases the agent
 * writes (lease_grant, bpf/cluster.bpf.c) and the datapath spends past the
 * share. Exact admission counts. The last case runs both CPUs at once on
 * one lease, next to a variant whose credit decrement is a plain store
 * (tests/tests.mk, LEASE_RACY_DEFS): that one must over-admit, the real
 * one never.
 */
#define _GNU_SOURCE
#include <time.h>
#include <unistd.h>
#include "../lib/on_cpus.h"
#include "fixture.h"
#include "../lib/harness.h"
#include "lease.h"
#include "sluice/gcra.h"
#include "sluice_lease_racy.skel.h"

#define MS		1000000ULL
#define SEC		SLUICE_NS_PER_SEC
#define EVERY		SLUICE_CLUSTER_NOTICE_EVERY

static struct fixture fx;
static struct lease_writer *lw;
static char lock_dir[] = "/tmp/sluice-test-cluster.XXXXXX";

static void teardown(void)
{
	lease_writer_close(lw);
	lw = NULL;
	fixture_close(&fx);
	memset(&fx, 0, sizeof(fx));
}

/* The agent's state as `sluice cluster join` writes it: mode, N, this
 * process as the agent, its last loop `age` ns ago. */
static int set_mode(__u32 mode, __u32 peers, __u64 age)
{
	struct sluice_cluster_state st;
	__u64 now = mono_now_ns();

	memset(&st, 0, sizeof(st));
	st.mode = mode;
	st.peers = peers;
	st.pid = (__u32)getpid();
	st.sync_ms = 100;
	st.started_ns = now - age;
	st.heartbeat_ns = now - age;
	snprintf(st.node, sizeof(st.node), "test-node");
	snprintf(st.url, sizeof(st.url), "redis://198.18.0.1:6379");
	return cluster_recommit(&fx.m, &st);
}

/* A fresh program of open_skel (its maps empty, no agent: mode none) under
 * policy, then the agent's state (mode, peers) when mode is not none, and
 * a lease writer on its leases map. */
static int setup_with(skel_open_fn open_skel, const char *policy, __u32 mode, __u32 peers)
{
	teardown();
	if (fixture_open_with(&fx, 0, open_skel))
		return -1;
	/* cluster_recommit() locks the pin dir; the fixture has none */
	snprintf(fx.m.dir, sizeof(fx.m.dir), "%s", lock_dir);
	if (lease_writer_open(&fx.m, &lw))
		return -1;
	if (fixture_policy(&fx, policy))
		return -1;
	return mode == SLUICE_CLUSTER_NONE ? 0 : set_mode(mode, peers, 0);
}

static int setup(const char *policy, __u32 mode, __u32 peers)
{
	return setup_with(sluice_bpf__open, policy, mode, peers);
}

static __u64 reason_delta(const struct sluice_counter *before, const struct sluice_counter *after,
			  __u32 reason)
{
	return after[reason].packets - before[reason].packets;
}

/* The policy index of the rule of CIDR; SLUICE_MAX_POLICIES if none. */
static __u32 rule_idx(const char *cidr)
{
	struct policy *p = malloc(sizeof(*p));
	__u32 idx = SLUICE_MAX_POLICIES;
	struct rule *r;
	struct cidr c;
	char why[128];

	if (p && !parse_cidr(cidr, &c, why, sizeof(why)) && !policy_read(&fx.m, p)) {
		r = policy_find(p, &c);
		if (r)
			idx = r->index;
	}
	free(p);
	return idx;
}

/* The live policy entry of index idx. */
static int live_entry(__u32 idx, struct sluice_policy *sp)
{
	struct sluice_config cfg;

	live_config(&fx.m, &cfg);
	return policy_entry(&fx.m, SLUICE_GEN_SLOT(cfg.gen_slot), idx, sp);
}

static struct sluice_src_key home_key(const char *src)
{
	struct sluice_src_key k;

	memset(&k, 0, sizeof(k));
	if (parse_source(src, &k))
		memset(&k, 0xee, sizeof(k));
	return k;
}

/* The key of a keyed bucket: net (its first address), the mask in the
 * 128-bit form, the rule's index. */
static struct sluice_src_key keyed(const char *net, __u8 key_len, __u32 idx)
{
	struct sluice_src_key k = home_key(net);

	k.key_len = key_len;
	k.policy = (__u16)idx;
	return k;
}

/* One lease write through the agent's writer; the credit it had left in
 * *old. 0 or -errno. */
static int grant(const struct sluice_src_key *k, __u32 idx, __u64 credit, __u64 expires_ns,
		 __u64 *old)
{
	struct sluice_grant g;
	int err;

	memset(&g, 0, sizeof(g));
	g.key = *k;
	g.policy = idx;
	g.credit = credit;
	g.expires_ns = expires_ns;
	err = lease_grant(lw, &g, 1);
	if (old)
		*old = g.credit;
	return err;
}

/* The lease at k as the datapath sees it: 0, or -ENOENT. */
static int lease_at(const struct sluice_src_key *k, struct sluice_lease *l)
{
	return bpf_map_lookup_elem(fx.m.leases, k, l) ? -errno : 0;
}

static __u64 credit_at(const struct sluice_src_key *k)
{
	struct sluice_lease l;

	return lease_at(k, &l) ? ~0ULL : l.credit;
}

/* Pop every hot notice into h (at most max); how many there were. */
static unsigned int hot_drain(struct sluice_hot *h, unsigned int max)
{
	struct sluice_hot spare;
	unsigned int n = 0;

	while (!hot_pop(&fx.m, n < max ? &h[n] : &spare))
		n++;
	return n;
}

static unsigned int hot_count(void)
{
	return hot_drain(NULL, 0);
}

static int same_key(const struct sluice_src_key *a, const struct sluice_src_key *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static const char *key_str(const struct sluice_src_key *k)
{
	static char buf[4][96];
	static int n;
	char *s = buf[n++ % 4];
	size_t off = 0;

	for (int i = 0; i < SLUICE_ADDR_LEN; i++)
		off += (size_t)snprintf(s + off, 96 - off, "%02x", k->a[i]);
	snprintf(s + off, 96 - off, " fam %u len %u pol %u", k->family, k->key_len, k->policy);
	return s;
}

/* How many of the drops numbered d0 .. d0 + n - 1 (from 0, the bucket's
 * dropped count before each) push a notice: the multiples of EVERY. */
static unsigned int notices_for(__u64 d0, __u64 n)
{
	unsigned int c = 0;

	for (__u64 d = d0; d < d0 + n; d++)
		c += d % EVERY == 0;
	return c;
}

static __u32 dropped_of(const struct sluice_src_key *k)
{
	struct sluice_bucket b;

	return bucket_lookup(&fx.m, k, &b) ? ~0U : b.dropped;
}

static void sleep_ns(__u64 ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / SEC), .tv_nsec = (long)(ns % SEC) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* The rules most cases use: 100 a minute (T = 0.6 s, no refill within a
 * case), burst 100; with N = 2 connected the share is 16 T with burst 6. */
#define RULE_B		100ULL
#define POLICY_ONE	"limit set 198.18.0.0/24 --rate 100/m --burst 100 --cluster"

static __u64 rule_T(void)
{
	return gcra_interval_per(100, 60);
}

/*
 * a. No agent (mode none): a --cluster rule is its plain twin (same
 * numbers, its own CIDR): the same policy entry but the CLUSTER flag, its
 * burst B then its refill packet for packet, no hot notice, and a lease
 * for its source is never spent. 10/s burst 20, sent interleaved with the
 * twin.
 */
static void cluster_none_is_plain(void)
{
	/* the coarse clock lags by a tick, more on a loaded VM (see
	 * cluster_lease_spend): allow 50 ms beyond it */
	const __u64 T_ns = 100 * MS, tick = coarse_tick_ns() + 50 * MS;
	struct sluice_counter before[SLUICE_R_MAX], after[SLUICE_R_MAX];
	struct sluice_policy plain, clu;
	struct sluice_src_key ck = home_key("198.18.1.5");
	struct frame fp, fc;
	__u64 pa = 0, ca = 0, pb = 0, cb = 0, s0, s1, u0, u1, lo, hi, old = 1;
	__u32 ip, ic;

	CHECK(setup("limit set 198.18.0.0/24 --rate 10 --burst 20;"
		    "limit set 198.18.1.0/24 --rate 10 --burst 20 --cluster",
		    SLUICE_CLUSTER_NONE, 0) == 0, "setup");
	ip = rule_idx("198.18.0.0/24");
	ic = rule_idx("198.18.1.0/24");
	CHECK(ip < SLUICE_MAX_POLICIES && ic < SLUICE_MAX_POLICIES, "rule indexes");
	CHECK(live_entry(ip, &plain) == 0 && live_entry(ic, &clu) == 0, "policy entries");
	printf("  plain: interval %llu tolerance %llu flags %#x; cluster: %llu %llu %#x\n",
	       (unsigned long long)plain.interval, (unsigned long long)plain.tolerance,
	       plain.flags, (unsigned long long)clu.interval, (unsigned long long)clu.tolerance,
	       clu.flags);
	CHECK(clu.interval == plain.interval && clu.tolerance == plain.tolerance &&
	      clu.interval == gcra_interval(10) && clu.tolerance == 20 * gcra_interval(10),
	      "a cluster rule with no agent: interval %llu tolerance %llu, its plain twin's "
	      "%llu %llu", (unsigned long long)clu.interval, (unsigned long long)clu.tolerance,
	      (unsigned long long)plain.interval, (unsigned long long)plain.tolerance);
	CHECK((clu.flags & (SLUICE_POLICY_CLUSTER | SLUICE_POLICY_LEASED)) == SLUICE_POLICY_CLUSTER &&
	      !(plain.flags & (SLUICE_POLICY_CLUSTER | SLUICE_POLICY_LEASED)),
	      "flags: cluster %#x, plain %#x", clu.flags, plain.flags);
	/* a lease the datapath must ignore: the rule is not leased */
	CHECK(grant(&ck, ic, 1000, mono_now_ns() + 10 * SEC, &old) == 0 && old == 0,
	      "grant: %llu", (unsigned long long)old);

	frame_udp_from(&fp, "198.18.0.5");
	frame_udp_from(&fc, "198.18.1.5");
	counters_now(&fx, before);
	s0 = mono_now_ns();
	for (int i = 0; i < 30; i++) {
		pa += send_n_frames(&fx, &fp, 1);
		ca += send_n_frames(&fx, &fc, 1);
	}
	s1 = mono_now_ns();
	printf("  30 each at once: plain %llu passed, cluster %llu\n", (unsigned long long)pa,
	       (unsigned long long)ca);
	CHECK(pa == 20 && ca == 20, "burst 20: plain %llu, cluster %llu passed",
	      (unsigned long long)pa, (unsigned long long)ca);
	CHECK(hot_count() == 0, "a rule without an agent pushed hot notices");
	sleep_ns(350 * MS);
	u0 = mono_now_ns();
	for (int i = 0; i < 10; i++) {
		pb += send_n_frames(&fx, &fp, 1);
		cb += send_n_frames(&fx, &fc, 1);
	}
	u1 = mono_now_ns();
	counters_now(&fx, after);
	/* the burst's first admission at a in [s0, s1], the refill's at u in
	 * [u0, u1], both on a clock up to a tick coarse: floor((u - a) / T) */
	lo = (u0 - s1 - tick) / T_ns;
	hi = (u1 - s0 + tick) / T_ns;
	printf("  after %llu ms: plain %llu passed, cluster %llu (refill bounds %llu..%llu)\n",
	       (unsigned long long)((u0 - s1) / MS), (unsigned long long)pb,
	       (unsigned long long)cb, (unsigned long long)lo, (unsigned long long)hi);
	CHECK(cb == pb && cb >= lo && cb <= hi,
	      "refill: plain %llu, cluster %llu, want the same in %llu..%llu",
	      (unsigned long long)pb, (unsigned long long)cb, (unsigned long long)lo,
	      (unsigned long long)hi);
	CHECK(reason_delta(before, after, SLUICE_R_WITHIN_LIMIT) == 2 * (20 + cb) &&
	      reason_delta(before, after, SLUICE_R_RATE_LIMITED) == 2 * (40 - 20 - cb),
	      "reasons: within %llu, rate limited %llu",
	      (unsigned long long)reason_delta(before, after, SLUICE_R_WITHIN_LIMIT),
	      (unsigned long long)reason_delta(before, after, SLUICE_R_RATE_LIMITED));
	CHECK(credit_at(&ck) == 1000, "the lease was spent: %llu left of 1000",
	      (unsigned long long)credit_at(&ck));
	CHECK(hot_count() == 0, "a rule without an agent pushed hot notices");
}

/* Check the live entry of idx: interval T*div, tolerance of the share's
 * burst max(1, B/div), flags. */
static void check_share(__u32 idx, __u64 div, __u32 flags, const char *what)
{
	__u64 burst = RULE_B / div ? RULE_B / div : 1, interval = rule_T() * div;
	struct sluice_policy sp;

	CHECK(live_entry(idx, &sp) == 0, "%s: policy entry", what);
	printf("  %s: interval %llu (T %llu x %llu), tolerance %llu (%llu x interval), "
	       "flags %#x\n", what, (unsigned long long)sp.interval, (unsigned long long)rule_T(),
	       (unsigned long long)(sp.interval / rule_T()), (unsigned long long)sp.tolerance,
	       (unsigned long long)(sp.tolerance / (sp.interval ? sp.interval : 1)), sp.flags);
	CHECK(sp.interval == interval && sp.tolerance == burst * interval,
	      "%s: interval %llu tolerance %llu, want %llu and %llu (burst %llu)", what,
	      (unsigned long long)sp.interval, (unsigned long long)sp.tolerance,
	      (unsigned long long)interval, (unsigned long long)(burst * interval),
	      (unsigned long long)burst);
	CHECK((sp.flags & (SLUICE_POLICY_CLUSTER | SLUICE_POLICY_LEASED)) == flags,
	      "%s: flags %#x, want %#x", what, sp.flags, flags);
	CHECK(sp.rate == 100 && sp.burst == RULE_B, "%s: the rule as written changed: %llu %llu",
	      what, (unsigned long long)sp.rate, (unsigned long long)sp.burst);
}

/* Send one packet at a time, n drops expected, popping notices after each:
 * which drops (numbered from 1) pushed one, as a bit mask of the first 64
 * plus a count. Every notice must carry key k and index idx. */
static int drops_notify(const struct frame *f, unsigned int n, const struct sluice_src_key *k,
			__u32 idx, unsigned int *which, unsigned int nwhich)
{
	unsigned int got = 0;
	struct sluice_hot h[4];

	for (unsigned int i = 1; i <= n; i++) {
		unsigned int c;

		CHECK_OR(-1, send_n_frames(&fx, f, 1) == 0, "packet %u past the share passed", i);
		c = hot_drain(h, 4);
		CHECK_OR(-1, c <= 1, "drop %u pushed %u notices", i, c);
		if (!c)
			continue;
		CHECK_OR(-1, same_key(&h[0].key, k) && h[0].policy == idx,
			 "notice at drop %u: key %s policy %u, want %s policy %u", i,
			 key_str(&h[0].key), h[0].policy, key_str(k), idx);
		if (got < nwhich)
			which[got] = i;
		got++;
	}
	return (int)got;
}

/*
 * b. The agent up (N = 2): cluster_recommit gives the rule the share
 * interval 16 T, burst max(1, 100/16) = 6, flags CLUSTER|LEASED; a source
 * gets exactly 6, and its 1st, 65th and 129th drops push one notice each
 * (the home key, the rule's index), no other drop does. N = 20: burst
 * max(1, 0) = 1. A state saying N = 1,000,000 is held to
 * SLUICE_CLUSTER_HOSTS_MAX, up and in fallback.
 */
static void cluster_up_share_and_notices(void)
{
	struct sluice_src_key k = home_key("198.18.0.5"), k2 = home_key("198.18.0.6");
	unsigned int which[8];
	struct frame f;
	__u32 idx;
	int n;

	CHECK(setup(POLICY_ONE, SLUICE_CLUSTER_NONE, 0) == 0, "setup");
	idx = rule_idx("198.18.0.0/24");
	CHECK(idx < SLUICE_MAX_POLICIES, "rule index");
	check_share(idx, 1, SLUICE_POLICY_CLUSTER, "no agent");
	CHECK(set_mode(SLUICE_CLUSTER_UP, 2, 0) == 0, "recommit up");
	check_share(idx, 2 * SLUICE_CLUSTER_LOCAL_DIV, SLUICE_POLICY_CLUSTER | SLUICE_POLICY_LEASED,
		    "up, N=2");
	if (check_failures)
		return;
	frame_udp_from(&f, "198.18.0.5");
	CHECK(send_n_frames(&fx, &f, 6) == 6, "the share's burst of 6");
	CHECK(hot_count() == 0, "notices before any drop");
	n = drops_notify(&f, 130, &k, idx, which, 8);
	if (n < 0)
		return;
	printf("  130 drops: %d notices, at drops %u, %u, %u\n", n, n > 0 ? which[0] : 0,
	       n > 1 ? which[1] : 0, n > 2 ? which[2] : 0);
	CHECK(n == 3 && which[0] == 1 && which[1] == EVERY + 1 && which[2] == 2 * EVERY + 1,
	      "%d notices in 130 drops, want 3 at drops 1, 65, 129", n);
	CHECK(dropped_of(&k) == 130, "the bucket counted %u drops", dropped_of(&k));

	CHECK(set_mode(SLUICE_CLUSTER_UP, 20, 0) == 0, "recommit up, N=20");
	check_share(idx, 20 * SLUICE_CLUSTER_LOCAL_DIV, SLUICE_POLICY_CLUSTER | SLUICE_POLICY_LEASED,
		    "up, N=20");
	frame_udp_from(&f, "198.18.0.6");
	CHECK(send_n_frames(&fx, &f, 1) == 1, "the share's burst of 1");
	n = drops_notify(&f, 2, &k2, idx, which, 8);
	CHECK(n == 1 && which[0] == 1, "N=20: %d notices in 2 drops, want one at the first", n);

	/* A cluster state claiming N = 1,000,000: the commit caps it. */
	CHECK(set_mode(SLUICE_CLUSTER_UP, 1000000, 0) == 0, "recommit up, N=1000000");
	check_share(idx, (__u64)SLUICE_CLUSTER_HOSTS_MAX * SLUICE_CLUSTER_LOCAL_DIV,
		    SLUICE_POLICY_CLUSTER | SLUICE_POLICY_LEASED, "up, N=1000000 capped");
	CHECK(set_mode(SLUICE_CLUSTER_FALLBACK, 1000000, 0) == 0, "recommit fallback, N=1000000");
	check_share(idx, SLUICE_CLUSTER_HOSTS_MAX, SLUICE_POLICY_CLUSTER,
		    "fallback, N=1000000 capped");
}

/* Send n, expect `pass` to pass as within_limit and the rest rate limited. */
static void expect_pass(const struct frame *f, unsigned int n, __u64 pass, const char *what)
{
	struct sluice_counter before[SLUICE_R_MAX], after[SLUICE_R_MAX];
	__u64 got;

	counters_now(&fx, before);
	got = send_n_frames(&fx, f, n);
	counters_now(&fx, after);
	printf("  %s: %llu of %u passed\n", what, (unsigned long long)got, n);
	CHECK(got == pass, "%s: %llu of %u passed, want %llu", what, (unsigned long long)got, n,
	      (unsigned long long)pass);
	CHECK(reason_delta(before, after, SLUICE_R_WITHIN_LIMIT) == pass &&
	      reason_delta(before, after, SLUICE_R_RATE_LIMITED) == n - pass,
	      "%s: within %llu, rate limited %llu; want %llu and %llu", what,
	      (unsigned long long)reason_delta(before, after, SLUICE_R_WITHIN_LIMIT),
	      (unsigned long long)reason_delta(before, after, SLUICE_R_RATE_LIMITED),
	      (unsigned long long)pass, (unsigned long long)(n - pass));
}

/* n drops of f's source (bucket key k, rule idx) that must push exactly
 * the notices their dropped counts call for. */
static void expect_notices(const struct frame *f, unsigned int n, const struct sluice_src_key *k,
			   __u32 idx, const char *what)
{
	struct sluice_hot h[8];
	__u32 d0 = dropped_of(k);
	unsigned int want = notices_for(d0, n), got;

	CHECK(hot_count() == 0, "%s: notices before", what);
	expect_pass(f, n, 0, what);
	got = hot_drain(h, 8);
	printf("  %s: drops %u..%u pushed %u notices (want %u)\n", what, d0 + 1, d0 + n, got,
	       want);
	CHECK(got == want && want > 0, "%s: %u notices, want %u", what, got, want);
	for (unsigned int i = 0; i < got && i < 8; i++)
		CHECK(same_key(&h[i].key, k) && h[i].policy == idx,
		      "%s: notice key %s policy %u, want %s policy %u", what, key_str(&h[i].key),
		      h[i].policy, key_str(k), idx);
}

/*
 * c. Leases (N = 2, share burst 6 spent): a grant of C = 10 admits exactly
 * 10 more (within_limit), then drops; a new lease's grant returns 0, a
 * later one what was left; an expired lease (with credit or spent) or one
 * for another rule admits nothing and the drops push notices again; a release returns what was
 * left and deletes the entry.
 */
static void cluster_lease_spend(void)
{
	struct sluice_src_key k = home_key("198.18.0.7");
	struct sluice_lease l;
	struct frame f;
	__u64 old = 99;
	__u32 idx, other;

	CHECK(setup(POLICY_ONE, SLUICE_CLUSTER_UP, 2) == 0, "setup");
	idx = rule_idx("198.18.0.0/24");
	other = idx == SLUICE_POLICY_DEFAULT ? 1 : SLUICE_POLICY_DEFAULT;
	frame_udp_from(&f, "198.18.0.7");
	expect_pass(&f, 6, 6, "the share");
	CHECK(hot_count() == 0, "notices before a drop");

	CHECK(grant(&k, idx, 10, mono_now_ns() + SEC, &old) == 0, "grant");
	CHECK(old == 0, "a new lease's grant returned %llu, want 0", (unsigned long long)old);
	CHECK(lease_at(&k, &l) == 0 && l.credit == 10 && l.policy == idx, "the lease written");
	expect_pass(&f, 15, 10, "lease of 10, 15 sent");
	CHECK(credit_at(&k) == 0, "credit %llu left", (unsigned long long)credit_at(&k));
	/* a live lease, spent: the agent knows the bucket, no notice */
	CHECK(hot_count() == 0, "drops on a live spent lease pushed notices");

	CHECK(grant(&k, idx, 8, mono_now_ns() + SEC, &old) == 0 && old == 0,
	      "regrant of a spent lease returned %llu, want 0", (unsigned long long)old);
	expect_pass(&f, 3, 3, "lease of 8, 3 sent");
	CHECK(grant(&k, idx, 5, mono_now_ns() + SEC, &old) == 0 && old == 5,
	      "a grant returned %llu, want the 5 left", (unsigned long long)old);
	expect_pass(&f, 10, 5, "lease of 5, 10 sent");

	/* expired: nothing, and notices again. The datapath reads expiry by
	 * the coarse clock, which lags by a tick on an idle machine but by
	 * tens of ms on a loaded VM whose ticks are late (there, with tick +
	 * 1 ms, 32 of 70 can pass); a second in the past is expired on any. */
	CHECK(grant(&k, idx, 100, mono_now_ns() - SEC, &old) == 0 && old == 0,
	      "grant of an expired lease returned %llu", (unsigned long long)old);
	expect_notices(&f, 70, &k, idx, "expired lease of 100, 70 sent");
	CHECK(credit_at(&k) == 100, "the expired lease was spent: %llu left",
	      (unsigned long long)credit_at(&k));
	/* expired and spent (a grant of 0 an agent left behind): no lease
	 * either, so the drops tell the agent again */
	CHECK(grant(&k, idx, 0, mono_now_ns() - SEC, &old) == 0 && old == 100,
	      "grant of an expired spent lease returned %llu, want the 100 left",
	      (unsigned long long)old);
	CHECK(lease_at(&k, &l) == 0 && l.credit == 0, "the spent lease written");
	expect_notices(&f, 70, &k, idx, "expired lease of 0, 70 sent");

	/* another rule's lease on the same key */
	CHECK(grant(&k, other, 100, mono_now_ns() + SEC, &old) == 0 && old == 0,
	      "grant for index %u returned %llu, want the 0 left", other,
	      (unsigned long long)old);
	expect_notices(&f, 70, &k, idx, "lease of 100 for another rule, 70 sent");
	CHECK(credit_at(&k) == 100, "another rule's lease was spent: %llu left",
	      (unsigned long long)credit_at(&k));

	/* release */
	CHECK(grant(&k, idx, 50, mono_now_ns() + SEC, &old) == 0 && old == 100,
	      "grant returned %llu, want 100", (unsigned long long)old);
	expect_pass(&f, 3, 3, "lease of 50, 3 sent");
	CHECK(grant(&k, idx, 0, 0, &old) == 0 && old == 47,
	      "release returned %llu, want the 47 left", (unsigned long long)old);
	CHECK(lease_at(&k, &l) == -ENOENT, "the released lease is still in the map");
	expect_pass(&f, 5, 0, "released, 5 sent");
	CHECK(grant(&k, idx, 0, 0, &old) == 0 && old == 0,
	      "release of no lease returned %llu", (unsigned long long)old);
}

/* One keyed rule: sources a and b share the bucket at key (rule idx).
 * a spends the share's 6 and is dropped once (the notice names key); a
 * lease of 10 at key serves b, a lease at b's home key does not. */
static void keyed_case(const char *a, const char *b, const struct sluice_src_key *key, __u32 idx,
		       const char *what)
{
	struct sluice_src_key hb = home_key(b);
	struct sluice_hot h[4];
	struct frame fa, fb;
	__u64 old = 9;
	unsigned int n;

	frame_udp_from(&fa, a);
	frame_udp_from(&fb, b);
	expect_pass(&fa, 6, 6, what);
	CHECK(send_n_frames(&fx, &fa, 1) == 0, "%s: past the share", what);
	n = hot_drain(h, 4);
	printf("  %s: notice key %s policy %u\n", what, n ? key_str(&h[0].key) : "-",
	       n ? h[0].policy : 0);
	CHECK(n == 1 && same_key(&h[0].key, key) && h[0].policy == idx,
	      "%s: %u notices, key %s policy %u; want 1 of %s policy %u", what, n,
	      n ? key_str(&h[0].key) : "-", n ? h[0].policy : 0, key_str(key), idx);
	CHECK(dropped_of(key) == 1, "%s: no bucket at the notice's key", what);
	CHECK(grant(&hb, idx, 100, mono_now_ns() + SEC, &old) == 0 && old == 0, "home grant");
	CHECK(grant(key, idx, 10, mono_now_ns() + SEC, &old) == 0 && old == 0, "grant");
	expect_pass(&fb, 15, 10, what);
	CHECK(credit_at(key) == 0 && credit_at(&hb) == 100,
	      "%s: credit left %llu at the bucket's key, %llu at the home key (want 0, 100)",
	      what, (unsigned long long)credit_at(key), (unsigned long long)credit_at(&hb));
}

/*
 * d. Keyed buckets: --per /24 (the /24's address, key_len 96 + 24) and
 * --per rule (the rule's CIDR, 96 + 18), each with the rule's index.
 */
static void cluster_keyed_leases(void)
{
	struct sluice_src_key k24, krule;
	__u32 i24, irule;

	CHECK(setup("limit set 198.18.7.0/24 --per /24 --rate 100/m --burst 100 --cluster;"
		    "limit set 198.18.64.0/18 --per rule --rate 100/m --burst 100 --cluster",
		    SLUICE_CLUSTER_UP, 2) == 0, "setup");
	i24 = rule_idx("198.18.7.0/24");
	irule = rule_idx("198.18.64.0/18");
	CHECK(i24 < SLUICE_MAX_POLICIES && irule < SLUICE_MAX_POLICIES && i24 != irule,
	      "rule indexes %u %u", i24, irule);
	k24 = keyed("198.18.7.0", 96 + 24, i24);
	krule = keyed("198.18.64.0", 96 + 18, irule);
	keyed_case("198.18.7.9", "198.18.7.200", &k24, i24, "--per /24");
	keyed_case("198.18.64.1", "198.18.127.9", &krule, irule, "--per rule");
}

/*
 * e. Fallback: share T*N, burst max(1, B/N) = 50, no LEASED: a live lease
 * is not spent and no notice is pushed. An agent that stopped beating: its
 * N forgotten, the whole limit (burst 100), no LEASED either. Up again:
 * the same lease is spent.
 */
static void cluster_fallback(void)
{
	struct sluice_src_key k = home_key("198.18.0.8"), k2 = home_key("198.18.0.9");
	struct frame f;
	__u64 old = 1;
	__u32 idx;

	CHECK(setup(POLICY_ONE, SLUICE_CLUSTER_UP, 2) == 0, "setup");
	idx = rule_idx("198.18.0.0/24");
	CHECK(set_mode(SLUICE_CLUSTER_FALLBACK, 2, 0) == 0, "recommit fallback");
	check_share(idx, 2, SLUICE_POLICY_CLUSTER, "fallback, N=2");
	CHECK(grant(&k, idx, 100, mono_now_ns() + 5 * SEC, &old) == 0 && old == 0, "grant");
	frame_udp_from(&f, "198.18.0.8");
	expect_pass(&f, 60, 50, "fallback, lease of 100, 60 sent");
	CHECK(credit_at(&k) == 100, "fallback spent the lease: %llu left",
	      (unsigned long long)credit_at(&k));
	CHECK(hot_count() == 0, "fallback pushed notices");

	/* up, but the agent's last loop 10 s ago: not alive, not leased, and
	 * its N forgotten (the whole limit: burst 100) */
	CHECK(set_mode(SLUICE_CLUSTER_UP, 2, 10 * SEC) == 0, "recommit stale");
	check_share(idx, 1, SLUICE_POLICY_CLUSTER, "up, agent stale");
	CHECK(grant(&k2, idx, 100, mono_now_ns() + 5 * SEC, &old) == 0 && old == 0, "grant");
	frame_udp_from(&f, "198.18.0.9");
	expect_pass(&f, 110, 100, "stale agent, lease of 100, 110 sent");
	CHECK(credit_at(&k2) == 100, "a stale agent's rule spent the lease");

	/* up: leased again (198.18.0.8's spent bucket keeps nothing) */
	CHECK(set_mode(SLUICE_CLUSTER_UP, 2, 0) == 0, "recommit up");
	check_share(idx, 16, SLUICE_POLICY_CLUSTER | SLUICE_POLICY_LEASED, "up again");
	frame_udp_from(&f, "198.18.0.8");
	expect_pass(&f, 10, 10, "up again, the same lease");
	CHECK(credit_at(&k) == 90, "%llu left of 100, want 90", (unsigned long long)credit_at(&k));
}

/*
 * f. Both CPUs on one source and one lease of C: exactly the share's burst
 * plus C pass, however the CPUs interleave. Each real run is paired with a
 * run of the variant whose credit decrement is not atomic; only when that
 * one over-admits were the CPUs truly concurrent (a VM may run its vCPUs
 * in turn), so rounds go on until it does or RACE_PROVE_SECONDS pass.
 */
#define RACE_REPEAT		100000
#define RACE_CALLS		10
#define RACE_CREDIT		500000ULL
#define RACE_SHARE		100ULL	/* burst 1600 / (2 * 8) */
#define RACE_POLICY		"limit set 198.18.0.0/24 --rate 100/h --burst 1600 --cluster"
#define RACE_REAL_RUNS		3	/* real runs each round */
#define RACE_PROVE_SECONDS	60

static struct frame race_frame;
static int race_unproven;

/* One CPU's share: 0, or an errno value. */
static int hammer(int cpu, void *ctx)
{
	(void)cpu;
	(void)ctx;
	for (int i = 0; i < RACE_CALLS; i++)
		if (run_frame(&fx, &race_frame, RACE_REPEAT, NULL) < 0)
			return errno ? errno : EIO;
	return 0;
}

/* refused: packets refused as no_bucket, each while its CPU gave up on
 * the stripe lock the other held to claim the source's slot (a CPU
 * preempted mid-claim on a busy machine); gave_up: those give-ups. */
struct race_res {
	__u64 passed, dropped, left, src_passed, refused, gave_up;
	int err;
};

static struct race_res race_run(skel_open_fn open_skel)
{
	struct sluice_src_key k = home_key("198.18.0.77");
	struct sluice_counter c[SLUICE_R_MAX];
	struct race_res r = { .err = -1 };
	struct sluice_bucket b;
	__u64 old = 1, t0, t1;

	if (setup_with(open_skel, RACE_POLICY, SLUICE_CLUSTER_UP, 2) ||
	    grant(&k, rule_idx("198.18.0.0/24"), RACE_CREDIT, mono_now_ns() + 120 * SEC, &old) ||
	    old)
		return r;
	frame_udp_from(&race_frame, "198.18.0.77");
	r.err = on_every_cpu(2, hammer, NULL, &t0, &t1);
	counters_now(&fx, c);
	r.passed = c[SLUICE_R_WITHIN_LIMIT].packets;
	r.dropped = c[SLUICE_R_RATE_LIMITED].packets;
	r.refused = c[SLUICE_R_NO_BUCKET].packets;
	if (read_event(&fx.m, SLUICE_EV_LOCK_GAVE_UP, &r.gave_up))
		r.err = EIO;
	r.left = credit_at(&k);
	r.src_passed = bucket_lookup(&fx.m, &k, &b) ? ~0ULL : b.passed;
	printf("  %s: 2 CPUs, %llu packets in %.3f s: %llu passed (share %llu + lease %llu = "
	       "%llu), %llu credit left%s\n",
	       open_skel == sluice_bpf__open ? "real" : "racy",
	       (unsigned long long)(r.passed + r.dropped), (double)(t1 - t0) / 1e9,
	       (unsigned long long)r.passed, RACE_SHARE, RACE_CREDIT, RACE_SHARE + RACE_CREDIT,
	       (unsigned long long)r.left,
	       r.passed > RACE_SHARE + RACE_CREDIT ? ": OVER-ADMITTED" : "");
	return r;
}

static struct sluice_bpf *open_lease_racy(void)
{
	return (struct sluice_bpf *)sluice_lease_racy_bpf__open();
}

static void check_race(const struct race_res *r)
{
	CHECK(r->err == 0, "run failed: %s", r->err > 0 ? strerror(r->err) : "setup");
	CHECK(r->passed + r->dropped + r->refused == 2ULL * RACE_CALLS * RACE_REPEAT,
	      "%llu packets passed, rate limited or refused of %llu",
	      (unsigned long long)(r->passed + r->dropped + r->refused),
	      2ULL * RACE_CALLS * RACE_REPEAT);
	CHECK(r->refused == r->gave_up,
	      "%llu packets refused as no_bucket, %llu of them while "
	      "their CPU gave up on a stripe lock",
	      (unsigned long long)r->refused, (unsigned long long)r->gave_up);
	CHECK(r->passed <= RACE_SHARE + RACE_CREDIT, "over-admitted: %llu passed, share %llu + "
	      "lease %llu", (unsigned long long)r->passed, RACE_SHARE, RACE_CREDIT);
	CHECK(r->passed == RACE_SHARE + RACE_CREDIT && r->left == 0,
	      "starved: %llu passed with %llu credit left", (unsigned long long)r->passed,
	      (unsigned long long)r->left);
	CHECK(r->src_passed == r->passed, "the bucket counted %llu passes of %llu",
	      (unsigned long long)r->src_passed, (unsigned long long)r->passed);
}

static void cluster_lease_race(void)
{
	__u64 give_up = mono_now_ns() + RACE_PROVE_SECONDS * SEC;
	int rounds = 0, proven = 0;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
		printf("  needs 2 CPUs: skipped\n");
		race_unproven++;
		return;
	}
	while (!proven && mono_now_ns() < give_up) {
		struct race_res racy = race_run(open_lease_racy);
		int before = check_failures;

		rounds++;
		CHECK(racy.err == 0, "racy variant: run failed");
		for (int i = 0; i < RACE_REAL_RUNS; i++) {
			struct race_res real = race_run(sluice_bpf__open);

			check_race(&real);
			if (check_failures != before)
				return;
		}
		proven = racy.passed > RACE_SHARE + RACE_CREDIT;
	}
	if (!proven) {
		printf("  the racy variant never over-admitted in %d rounds over %d s: the CPUs "
		       "never ran at once\n", rounds, RACE_PROVE_SECONDS);
		race_unproven++;
	}
}

int main(int argc, char **argv)
{
	harness_select(argc, argv);
	if (geteuid() != 0) {
		printf("needs root for BPF_PROG_TEST_RUN\n");
		return 77;
	}
	if (!mkdtemp(lock_dir)) {
		printf("FAIL setup: mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	RUN_SELECTED(cluster_none_is_plain);
	RUN_SELECTED(cluster_up_share_and_notices);
	RUN_SELECTED(cluster_lease_spend);
	RUN_SELECTED(cluster_keyed_leases);
	RUN_SELECTED(cluster_fallback);
	RUN_SELECTED(cluster_lease_race);
	teardown();
	rmdir(lock_dir);
	printf("%s: %d failed\n", check_failures ? "FAIL" : "PASS", check_failures);
	if (!check_failures && race_unproven) {
		printf("the CPUs never ran truly in parallel: the race is not proven\n");
		return 77;
	}
	return check_failures ? 1 : 0;
}
