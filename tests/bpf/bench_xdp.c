// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Per-packet cost of sluice's XDP program next to a bare XDP_DROP, measured
 * side by side through BPF_PROG_TEST_RUN in one run (the machine is noisy,
 * so only ratios measured together mean anything). */
#define _GNU_SOURCE
#include <linux/bpf.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>
#include "fixture.h"
#include "lease.h"
#include "sluice/srctab.h"
#include "sluice_random.skel.h"
#include "bench_min_random.skel.h"

#define BENCH_REPEAT	1000000
#define BENCH_ROUNDS	7

static int load_bare_drop(void)
{
	struct bpf_insn insns[] = {
		/* r0 = XDP_DROP; exit */
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_DROP },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	return bpf_prog_load(BPF_PROG_TYPE_XDP, "bare_drop", "GPL", insns,
			     sizeof(insns) / sizeof(insns[0]), NULL);
}

/* One run of BENCH_REPEAT packets: the kernel's mean ns per packet. */
static double one_run_ns(int prog_fd, const struct frame *f)
{
	__u8 out[sizeof(f->buf)];
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = f->buf, .data_size_in = (__u32)f->len,
		.data_out = out, .data_size_out = sizeof(out),
		.repeat = BENCH_REPEAT);

	if (bpf_prog_test_run_opts(prog_fd, &o))
		return -1;
	return o.duration;
}

