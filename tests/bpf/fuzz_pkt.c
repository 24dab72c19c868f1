// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Differential packet fuzzer: generated and mutated frames run through the
 * real XDP program (BPF_PROG_TEST_RUN, policy committed by the CLI's code)
 * and through the reference classifier (refclass.c); the XDP action, the
 * reason counters, the per-rule counters and every bucket must agree, and
 * the per-CPU counters must sum to the frames sent on each CPU.
 *
 * Each frame is a function of (seed, phase, index), so a batch that
 * disagrees is replayed frame by frame on a fresh program to print the
 * first offending frame. `--variant short-ext` loads a build that walks
 * only 4 IPv6 extension headers (tests/bpf/sluice_shortext.bpf.c): the
 * fuzzer fails against it (exit 1, the first offending frame printed), and
 * `--prove`, as tests/list runs it, shows that before each real run.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <sched.h>
#include <time.h>
#include <bpf/btf.h>
#include "fixture.h"
#include "refclass.h"
#include "sluice_shortext.skel.h"
#include "fuzz_pkt.h"

/* ---- the run ---- */

/* The reasons in enum order, named as include/sluice/reasons.h lists them. */
#define REASON_NAME(id, name, drop, help) [SLUICE_R_##id] = name,
static const char *const reason_names[SLUICE_R_MAX] = { SLUICE_REASONS(REASON_NAME) };
#undef REASON_NAME

static struct {
	__u64 seed, frames, mismatches, refused;
	__u64 reasons[SLUICE_R_MAX];	/* frames per reason, agreed on */
	double seconds;
	const char *variant;
	int verbose;
	int quiet;	/* the self-test: only the closing lines */
	__u32 caught_phase, caught_frame;	/* the replay's first mismatch */
	size_t max_buckets;	/* the most buckets a phase took */
	size_t linear;		/* bytes of a frame in its first buffer */
	__u32 first_phase;	/* --phase */
	int cpus[MAX_CPUS], ncpus;	/* the CPUs the run is pinned to in turn */
	__u32 batch;
	int cpu_seen[MAX_CPUS];
} run = { .batch = 4096, .variant = "real" };

/* ---- policies: committed by the CLI's code, copied for the reference ---- */

static void ref_rule_of(const struct rule *cr, int is_default, struct ref_rule *rr)
{
	memset(rr, 0, sizeof(*rr));
	if (!is_default) {
		rr->family = cidr_family(&cr->cidr);
		memcpy(rr->addr, cr->cidr.addr.a, sizeof(rr->addr));
		rr->prefixlen = cr->cidr.prefixlen;
	}
	rr->mflags = cr->match.flags;
	rr->proto = cr->match.proto;
	rr->lo = cr->match.dport_lo;
	rr->hi = cr->match.dport_hi;
	rr->action = cr->action;
	/* doc/rules.rst: per source is the whole address, /LEN the family's own
	 * /LEN, per rule the rule's CIDR (one bucket). */
	if (cr->per == SLUICE_PER_PREFIX)
		rr->key_len = rr->family == SLUICE_FAMILY_V4 ? 96 + cr->per_len : cr->per_len;
	else if (cr->per == SLUICE_PER_RULE)
		rr->key_len = rr->prefixlen;
	else
		rr->key_len = SLUICE_KEY_LEN_SOURCE;
	rr->bytes = cr->unit == SLUICE_UNIT_BYTES;
	rr->burst = cr->burst;
	rr->ban = cr->ban_ns != 0;
	rr->monitor = cr->monitor;
	rr->index = (__u16)cr->index;
}

/* Commit the policy text to fx through the CLI's parser and commit, and
 * describe the same policy to the reference. */
static int apply_policy(struct fixture *fx, const char *text, __u64 budget, struct ref_policy *rp)
{
	struct policy *p = malloc(sizeof(*p));
	unsigned int i;
	int err;

	if (!p)
		return -ENOMEM;
	err = fixture_parse_policy(text, p);
	if (!err)
		err = policy_commit(&fx->m, p);
	if (!err && budget)
		err = new_sources_write(&fx->m, 1, SLUICE_PERIOD_HOUR, budget);
	if (!err && p->n > REF_MAX_RULES)
		err = -E2BIG;
	if (!err) {
		memset(rp, 0, sizeof(*rp));
		ref_rule_of(&p->def, 1, &rp->def);
		for (i = 0; i < p->n; i++)
			ref_rule_of(&p->rules[i], 0, &rp->rules[i]);
		rp->n = p->n;
		rp->new_sources = budget;
		rp->linear = run.linear;
	}
	free(p);
	return err;
}

#define say(...)						\
	do {							\
		if (!run.quiet)					\
			printf(__VA_ARGS__);			\
	} while (0)

/* The fragment table as large as the reference's, so that no first
 * fragment is forgotten within a phase (the reference keeps them all). */
static struct sluice_bpf *frag_sized(struct sluice_bpf *s)
{
	if (s && bpf_map__set_max_entries(s->maps.frag_l4, REF_CAP)) {
		sluice_bpf__destroy(s);
		return NULL;
	}
	return s;
}

static struct sluice_bpf *open_real(void)
{
	return frag_sized(sluice_bpf__open());
}

static struct sluice_bpf *open_shortext(void)
{
	return frag_sized((struct sluice_bpf *)sluice_shortext_bpf__open());
}

/* Sources the table reclaimed or refused so far. */
static int table_moves(struct fixture *fx, __u64 *n)
{
	__u64 a, b;

	if (read_event(&fx->m, SLUICE_EV_SOURCE_RECLAIMED, &a) ||
	    read_event(&fx->m, SLUICE_EV_SOURCE_REFUSED, &b))
		return -1;
	*n = a + b;
	return 0;
}

/* Before any packet ran: no source sits anywhere yet. */
static int set_src_seed(struct fixture *fx, __u64 seed)
{
	struct sluice_src_seed v = { .seed = seed };
	__u32 zero = 0;

	return bpf_map_update_elem(fx->m.src_seed, &zero, &v, BPF_ANY) ? -errno : 0;
}

static int load(struct fixture *fx)
{
	int err = fixture_open_with(fx, MAX_SOURCES, strcmp(run.variant, "short-ext") ? open_real : open_shortext);

	if (err) {
		fprintf(stderr, "fuzz_pkt: cannot load the XDP program: %s\n", strerror(-err));
		return err;
	}
	/* The table's hash seed from the run's, so that a replay on a fresh
	 * program places every source where the run did. */
	err = set_src_seed(fx, run.seed * 0x9e3779b97f4a7c15ULL | 1);
	if (err)
		fprintf(stderr, "fuzz_pkt: cannot set the source table's seed: %s\n", strerror(-err));
	return err;
}

static int test_run(int fd, const __u8 *frame, size_t len)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = (__u32)len, .repeat = 1);

	if (bpf_prog_test_run_opts(fd, &o))
		return -errno;
	return (int)o.retval;
}