static double median(double *v, int n)
{
	double t;

	for (int i = 1; i < n; i++)	/* insertion sort */
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

/* Median of BENCH_ROUNDS runs of `repeat` packets, in ns per packet. */
static double per_packet_ns(int prog_fd, const struct frame *f)
{
	double v[BENCH_ROUNDS];

	for (int r = 0; r < BENCH_ROUNDS; r++) {
		v[r] = one_run_ns(prog_fd, f);
		if (v[r] < 0)
			return -1;
	}
	return median(v, BENCH_ROUNDS);
}

/* What a case sends. */
enum frame_kind {
	F_UDP,		/* UDP to port 5000 */
	F_UDP53,	/* UDP to port 53 */
	F_SYN,		/* TCP SYN to port 80 */
	F_ARP,		/* not IP */
};

struct bench_case {
	const char *name;
	const char *src;
	enum frame_kind kind;
	size_t size;	/* frame length; 0 for the smallest */
};

static void build_frame(struct frame *f, const struct bench_case *c)
{
	switch (c->kind) {
	case F_ARP:
		frame_eth(f, ETH_P_ARP);
		frame_put(f, NULL, 28);
		break;
	case F_UDP53:
		frame_udp_to(f, c->src, 53);
		break;
	case F_SYN:
		frame_tcp(f, c->src, 80, 1, 0);
		break;
	default:
		if (c->size)
			frame_l4(f, c->src, IPPROTO_UDP, sizeof(struct udphdr), c->size);
		else
			frame_udp_from(f, c->src);
	}
}

/* One thread per CPU runs a frame at once, each from its own source. */
struct hot_worker {
	pthread_t tid;
	int cpu, prog_fd;
	struct frame f;
	double ns;
};

static void *hot_run(void *arg)
{
	struct hot_worker *w = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	w->ns = per_packet_ns(w->prog_fd, &w->f);
	return NULL;
}

/* Two CPUs, two sources, one shared bucket: the mean of their ns/packet. */
static double hot_aggregate_ns(int prog_fd, const char *const src[2])
{
	struct hot_worker w[2];

	for (int i = 0; i < 2; i++) {
		w[i].cpu = i;
		w[i].prog_fd = prog_fd;
		frame_udp_from(&w[i].f, src[i]);
		pthread_create(&w[i].tid, NULL, hot_run, &w[i]);
	}
	for (int i = 0; i < 2; i++)
		pthread_join(w[i].tid, NULL);
	return (w[0].ns + w[1].ns) / 2;
}

/* Every map's memory as the kernel accounts it (fdinfo memlock, what
 * `bpftool map show` prints), summed, for a program of max_sources. */
static long memlock_of(int fd)
{
	char path[64], line[128];
	long memlock = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %ld", &memlock) == 1)
			break;
	if (f)
		fclose(f);
	return memlock;
}

static long all_maps_bytes(__u32 max_sources)
{
	struct fixture fx;
	long sum = 0, m;

	if (fixture_open(&fx, max_sources))
		return -1;
#define ADD_MAP(name)							\
	m = memlock_of(fx.m.name);					\
	sum = m < 0 || sum < 0 ? -1 : sum + m;
	SLUICE_MAPS(ADD_MAP)
#undef ADD_MAP
	fixture_close(&fx);
	return sum;
}

/* Run each case (the first packets take the bucket and spend its burst);
 * print ns per packet against the bare program, and against `ref` when it
 * is not 0. */
static void run_cases(struct fixture *fx, const struct bench_case *cases, size_t n,
		      double base, double ref)
{
	struct frame f;

	for (size_t i = 0; i < n; i++) {
		double ns;

		build_frame(&f, &cases[i]);
		run_frame(fx, &f, 2, NULL);
		ns = per_packet_ns(fx->prog_fd, &f);
		printf("%-46s %8.1f %8.2f   +%.1f ns over bare", cases[i].name, ns, ns / base,
		       ns - base);
		if (ref > 0)
			printf(", %+.1f over a plain rule", ns - ref);
		printf("\n");
	}
}

/* The policy every case runs under: a default and 1000 other prefixes in
 * the trie, (with v2) one rule of each kind of policy model v2, and the
 * rules in `more`. */
static int apply_policy(struct fixture *fx, bool v2, const char *more)
{
	static char policy[64 * 1024];
	size_t off;

	off = (size_t)snprintf(policy, sizeof(policy),
			       "limit default --rate 100 --burst 100;"
			       "limit set 198.18.1.0/24 --rate 1000000000 --burst 1000000000;"
			       "limit set 198.18.2.0/24 --rate 1 --burst 1;"
			       "deny 198.18.3.0/24;allow 198.18.4.0/24;"
			       "limit set 2001:2::/64 --rate 1 --burst 1;");
	if (v2)
		off += (size_t)snprintf(policy + off, sizeof(policy) - off,
			"limit set 198.18.0.0/16 --rate 1 --burst 1;"
			"limit set 198.18.5.0/24 --proto udp --dport 53 --rate 1 --burst 1;"
			"limit set 198.18.6.0/24 --syn --rate 1 --burst 1;"
			"limit set 198.18.7.0/24 --per /24 --rate 1 --burst 1;"
			"limit set 198.18.8.0/24 --per rule --rate 1 --burst 1;"
			"limit set 198.18.9.0/24 --bytes 1 --burst 1000;"
			"limit set 198.18.10.0/24 --rate 1 --burst 1 --monitor;"
			"limit set 198.18.11.0/24 --rate 1 --burst 1 --ban 1h;"
			"limit set 198.18.12.0/24 --per rule --rate 1000000000 --burst 1000000000;");
	if (more)
		off += (size_t)snprintf(policy + off, sizeof(policy) - off, "%s;", more);
	for (int i = 0; i < 1000 && off < sizeof(policy) - 64; i++)
		off += (size_t)snprintf(policy + off, sizeof(policy) - off,
					"limit set 198.19.%d.%d/30 --rate 10 --burst 10;",
					i / 64, (i % 64) * 4);
	return fixture_policy(fx, policy);
}

/* The minimal XDP token bucket (tools/bench_min.bpf.c, with the marker
 * sources of sluice's benchmark variant): limit 1/s burst 1, both tables
 * of max_sources. NULL when it cannot load. */
static struct bench_min_random_bpf *open_min(__u32 max_sources)
{
	struct bench_min_random_bpf *m = bench_min_random_bpf__open();

	if (!m)
		return NULL;
	m->rodata->interval_ns = 1000000000ULL;
	m->rodata->tolerance_ns = 1000000000ULL;
	if (bpf_map__set_max_entries(m->maps.min_tat4, max_sources) ||
	    bpf_map__set_max_entries(m->maps.min_tat6, max_sources) ||
	    bench_min_random_bpf__load(m)) {
		bench_min_random_bpf__destroy(m);
		return NULL;
	}
	return m;
}

/* `repeat` runs of one frame through prog_fd (to take and spend buckets). */
static int run_prog(int prog_fd, const struct frame *f, __u32 repeat)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f->buf, .data_size_in = (__u32)f->len,
		    .repeat = repeat);

	return bpf_prog_test_run_opts(prog_fd, &o);
}

/* A row of the minimal bucket for frames from src, and what sluice's `ns`
 * for the same case is over it. */
static void min_case(int prog_fd, const char *name, const char *src, double base, double ns)
{
	struct frame f;
	double m;

	frame_udp_from(&f, src);
	m = per_packet_ns(prog_fd, &f);
	printf("%-46s %8.1f %8.2f   sluice %.2f x this\n", name, m, m / base, ns / m);
}

static struct sluice_bpf *open_random(void)
{
	return (struct sluice_bpf *)sluice_random_bpf__open();
}

/* One case of the source-table scenarios: ns per packet of frames from
 * src (a marker of the benchmark variant, or a plain source). */
static double table_case(struct fixture *fx, const char *name, const char *src, double base,
			 double ref)
{
	struct frame f;
	double ns;

	frame_udp_from(&f, src);
	ns = per_packet_ns(fx->prog_fd, &f);
	printf("%-46s %8.1f %8.2f   %5.2f Mpps per CPU", name, ns, ns / base, 1e3 / ns);
	if (ref > 0)
		printf(", %.2f x the same-sized known", ns / ref);
	printf("\n");
	return ns;
}

/*
 * The source table at scale, on one program (the benchmark variant that
 * spreads packets of marker sources over many addresses, see
 * tests/bpf/sluice_random.bpf.c), limit 1/s burst 1, all in the drop
 * regime: 1, 1000 and 65536 known sources in a table of 131072, then
 * never-seen sources with no new-source budget (each takes an entry,
 * evicting once the table is full) and over a budget (dropped without one).
 */
static void table_scenarios(double base)
{
	struct bench_min_random_bpf *min;
	struct fixture fx;
	struct frame f;
	double known, ns[4];

	if (fixture_open_with(&fx, 131072, open_random) ||
	    fixture_policy(&fx, "limit default --rate 1 --burst 1")) {
		fprintf(stderr, "bench: cannot load the benchmark variant\n");
		return;
	}
	printf("\nthe source table at scale (limit 1/s burst 1, a table of 131072):\n");
	/* take every known source's entry and spend its burst */
	frame_udp_from(&f, "198.18.0.1");
	run_frame(&fx, &f, 2, NULL);
	frame_udp_from(&f, "198.19.253.1");
	run_frame(&fx, &f, 2000000, NULL);
	ns[0] = table_case(&fx, "1 known source, drop", "198.18.0.1", base, 0);
	ns[1] = table_case(&fx, "1000 known sources, drop", "198.19.254.1", base, 0);
	known = ns[2] = table_case(&fx, "65536 known sources, drop", "198.19.253.1", base, 0);
	ns[3] = table_case(&fx, "never-seen sources, no budget (each an entry)", "198.19.255.1",
			   base, known);
	min = open_min(131072);
	if (min) {
		int prog = bpf_program__fd(min->progs.bench_min);

		/* the same known sources, each bucket spent */
		frame_udp_from(&f, "198.18.0.1");
		run_prog(prog, &f, 2);
		frame_udp_from(&f, "198.19.253.1");
		run_prog(prog, &f, 2000000);
		min_case(prog, "minimal bucket: 1 known source, drop", "198.18.0.1", base, ns[0]);
		min_case(prog, "minimal bucket: 1000 known sources, drop", "198.19.254.1", base,
			 ns[1]);
		min_case(prog, "minimal bucket: 65536 known sources, drop", "198.19.253.1", base,
			 ns[2]);
		min_case(prog, "minimal bucket: never-seen sources", "198.19.255.1", base, ns[3]);
		bench_min_random_bpf__destroy(min);
	} else {
		fprintf(stderr, "bench: cannot load the minimal bucket\n");
	}
	new_sources_write(&fx.m, 1000, SLUICE_PERIOD_SEC, 1000);
	frame_udp_from(&f, "198.19.255.1");
	run_frame(&fx, &f, 100000, NULL);	/* spend the budget's burst */
	table_case(&fx, "never-seen sources over a budget, drop", "198.19.255.1", base, known);
	fixture_close(&fx);
}

/*
 * The algorithms (--algo) side by side: one plain per-source rule of each,
 * in the drop regime (budget 1, spent), in the pass regime (a budget no
 * run can spend: 1e9/s, and 1e6 per 1 ms window for the sliding window,
 * whose counts hold at most 2^20 - 1), and at the limit (5e6/s, 5000 per
 * 1 ms window, burst 5000, under a run's ~1e7 packets/s: some pass, some
 * drop, and the sliding window weighs prev for each). Rounds are
 * interleaved, each round one run of every case, so the machine's drift
 * falls on all of them alike; the difference to the token bucket is the
 * median of the rounds' differences (each taken within one round).
 */