/* Per-CPU reason counters: c[cpu * SLUICE_R_MAX + reason]. */
static int percpu_counters(struct fixture *fx, struct sluice_counter *c)
{
	__u32 reason;

	for (reason = 0; reason < SLUICE_R_MAX; reason++) {
		struct sluice_counter v[MAX_CPUS];
		int cpu;

		if (bpf_map_lookup_elem(fx->m.counters, &reason, v))
			return -errno;
		for (cpu = 0; cpu < fx->m.ncpus; cpu++)
			c[cpu * SLUICE_R_MAX + reason] = v[cpu];
	}
	return 0;
}

static int pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static void hex(const __u8 *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		say("%02x%s", p[i], (i + 1) % 32 == 0 || i + 1 == len ? "\n  " : "");
	say("(%zu bytes)\n", len);
}

static const char *xdp_name(int a)
{
	return a == XDP_PASS ? "pass" : a == XDP_DROP ? "drop" : "?";
}

static void print_key(const char *what, const struct sluice_src_key *k)
{
	char buf[128];

	format_source(k, buf, sizeof(buf));
	if (k->policy == SLUICE_KEY_HOME)
		say("  %s bucket %s (home)\n", what, buf);
	else
		say("  %s bucket %s key_len %u policy %u\n", what, buf, k->key_len, k->policy);
}

/*
 * Replay frames 0..upto of phase on a fresh program, one at a time, with
 * the action, the reason counters and the frame's bucket checked after
 * each; print the first that disagrees. Returns 1 when one was found.
 */
static int replay(__u32 phase, const char *policy, __u64 budget, __u32 upto)
{
	struct sluice_counter before[SLUICE_R_MAX], after[SLUICE_R_MAX];
	struct ref_policy *rp = calloc(1, sizeof(*rp));
	struct ref_state st = { 0 };
	struct fixture fx;
	__u8 frame[FRAME_MAX];
	__u32 i, reason;
	int found = 0;

	say("replaying phase %u frames 0..%u one at a time\n", phase, upto);
	if (!rp || ref_state_init(&st, REF_CAP) || load(&fx) ||
	    apply_policy(&fx, policy, budget, rp)) {
		say("replay: cannot set up\n");
		free(rp);
		return 0;
	}
	counters_now(&fx, before);
	for (i = 0; i <= upto && !found; i++) {
		size_t len = gen_frame(run.seed, phase, i, frame);
		struct ref_verdict v;
		struct sluice_bucket b;
		const struct ref_bucket *rb;
		int act = test_run(fx.prog_fd, frame, len), moved = -1, bad = 0, missing = 0;

		if (len < ETH_HLEN)
			continue;	/* refused by the kernel, checked by the run */
		ref_decide(rp, &st, frame, len, &v);
		counters_now(&fx, after);
		for (reason = 0; reason < SLUICE_R_MAX; reason++) {
			__u64 d = after[reason].packets - before[reason].packets;

			if (d == 1 && moved < 0)
				moved = (int)reason;
			else if (d)
				bad = 1;
		}
		memcpy(before, after, sizeof(after));
		bad |= act != v.xdp || moved != (int)v.reason;
		rb = v.bucketed ? ref_bucket_find(&st, &v.key) : NULL;
		if (rb) {
			missing = bucket_lookup(&fx.m, &v.key, &b) != 0;
			bad |= missing || b.passed != rb->passed || b.dropped != rb->dropped ||
			       b.would_drop != rb->would_drop;
		}
		if (!bad)
			continue;
		found = 1;
		run.caught_phase = phase;
		run.caught_frame = i;
		say("FIRST MISMATCH: phase %u frame %u (seed %llu)\n  policy: %s\n  frame: ", phase,
		       i, (unsigned long long)run.seed, policy);
		hex(frame, len);
		say("  program:   %s, reason %s\n", act < 0 ? strerror(-act) : xdp_name(act),
		       moved < 0 ? "(none or several)" : reason_names[moved]);
		say("  reference: %s, reason %s\n", xdp_name(v.xdp), reason_names[v.reason]);
		if (rb) {
			print_key("reference", &v.key);
			if (missing)
				say("  bucket passed/dropped/would-drop: program has no such bucket, "
				    "reference %u/%u/%u\n", rb->passed, rb->dropped, rb->would_drop);
			else
				say("  bucket passed/dropped/would-drop: program %u/%u/%u, reference "
				    "%u/%u/%u\n", b.passed, b.dropped, b.would_drop, rb->passed,
				    rb->dropped, rb->would_drop);
		}
	}
	if (!found)
		say("replay: no single frame disagrees (the batch's disagreement did not recur)\n");
	fixture_close(&fx);
	ref_state_free(&st);
	free(rp);
	return found;
}

/* Every bucket of the program's table against the reference's. */
static int check_buckets(struct fixture *fx, const struct ref_state *st, __u32 phase)
{
	struct bucket_row *rows;
	size_t n, i;
	int bad = 0;

	if (read_buckets(&fx->m, &rows, &n))
		return 1;
	for (i = 0; i < n && bad < 5; i++) {
		const struct ref_bucket *rb = ref_bucket_find(st, &rows[i].key);

		if (rb && rb->passed == rows[i].b.passed && rb->dropped == rows[i].b.dropped &&
		    rb->would_drop == rows[i].b.would_drop)
			continue;
		say("MISMATCH phase %u: bucket not as the reference has it\n", phase);
		print_key("program", &rows[i].key);
		say("  passed/dropped/would-drop: program %u/%u/%u, reference %s%u/%u/%u\n",
		    rows[i].b.passed, rows[i].b.dropped, rows[i].b.would_drop,
		    rb ? "" : "(no such bucket) ", rb ? rb->passed : 0, rb ? rb->dropped : 0,
		    rb ? rb->would_drop : 0);
		bad++;
	}
	if (!bad && n != st->n) {
		say("MISMATCH phase %u: %zu buckets in the program's table, %zu in the reference's\n",
		       phase, n, st->n);
		bad++;
	}
	free(rows);
	return bad;
}