#define ALGO_CASES	9
#define ALGO_ROUNDS	11
static void algo_scenarios(double base)
{
	static const struct {
		const char *name, *src;
	} cases[ALGO_CASES] = {
		{ "token-bucket, limited (drop)", "198.18.2.1" },
		{ "fixed-window, limited (drop)", "198.18.20.1" },
		{ "sliding-window, limited (drop)", "198.18.21.1" },
		{ "token-bucket, within limit (pass)", "198.18.1.1" },
		{ "fixed-window, within limit (pass)", "198.18.22.1" },
		{ "sliding-window, within limit (pass)", "198.18.23.1" },
		{ "token-bucket, at the limit (pass and drop)", "198.18.24.1" },
		{ "fixed-window, at the limit (pass and drop)", "198.18.25.1" },
		{ "sliding-window, at the limit (pass and drop)", "198.18.26.1" },
	};
	double v[ALGO_CASES][ALGO_ROUNDS], d[ALGO_ROUNDS], ns, diff;
	struct frame f[ALGO_CASES];
	struct sluice_bucket b;
	struct fixture fx;

	if (fixture_open(&fx, 0) ||
	    apply_policy(&fx, false, "limit set 198.18.20.0/24 --rate 1 --algo fixed-window;"
				"limit set 198.18.21.0/24 --rate 1 --algo sliding-window;"
				"limit set 198.18.22.0/24 --rate 1000000000 --algo fixed-window "
				"--window 1ms;"
				"limit set 198.18.23.0/24 --rate 1000000000 --algo sliding-window "
				"--window 1ms;"
				"limit set 198.18.24.0/24 --rate 5000000 --burst 5000;"
				"limit set 198.18.25.0/24 --rate 5000000 --algo fixed-window "
				"--window 1ms;"
				"limit set 198.18.26.0/24 --rate 5000000 --algo sliding-window "
				"--window 1ms")) {
		fprintf(stderr, "bench: cannot apply the algorithms' policy\n");
		return;
	}
	printf("\nthe algorithms, a plain per-source rule each (medians of %d interleaved "
	       "rounds of 1M):\n", ALGO_ROUNDS);
	for (int c = 0; c < ALGO_CASES; c++) {
		frame_udp_from(&f[c], cases[c].src);
		run_frame(&fx, &f[c], 2, NULL);	/* take the bucket, spend budget 1 */
	}
	for (int r = 0; r < ALGO_ROUNDS; r++)
		for (int c = 0; c < ALGO_CASES; c++)
			v[c][r] = one_run_ns(fx.prog_fd, &f[c]);
	for (int c = 0; c < ALGO_CASES; c++) {
		int tb = c - c % 3;	/* the token bucket of c's regime */

		for (int r = 0; r < ALGO_ROUNDS; r++)
			d[r] = v[c][r] - v[tb][r];
		diff = median(d, ALGO_ROUNDS);
		memcpy(d, v[c], sizeof(d));	/* median() sorts: keep v in round order */
		ns = median(d, ALGO_ROUNDS);
		printf("%-46s %8.1f %8.2f   +%.1f ns over bare", cases[c].name, ns, ns / base,
		       ns - base);
		if (c != tb)
			printf(", %+.1f over the token bucket%s", diff,
			       diff > 10 ? " (over the 10 ns aim)" : "");
		if (c >= 6 && !bucket_of(&fx, cases[c].src, &b))	/* the regime holds */
			printf(", %.0f%% passed", 100.0 * (double)b.passed /
						   (double)(b.passed + b.dropped));
		printf("\n");
	}
	fixture_close(&fx);
}

/*
 * --cluster rules against plain rules of the same numbers, the
 * agent up with N = 1 (share: rate / 8, burst / 8, leased): a limited
 * source with no lease (its bucket looks a lease up, and every 64th drop
 * pushes a notice into a queue no agent pops here: full after the first
 * round, as when the agent is slow), one whose live lease is spent (credit
 * 0), a pass spent from a lease (credit no run spends), and a pass within
 * the share; against the plain rule's drop or within-limit pass. And what
 * a leased rule in the policy costs a plain rule's drop: the same policy
 * on a second program with no agent (no rule leased). Interleaved rounds
 * as for the algorithms; each difference is the median of the rounds'
 * differences. Then the verifier's cost of the program.
 */
#define CLUSTER_CASES	7
#define CLUSTER_ROUNDS	11
static const struct {
	const char *name, *src;
	int ref;	/* the plain case it is measured against, -1 none */
	int no_agent;	/* on the program whose policy has no leased rule */
} cluster_cases[CLUSTER_CASES] = {
	{ "plain rule, limited (drop)", "198.18.30.1", -1, 0 },
	{ "--cluster, limited, no lease (drop)", "198.18.31.1", 0, 0 },
	{ "--cluster, limited, lease spent (drop)", "198.18.35.1", 0, 0 },
	{ "plain rule, within limit (pass)", "198.18.32.1", -1, 0 },
	{ "--cluster, within the share (pass)", "198.18.33.1", 3, 0 },
	{ "--cluster, past the share, from a lease (pass)", "198.18.34.1", 3, 0 },
	{ "  the plain drop, no rule leased (no agent)", "198.18.30.1", 0, 1 },
};
static const char cluster_rules[] = "limit set 198.18.30.0/24 --rate 1 --burst 1;"
				    "limit set 198.18.31.0/24 --rate 1 --burst 1 --cluster;"
				    "limit set 198.18.35.0/24 --rate 1 --burst 1 --cluster;"
				    "limit set 198.18.32.0/24 --rate 1000000 --burst 1000000000;"
				    "limit set 198.18.33.0/24 --rate 1000000 --burst 1000000000 "
				    "--cluster;"
				    "limit set 198.18.34.0/24 --rate 1 --burst 1 --cluster";