/* Per-rule counters against the reference's. */
static int check_policy_counters(struct fixture *fx, const __u64 (*pred)[2], __u32 phase)
{
	struct sluice_policy_counter pc;
	__u32 idx;
	int bad = 0;

	for (idx = 0; idx < SLUICE_MAX_POLICIES && bad < 5; idx++) {
		if (read_policy_counter(&fx->m, idx, &pc))
			return 1;
		if (pc.pass_packets == pred[idx][0] && pc.drop_packets == pred[idx][1])
			continue;
		say("MISMATCH phase %u: policy %u pass/drop program %llu/%llu, reference %llu/%llu\n",
		       phase, idx, (unsigned long long)pc.pass_packets,
		       (unsigned long long)pc.drop_packets, (unsigned long long)pred[idx][0],
		       (unsigned long long)pred[idx][1]);
		bad++;
	}
	return bad;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Back to a fresh program's state without loading it again (the verifier
 * takes about a second): no buckets, no fragments, no per-rule counts, no
 * new-source budget spent. The reason counters are read as deltas. */
static int reset_state(struct fixture *fx)
{
	static __u8 zeros[MAX_CPUS * sizeof(struct sluice_policy_counter)];
	struct sluice_frag_key fk, fk_next;
	struct sluice_config cfg;
	struct srctab t;
	__u32 zero = 0, idx;
	size_t n;

	/* The fragment table: each key found before its entry goes. */
	for (n = !bpf_map_get_next_key(fx->m.frag_l4, NULL, &fk); n;) {
		n = !bpf_map_get_next_key(fx->m.frag_l4, &fk, &fk_next);
		if (bpf_map_delete_elem(fx->m.frag_l4, &fk))
			return -errno;
		fk = fk_next;
	}
	/* The source table's slots, home and keyed, emptied in place: no
	 * program runs. */
	if (srctab_open(&fx->m, &t))
		return -1;
	memset(t.tab, 0, (size_t)t.nbuckets * sizeof(*t.tab));
	memset(t.cnt, 0, (size_t)t.nbuckets * sizeof(*t.cnt));
	srctab_close(&t);
	for (idx = 0; idx < SLUICE_MAX_POLICIES; idx++)
		if (bpf_map_update_elem(fx->m.policy_counters, &idx, zeros, BPF_ANY))
			return -errno;
	if (new_sources_write(&fx->m, 0, 0, 0) ||
	    bpf_map_lookup_elem(fx->m.config, &zero, &cfg))
		return -1;
	cfg.new_tat = 0;
	return bpf_map_update_elem(fx->m.config, &zero, &cfg, BPF_ANY) ? -errno : 0;
}

/*
 * The counters after a batch of frames start..end, all run on CPU target
 * (ran of them: the kernel refuses the shortest): per reason as the
 * reference predicted, and each frame under exactly one reason, on the CPU
 * it ran on. c0 and c1 are the per-CPU counters before and after. Returns
 * 1 on a mismatch (printed), else 0.
 */
/* A phase's verdicts per policy rule: passed [0] and dropped [1]. */
static __u64 pol_pred[SLUICE_MAX_POLICIES][2];

static int check_batch(const struct fixture *fx, const struct sluice_counter *c0,
		       const struct sluice_counter *c1, const __u64 (*pred)[2], __u32 phase,
		       __u32 start, __u32 end, int target, __u32 ran)
{
	__u32 reason;
	int cpu;

	for (reason = 0; reason < SLUICE_R_MAX; reason++) {
		__u64 pk = 0, by = 0;

		for (cpu = 0; cpu < fx->m.ncpus; cpu++) {
			pk += c1[cpu * SLUICE_R_MAX + reason].packets -
			      c0[cpu * SLUICE_R_MAX + reason].packets;
			by += c1[cpu * SLUICE_R_MAX + reason].bytes -
			      c0[cpu * SLUICE_R_MAX + reason].bytes;
		}
		if (pk != pred[reason][0] || by != pred[reason][1]) {
			say("MISMATCH phase %u frames %u..%u: %s counted %llu packets %llu bytes, reference %llu packets %llu bytes\n",
			       phase, start, end, reason_names[reason], (unsigned long long)pk,
			       (unsigned long long)by, (unsigned long long)pred[reason][0],
			       (unsigned long long)pred[reason][1]);
			return 1;
		}
	}
	/* Conservation: each frame under exactly one reason, on the CPU it
	 * ran on. */
	for (cpu = 0; cpu < fx->m.ncpus; cpu++) {
		__u64 sum = 0;

		for (reason = 0; reason < SLUICE_R_MAX; reason++)
			sum += c1[cpu * SLUICE_R_MAX + reason].packets -
			       c0[cpu * SLUICE_R_MAX + reason].packets;
		if (sum != (cpu == target ? ran : 0)) {
			say("MISMATCH phase %u frames %u..%u: CPU %d counted %llu frames under its reasons, %u were run on CPU %d\n",
			       phase, start, end, cpu, (unsigned long long)sum, ran, target);
			return 1;
		}
	}
	return 0;
}

/*
 * The next batch of a phase from frame *i on (at most `room` run), through
 * the program and the reference: pred gets the reference's packets and
 * bytes per reason, pol_pred its verdicts per policy rule, *ran the frames
 * run, *i the next frame. Returns 1 on a mismatch (printed), else 0.
 */
static int run_batch(struct fixture *fx, __u32 phase, __u32 *i, __u64 room,
		     struct ref_policy *rp, struct ref_state *st, __u64 (*pred)[2], __u32 *ran)
{
	__u8 frame[FRAME_MAX];
	__u32 start = *i;

	memset(pred, 0, sizeof(__u64[SLUICE_R_MAX][2]));
	*ran = 0;
	for (; *ran < room && *i - start < run.batch; (*i)++) {
		size_t len = gen_frame(run.seed, phase, *i, frame);
		struct ref_verdict v;
		int act = test_run(fx->prog_fd, frame, len);

		if (len < ETH_HLEN) {
			/* The kernel runs no frame shorter than an Ethernet
			 * header (nor does a NIC deliver one). */
			if (act != -EINVAL) {
				say("MISMATCH phase %u frame %u: a %zu-byte frame was run: %d\n",
				       phase, *i, len, act);
				(*i)++;
				return 1;
			}
			run.refused++;
			continue;
		}
		(*ran)++;
		ref_decide(rp, st, frame, len, &v);
		run.reasons[v.reason]++;
		pred[v.reason][0]++;
		pred[v.reason][1] += len;
		if (v.policy >= 0)
			pol_pred[v.policy][sluice_reason_is_drop(v.reason)]++;
		if (act != v.xdp) {
			say("MISMATCH phase %u frame %u: action %s, reference %s (%s)\n",
			       phase, *i, act < 0 ? strerror(-act) : xdp_name(act),
			       xdp_name(v.xdp), reason_names[v.reason]);
			(*i)++;
			return 1;
		}
	}
	return 0;
}

/*
 * One phase: the program reset, a policy, `frames` frames run in batches,
 * each batch on the next CPU. Returns 0 while everything agrees, 1 on a
 * mismatch (printed, with the replay), -1 on an error.
 */