/* The lease rows' leases, on the sources' home keys, for an hour: a spent
 * one (credit 0) and one no run spends. lease_grant's answer. */
static int cluster_leases(struct fixture *fx, struct lease_writer *lw)
{
	struct sluice_grant g[2] = {};
	__u32 idx;

	for (int i = 0; i < 2; i++) {
		const char *src = i ? cluster_cases[2].src : cluster_cases[5].src;
		char cidr[32];
		struct policy *p = malloc(sizeof(*p));
		struct cidr c;
		struct rule *r;

		snprintf(cidr, sizeof(cidr), "%.*s0/24", (int)(strrchr(src, '.') - src + 1), src);
		idx = SLUICE_MAX_POLICIES;
		if (p && !parse_cidr(cidr, &c, NULL, 0) && !policy_read(&fx->m, p) &&
		    (r = policy_find(p, &c)))
			idx = r->index;
		free(p);
		parse_source(src, &g[i].key);
		g[i].policy = idx;
		g[i].credit = i ? 0 : 1ULL << 40;
		g[i].expires_ns = mono_now_ns() + 3600 * SLUICE_NS_PER_SEC;
	}
	return lease_grant(lw, g, 2);
}

/* The cluster cases measured in interleaved rounds, fx with the agent up,
 * fx0 without, and their rows printed. */
static void cluster_rows(struct fixture *fx, struct fixture *fx0, double base)
{
	double v[CLUSTER_CASES][CLUSTER_ROUNDS], d[CLUSTER_ROUNDS], ns, diff;
	struct frame f[CLUSTER_CASES];
	struct sluice_bucket b;
	int fd;

	printf("\n--cluster rules vs plain rules of the same numbers, agent up, N=1 (medians of "
	       "%d interleaved rounds of 1M):\n", CLUSTER_ROUNDS);
	for (int c = 0; c < CLUSTER_CASES; c++) {
		frame_udp_from(&f[c], cluster_cases[c].src);
		/* take the bucket, spend burst 1 */
		run_frame(cluster_cases[c].no_agent ? fx0 : fx, &f[c], 2, NULL);
	}
	for (int r = 0; r < CLUSTER_ROUNDS; r++)
		for (int c = 0; c < CLUSTER_CASES; c++) {
			fd = cluster_cases[c].no_agent ? fx0->prog_fd : fx->prog_fd;
			v[c][r] = one_run_ns(fd, &f[c]);
		}
	for (int c = 0; c < CLUSTER_CASES; c++) {
		int ref = cluster_cases[c].ref;

		memcpy(d, v[c], sizeof(d));	/* median() sorts: keep v in round order */
		ns = median(d, CLUSTER_ROUNDS);
		printf("%-46s %8.1f %8.2f   +%.1f ns over bare", cluster_cases[c].name, ns,
		       ns / base, ns - base);
		if (ref >= 0) {
			for (int r = 0; r < CLUSTER_ROUNDS; r++)
				d[r] = v[c][r] - v[ref][r];
			diff = median(d, CLUSTER_ROUNDS);
			if (cluster_cases[c].no_agent)
				printf(", %+.1f for the plain drop with a leased rule", -diff);
			else
				printf(", %+.1f cluster rule vs plain", diff);
		}
		/* the regime held: the share's rows passed, the others as named */
		if (!bucket_of(cluster_cases[c].no_agent ? fx0 : fx, cluster_cases[c].src, &b))
			printf(", %.0f%% passed", 100.0 * (double)b.passed /
						   (double)(b.passed + b.dropped));
		printf("\n");
	}
}