static int phase_run(struct fixture *fx, __u32 phase, __u64 frames, double deadline, __u64 *sent)
{
	static struct sluice_counter c0[MAX_CPUS * SLUICE_R_MAX], c1[MAX_CPUS * SLUICE_R_MAX];
	struct rng r = rng_for(run.seed, phase, 0xc0ffeeULL);
	struct ref_policy *rp = calloc(1, sizeof(*rp));
	struct ref_state st = { 0 };
	__u64 pred[SLUICE_R_MAX][2], budget, taken0 = 0, taken = 0, phase_ran = 0;
	__u64 moved0 = 0, moved = 0;
	char policy[4096];
	__u32 i = 0, start, ran;
	int bad = 0, ret = -1;

	gen_policy(&r, policy, sizeof(policy), &budget);
	if (run.verbose)
		say("phase %u: policy: %s%s\n", phase, policy, budget ? "; limit new-sources" : "");
	if (!rp || ref_state_init(&st, REF_CAP)) {
		free(rp);
		return -1;
	}
	if (reset_state(fx) || apply_policy(fx, policy, budget, rp) || fx->m.ncpus > MAX_CPUS ||
	    percpu_counters(fx, c0) || read_event(&fx->m, SLUICE_EV_NEW_SOURCE_ADMITTED, &taken0) ||
	    table_moves(fx, &moved0)) {
		fprintf(stderr, "fuzz_pkt: cannot set up phase %u\n", phase);
		goto out;
	}
	memset(pol_pred, 0, sizeof(pol_pred));
	while (phase_ran < frames && !bad) {
		int target = run.cpus[(phase + i / run.batch) % (unsigned int)run.ncpus];

		if (now_s() > deadline)
			break;
		if (pin_cpu(target)) {
			fprintf(stderr, "fuzz_pkt: cannot pin to CPU %d: %s\n", target, strerror(errno));
			goto out;
		}
		start = i;
		bad = run_batch(fx, phase, &i, frames - phase_ran, rp, &st, pred, &ran);
		if (percpu_counters(fx, c1))
			goto out;
		if (!bad)
			bad = check_batch(fx, c0, c1, (const __u64 (*)[2])pred, phase, start, i - 1,
					  target, ran);
		if (!bad)
			run.cpu_seen[target] = 1;
		memcpy(c0, c1, sizeof(struct sluice_counter) * SLUICE_R_MAX * (size_t)fx->m.ncpus);
		*sent += ran;
		phase_ran += ran;
	}
	if (!bad)
		bad = check_buckets(fx, &st, phase) || check_policy_counters(fx, (const __u64 (*)[2])pol_pred, phase);
	/* Every bucket taken is one new_source_admitted event. */
	if (!bad && (read_event(&fx->m, SLUICE_EV_NEW_SOURCE_ADMITTED, &taken) ||
		     taken - taken0 != st.n)) {
		say("MISMATCH phase %u: %llu new_source_admitted events, the reference took %zu buckets\n",
		    phase, (unsigned long long)(taken - taken0), st.n);
		bad = 1;
	}
	/* The reference keeps every source it saw; the program's table would
	 * differ from it only by a reclaim or a refusal (MAX_SOURCES). */
	if (table_moves(fx, &moved) == 0 && moved != moved0) {
		say("%s phase %u: the source table reclaimed or refused %llu sources (both candidate buckets full), which the reference does not model (MAX_SOURCES too small)\n",
		    bad ? "  and in" : "MISMATCH", phase, (unsigned long long)(moved - moved0));
		bad = 1;
	}
	if (st.n > run.max_buckets)
		run.max_buckets = st.n;
	if (bad) {
		run.mismatches++;
		say("  policy: %s%s\n", policy, budget ? "; limit new-sources" : "");
		say("  rerun: fuzz_pkt --seed %llu --phase %u --frames %u\n",
		    (unsigned long long)run.seed, phase, PHASE_FRAMES);
		replay(phase, policy, budget, i ? i - 1 : 0);
	}
	ret = bad ? 1 : 0;
out:
	ref_state_free(&st);
	free(rp);
	return ret;
}

/* Phases until frames are sent, the deadline passes or a mismatch;
 * returns phase_run's verdict, *phases the phases begun. */
static int fuzz(__u64 frames, double deadline, __u64 *sent, __u32 *phases)
{
	struct fixture fx;
	__u32 phase;
	int r = 0;

	if (load(&fx))
		return -1;
	for (phase = run.first_phase; (!frames || *sent < frames) && now_s() < deadline; phase++) {
		__u64 left = frames ? frames - *sent : PHASE_FRAMES;

		r = phase_run(&fx, phase, left < PHASE_FRAMES ? left : PHASE_FRAMES, deadline, sent);
		if (r) {
			phase++;
			break;
		}
	}
	*phases = phase - run.first_phase;
	fixture_close(&fx);
	return r;
}

/* --prove: the variant whose parser walks only 4 IPv6 extension headers
 * must be caught, quietly, before the real run; so a pass means the
 * checks can fail. Returns 0 when it was caught. */
static int prove_it(void)
{
	const char *variant = run.variant;
	__u64 sent = 0;
	__u32 phases;
	int r;

	run.variant = "short-ext";
	run.quiet = 1;
	r = fuzz(PHASE_FRAMES, now_s() + 60, &sent, &phases);
	run.quiet = 0;
	run.variant = variant;
	if (r != 1 || !run.mismatches) {
		printf("FAIL fuzz_pkt: the short-ext variant (4 IPv6 extension headers walked, not %d) went uncaught in %llu frames\n",
		       SLUICE_MAX_IPV6_EXT_HDRS, (unsigned long long)sent);
		return 1;
	}
	printf("fuzz_pkt: the short-ext variant was caught, first at phase %u frame %u\n",
	       run.caught_phase, run.caught_frame);
	memset(mk_count, 0, sizeof(mk_count));
	memset(run.reasons, 0, sizeof(run.reasons));
	memset(run.cpu_seen, 0, sizeof(run.cpu_seen));
	run.mismatches = run.refused = 0;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: fuzz_pkt [--seed N] [--phase P] [--frames N] [--seconds S]\n"
		"                [--batch K] [--variant real|short-ext] [--prove] [--verbose]\n"
		"Run generated and mutated frames through sluice's XDP program and a\n"
		"reference classifier; stop at the first disagreement (exit 1).\n"
		"Stops after N frames or S seconds, whichever comes first; given only\n"
		"one, the other is unbounded (default: 10000000 frames, 60 seconds;\n"
		"0 means no bound of that kind). --batch: frames per counter check\n"
		"(default 4096). The seed defaults to the time and is printed; --phase\n"
		"starts at phase P (of 100000 frames each), to rerun a mismatch.\n"
		"--prove: first show that the short-ext variant (a parser walking too\n"
		"few IPv6 extension headers) is caught, else fail.\n");
}

static int parse_num(const char *opt, const char *s, __u64 max, __u64 *out)
{
	if (!parse_u64(s, 0, max, out)) {
		fprintf(stderr, "fuzz_pkt: %s wants a whole number from 0 to %llu, got '%s': see --help\n",
			opt, (unsigned long long)max, s);
		return -1;
	}
	return 0;
}

/* The command line's bounds and mode. */
struct fuzz_opts {
	__u64 frames, seconds;
	int got_frames, got_seconds, prove;
};

/* One option c: -1 to go on, else the exit status. */
static int take_opt(int c, char **argv, struct fuzz_opts *o)
{
	__u64 batch, v;

	switch (c) {
	case 's':
		if (parse_num("--seed", optarg, ~0ULL, &run.seed))
			return 2;
		break;
	case 'n':
		if (parse_num("--frames", optarg, 1ULL << 48, &o->frames))
			return 2;
		o->got_frames = 1;
		break;
	case 't':
		if (parse_num("--seconds", optarg, 365ULL * 86400, &o->seconds))
			return 2;
		o->got_seconds = 1;
		break;
	case 'b':
		if (parse_num("--batch", optarg, PHASE_FRAMES, &batch))
			return 2;
		if (!batch) {
			fprintf(stderr, "fuzz_pkt: --batch must be at least 1: see --help\n");
			return 2;
		}
		run.batch = (__u32)batch;
		break;
	case 'P':
		if (parse_num("--phase", optarg, 0xffffffffULL, &v))
			return 2;
		run.first_phase = (__u32)v;
		break;
	case 'v':
		if (strcmp(optarg, "real") != 0 && strcmp(optarg, "short-ext") != 0) {
			fprintf(stderr, "fuzz_pkt: --variant is real or short-ext, got '%s': see --help\n",
				optarg);
			return 2;
		}
		run.variant = optarg;
		break;
	case 'V':
		run.verbose = 1;
		break;
	case 'p':
		o->prove = 1;
		break;
	case 'h':
		usage(stdout);
		return 0;
	default:
		fprintf(stderr, "fuzz_pkt: unknown option or missing value: '%s': see --help\n",
			argv[optind - 1]);
		return 2;
	}
	return -1;
}