static void cluster_scenarios(double base)
{
	struct sluice_cluster_state st = { .mode = SLUICE_CLUSTER_UP, .peers = 1, .sync_ms = 100 };
	struct bpf_prog_info info = {};
	__u32 info_len = sizeof(info);
	struct lease_writer *lw = NULL;
	struct fixture fx, fx0;

	st.pid = (__u32)getpid();
	st.heartbeat_ns = st.started_ns = mono_now_ns();
	/* the commit reads the agent's state: written first, the policy's
	 * --cluster rules take the connected share */
	if (fixture_open(&fx, 0) || cluster_state_write(&fx.m, &st) ||
	    apply_policy(&fx, false, cluster_rules) || lease_writer_open(&fx.m, &lw)) {
		fprintf(stderr, "bench: cannot set up the cluster rules\n");
		fixture_close(&fx);
		return;
	}
	if (fixture_open(&fx0, 0) || apply_policy(&fx0, false, cluster_rules)) {
		fprintf(stderr, "bench: cannot set up the cluster rules without an agent\n");
		fixture_close(&fx0);
		goto out_fx;
	}
	if (cluster_leases(&fx, lw)) {
		fprintf(stderr, "bench: cannot write the leases\n");
		goto out;
	}
	cluster_rows(&fx, &fx0, base);
	if (!bpf_obj_get_info_by_fd(fx.prog_fd, &info, &info_len))
		printf("the XDP program: %u instructions, %u processed by the verifier "
		       "(%.1f %% of its 1,000,000)\n", info.xlated_prog_len / 8,
		       info.verified_insns, info.verified_insns / 1e4);
out:
	fixture_close(&fx0);
out_fx:
	lease_writer_close(lw);
	fixture_close(&fx);
}

/* The floor, the minimal bucket (tools/bench_min.bpf.c), for sluice's plain limited
 * rows (one known source, drop), each measured again beside it. */
static void plain_min_rows(struct fixture *fx, double base)
{
	static const struct {
		const char *name, *src;
	} rows[] = {
		{ "minimal bucket: ipv4 known source (drop)", "198.18.2.1" },
		{ "minimal bucket: ipv6 known source (drop)", "2001:2::1" },
	};
	struct bench_min_random_bpf *m = open_min(SLUICE_MAX_SOURCES_DEFAULT);
	struct frame f;

	if (!m) {
		fprintf(stderr, "bench: cannot load the minimal bucket\n");
		return;
	}
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int prog = bpf_program__fd(m->progs.bench_min);

		frame_udp_from(&f, rows[i].src);
		run_prog(prog, &f, 2);
		run_frame(fx, &f, 2, NULL);
		min_case(prog, rows[i].name, rows[i].src, base, per_packet_ns(fx->prog_fd, &f));
	}
	bench_min_random_bpf__destroy(m);
}

/* The ban table (the check server's escalation): what a packet
 * pays while bans exist, against the plain limited rule `ref` it is judged
 * by otherwise, and what a banned source's packet costs. */
static void ban_table_rows(struct fixture *fx, double base, double ref)
{
	struct sluice_src_key k;
	struct ban_writer w;
	struct frame f;
	char addr[32];
	double ns;

	if (ban_writer_open(&fx->m, &w))
		return;
	for (int i = 0; i < 1000; i++) {
		snprintf(addr, sizeof(addr), "198.19.%d.%d", 100 + i / 250, 1 + i % 250);
		if (parse_source(addr, &k) ||
		    ban_put(&w, &k, 0, mono_now_ns() + 3600 * SLUICE_NS_PER_SEC))
			goto out;
	}
	if (parse_source("198.18.13.1", &k) ||
	    ban_put(&w, &k, 0, mono_now_ns() + 3600 * SLUICE_NS_PER_SEC))
		goto out;
	frame_udp_from(&f, "198.18.2.1");
	ns = per_packet_ns(fx->prog_fd, &f);
	printf("%-46s %8.1f %8.2f   +%.1f ns over bare, %+.1f over a plain rule\n",
	       "1001 bans live, plain rule, limited (drop)", ns, ns / base, ns - base, ns - ref);
	frame_udp_from(&f, "198.18.13.1");
	ns = per_packet_ns(fx->prog_fd, &f);
	printf("%-46s %8.1f %8.2f   +%.1f ns over bare, %+.1f over a plain rule\n",
	       "banned by the check server (drop)", ns, ns / base, ns - base, ns - ref);
out:
	ban_writer_close(&w);
}

/* Policy model v2: one rule of each kind added to fx2's policy, each next
 * to the plain limited rule; then the ban table and the --per rule's
 * aggregate with 2 CPUs at once. */
static void v2_rows(struct fixture *fx2, double base)
{
	static const struct bench_case v2[] = {
		{ "--proto udp --dport 53, limited (drop)", "198.18.5.1", F_UDP53, 0 },
		{ "  same source, other port: the /16 (drop)", "198.18.5.1", F_UDP, 0 },
		{ "--syn, limited (drop)", "198.18.6.1", F_SYN, 0 },
		{ "--per /24, limited (drop)", "198.18.7.1", F_UDP, 0 },
		{ "--per rule, limited (drop)", "198.18.8.1", F_UDP, 0 },
		{ "--bytes, 1500-byte frames, limited (drop)", "198.18.9.1", F_UDP, 1500 },
		{ "--monitor, would drop (pass)", "198.18.10.1", F_UDP, 0 },
		{ "--ban, banned (drop)", "198.18.11.1", F_UDP, 0 },
	};
	static const char *const hot_src[2] = { "198.18.12.1", "198.18.12.2" };
	struct frame f;
	double ref;

	printf("\npolicy model v2, one rule of each kind added to the same policy:\n");
	frame_udp_from(&f, "198.18.2.1");
	run_frame(fx2, &f, 2, NULL);
	ref = per_packet_ns(fx2->prog_fd, &f);
	printf("%-46s %8.1f %8.2f   +%.1f ns over bare\n", "plain rule, limited (drop)", ref,
	       ref / base, ref - base);
	run_cases(fx2, v2, sizeof(v2) / sizeof(v2[0]), base, ref);
	ban_table_rows(fx2, base, ref);
	if (sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
		double ns = hot_aggregate_ns(fx2->prog_fd, hot_src);

		printf("%-46s %8.1f %8.2f   +%.1f ns over bare\n",
		       "--per rule, 2 CPUs admit at once (pass)", ns, ns / base, ns - base);
	}
}

/* Memory per tracked source: every map's memlock at two table sizes, the
 * difference divided by the difference in sources (what a source costs,
 * whatever the fixed maps cost). */
static void table_memory_rows(void)
{
	static const __u32 sizes[][2] = { { 65536, 1048576 }, { 262144, 4194304 } };

	printf("\nmemory per tracked source (every map's memlock, two table sizes):\n");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		long lo = all_maps_bytes(sizes[i][0]), hi = all_maps_bytes(sizes[i][1]);

		if (lo < 0 || hi < 0) {
			printf("  cannot read memlock\n");
			continue;
		}
		printf("  --max-sources %u -> %u: %.1f bytes per source (%.1f MiB -> %.1f MiB)\n",
		       sizes[i][0], sizes[i][1],
		       (double)(hi - lo) / (double)(sizes[i][1] - sizes[i][0]),
		       (double)lo / (1 << 20), (double)hi / (1 << 20));
	}
	printf("  a slot is %zu bytes and its counts %zu, at load %.2f\n",
	       sizeof(struct sluice_slot), sizeof(struct sluice_slot_count),
	       (double)SLUICE_SRC_LOAD_NUM / SLUICE_SRC_LOAD_DEN);
}