/* The command line into o: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct fuzz_opts *o)
{
	static const struct option lo[] = {
		{ "seed", required_argument, NULL, 's' },
		{ "phase", required_argument, NULL, 'P' },
		{ "frames", required_argument, NULL, 'n' },
		{ "seconds", required_argument, NULL, 't' },
		{ "batch", required_argument, NULL, 'b' },
		{ "variant", required_argument, NULL, 'v' },
		{ "verbose", no_argument, NULL, 'V' },
		{ "prove", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, r;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1)
		if ((r = take_opt(c, argv, o)) >= 0)
			return r;
	if (optind < argc) {
		fprintf(stderr, "fuzz_pkt: unexpected argument '%s': see --help\n", argv[optind]);
		return 2;
	}
	if (o->got_frames != o->got_seconds) {
		if (!o->got_frames)
			o->frames = 0;
		else
			o->seconds = 0;
	}
	if (!o->frames && !o->seconds) {
		fprintf(stderr, "fuzz_pkt: --frames 0 and --seconds 0 would never stop: bound one\n");
		return 2;
	}
	return -1;
}

/* The closing lines: what ran, by reason, and the verdict r. */
static void print_summary(__u64 sent, __u32 phase, double took, int r)
{
	char seen[MAX_CPUS * 4] = "";
	__u64 kinds = 0;
	int i;

	for (i = 0; i < MK_MAX; i++)
		kinds += mk_count[i] != 0;
	for (i = 0; i < run.ncpus; i++)
		if (run.cpu_seen[run.cpus[i]])
			snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen), "%s%d",
				 seen[0] ? "," : "", run.cpus[i]);
	if (run.verbose)
		for (i = 0; i < MK_MAX; i++)
			printf("  %-18s %llu\n", mk_names[i], (unsigned long long)mk_count[i]);
	printf("fuzz_pkt: by reason:");
	for (i = 0; i < SLUICE_R_MAX; i++)
		printf(" %s %llu", reason_names[i], (unsigned long long)run.reasons[i]);
	printf("\n");
	printf("fuzz_pkt: %llu shorter than an Ethernet header, refused by the kernel as they should be; at most %zu buckets in a phase (table of %u)\n",
	       (unsigned long long)run.refused, run.max_buckets, MAX_SOURCES);
	printf("fuzz_pkt: %llu frames in %u phases, %.1f s (%.0f frames/s), %llu mutation kinds, %llu mismatches, conservation %s on CPUs %s\n",
	       (unsigned long long)sent, phase, took, sent / (took > 0 ? took : 1),
	       (unsigned long long)kinds, (unsigned long long)run.mismatches,
	       r ? "checked up to the mismatch" : "held", seen[0] ? seen : "(none)");
}

/*
 * How much of a frame BPF_PROG_TEST_RUN puts in the first buffer, where
 * the program reads headers; the rest goes to fragments (multi-buffer): a
 * page less the XDP headroom and the skb_shared_info at its end, aligned
 * to the cache line (net/bpf/test_run.c), its size read from the
 * kernel's BTF. 0 when the BTF cannot say.
 */
static size_t test_run_linear(void)
{
	struct btf *btf = btf__load_vmlinux_btf();
	long page = sysconf(_SC_PAGESIZE);
	__s64 sz = -1;
	__s32 id;

	if (!btf)
		return 0;
	id = btf__find_by_name_kind(btf, "skb_shared_info", BTF_KIND_STRUCT);
	if (id > 0)
		sz = btf__resolve_size(btf, (__u32)id);
	btf__free(btf);
	if (sz <= 0 || page <= XDP_PACKET_HEADROOM + sz)
		return 0;
	return (size_t)page - XDP_PACKET_HEADROOM - (((size_t)sz + CACHE_LINE - 1) & ~(CACHE_LINE - 1));
}

int main(int argc, char **argv)
{
	struct fuzz_opts o = { .frames = 10000000, .seconds = 60 };
	double t0, deadline;
	__u64 sent = 0;
	cpu_set_t all;
	__u32 phase = 0;
	int i, r;

	run.seed = (__u64)time(NULL);
	r = parse_args(argc, argv, &o);
	if (r >= 0)
		return r;
	if (geteuid() != 0) {
		printf("fuzz_pkt: needs root for BPF_PROG_TEST_RUN\n");
		return 77;
	}
	run.linear = test_run_linear();
	if (!run.linear) {
		fprintf(stderr, "fuzz_pkt: cannot tell the first buffer's size from the kernel's BTF (struct skb_shared_info)\n");
		return 1;
	}
	if (sched_getaffinity(0, sizeof(all), &all)) {
		fprintf(stderr, "fuzz_pkt: cannot read the CPU affinity: %s\n", strerror(errno));
		return 1;
	}
	for (i = 0; i < MAX_CPUS && i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &all))
			run.cpus[run.ncpus++] = i;
	libbpf_set_print(NULL);
	printf("fuzz_pkt: seed %llu, variant %s, headers read from the first %zu bytes\n",
	       (unsigned long long)run.seed, run.variant, run.linear);
	fflush(stdout);
	if (o.prove && prove_it())
		return 1;
	t0 = now_s();
	deadline = o.seconds ? t0 + (double)o.seconds : 1e300;
	r = fuzz(o.frames, deadline, &sent, &phase);
	print_summary(sent, phase, now_s() - t0, r);
	if (r < 0)
		return 1;
	return r ? 1 : 0;
}