/* Trie entries of a prefix ban table, and the trie's memlock. */
static __u64 trie_memlock(int fd)
{
	char path[64], line[128];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

/* Entry i of a filled ban table: the /32s of 198.18.0.0/15 but
 * 198.18.2.0/24 (the measured source's, so its lookup walks the deepest
 * path without a match), then IPv6 /96s. */
static void nth_prefix(__u32 i, struct sluice_ban_key *k)
{
	struct cidr c = { .prefixlen = 128 };
	__u32 v4 = (198U << 24 | 18U << 16) + i + (i >= 2 * 256 ? 256 : 0);

	if (i < (1U << 17) - 256) {
		c.addr.a[10] = c.addr.a[11] = 0xff;
		c.addr.a[12] = (__u8)(v4 >> 24);
		c.addr.a[13] = (__u8)(v4 >> 16);
		c.addr.a[14] = (__u8)(v4 >> 8);
		c.addr.a[15] = (__u8)v4;
	} else {
		c.prefixlen = 96;
		c.addr.a[0] = 0x20;
		c.addr.a[1] = 0x01;
		c.addr.a[3] = 0x02;
		memcpy(&c.addr.a[8], &i, sizeof(i));
	}
	bantab_key(&c, k);
}

/* Prefix bans (ban add, ban load): a plain limited rule's packet with no
 * ban table, then with tables of 100000 and 1000000 prefixes (none covering
 * it), and a banned source's packet; the memory per prefix. */
static void prefix_ban_rows(double base)
{
	static const __u32 sizes[] = { 100000, 1000000 };
	struct sluice_pfx_ban v = { .lists = 1 };
	struct sluice_ban_key k;
	struct fixture fx;
	struct bantab t;
	struct frame f, fb;
	__u64 mem[2] = { 0 };
	double none, ns;
	int fd = -1;

	if (fixture_open(&fx, 0) || apply_policy(&fx, false, NULL) || bantab_open(&fx.m, &t))
		return;
	printf("\nprefix bans (ban add, ban load), the plain limited rule's source not banned:\n");
	frame_udp_from(&f, "198.18.2.1");
	frame_udp_from(&fb, "198.18.3.1");
	none = per_packet_ns(fx.prog_fd, &f);
	printf("%-46s %8.1f %8.2f   +%.1f ns over bare\n", "no ban table (drop)", none,
	       none / base, none - base);
	for (size_t s = 0, done = 0; s < 2; s++) {
		if (fd < 0 && ((fd = bantab_new_trie(&t)) < 0 || bantab_install(&fx.m, &t, fd)))
			break;
		for (; done < sizes[s]; done++) {
			nth_prefix((__u32)done, &k);
			if (bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST))
				goto out;
		}
		mem[s] = trie_memlock(fd);
		ns = per_packet_ns(fx.prog_fd, &f);
		printf("%-40s %7u %8.1f %8.2f   %+.1f ns over no table\n", "prefixes banned, not this one",
		       sizes[s], ns, ns / base, ns - none);
	}
	ns = per_packet_ns(fx.prog_fd, &fb);
	printf("%-46s %8.1f %8.2f   %+.1f ns over no table\n", "banned by a prefix (drop)", ns,
	       ns / base, ns - none);
	if (mem[1] > mem[0])
		printf("ban table memory: %.1f bytes a prefix (memlock at 100000 and 1000000)\n",
		       (double)(mem[1] - mem[0]) / (sizes[1] - sizes[0]));
out:
	bantab_install(&fx.m, &t, -1);
	bantab_close(&t);
	fixture_close(&fx);
}

/* usage: bench_xdp [plain|algos|cluster|memory|bans]   (only the plain CIDR rules, the
 * minimal bucket and each kind of rule; only the algorithms, the memory, the
 * ban table or the --cluster rows, next to bare) */
int main(int argc, char **argv)
{
	/* Plain CIDR rules: the figures to compare with earlier versions. */
	static const struct bench_case plain[] = {
		{ "ipv4 known source, within limit (pass)", "198.18.1.1", F_UDP, 0 },
		{ "ipv4 known source, rate limited (drop)", "198.18.2.1", F_UDP, 0 },
		{ "ipv4 denied source (drop)", "198.18.3.1", F_UDP, 0 },
		{ "ipv4 allowed source (pass)", "198.18.4.1", F_UDP, 0 },
		{ "ipv6 known source, rate limited (drop)", "2001:2::1", F_UDP, 0 },
		{ "non-IP frame (pass)", NULL, F_ARP, 0 },
	};
	struct fixture fx, fx2;
	struct frame f;
	double base;
	int bare;

	if (geteuid() != 0) {
		fprintf(stderr, "bench: needs root for BPF_PROG_TEST_RUN\n");
		return 77;
	}
	bare = load_bare_drop();
	if (bare < 0 || fixture_open(&fx, 0) || fixture_open(&fx2, 0)) {
		fprintf(stderr, "bench: cannot load programs: %s\n", strerror(errno));
		return 1;
	}
	if (apply_policy(&fx, false, NULL) || apply_policy(&fx2, true, NULL)) {
		fprintf(stderr, "bench: cannot apply the policy\n");
		return 1;
	}

	frame_udp_from(&f, "198.18.1.1");
	base = per_packet_ns(bare, &f);
	printf("%-46s %8s %8s\n", "case (BPF_PROG_TEST_RUN, median of 7 x 1M)", "ns/pkt",
	       "x bare");
	printf("%-46s %8.1f %8.2f\n", "bare XDP_DROP (baseline)", base, 1.0);
	if (argc > 1 && !strcmp(argv[1], "algos")) {
		algo_scenarios(base);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "memory")) {
		table_memory_rows();
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "bans")) {
		prefix_ban_rows(base);
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "cluster")) {
		cluster_scenarios(base);
		return 0;
	}
	run_cases(&fx, plain, sizeof(plain) / sizeof(plain[0]), base, 0);
	plain_min_rows(&fx, base);
	v2_rows(&fx2, base);
	fixture_close(&fx2);
	fixture_close(&fx);
	if (argc > 1 && !strcmp(argv[1], "plain"))
		return 0;
	algo_scenarios(base);
	cluster_scenarios(base);
	table_scenarios(base);
	prefix_ban_rows(base);
	close(bare);
	table_memory_rows();
	return 0;
}
