/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Window unit tests: a model of two CPUs racing on one state word. */
#include "window_test.h"

/* ---- race model ---- */

/*
 * Two CPUs admit packets into one word around a window boundary, each
 * attempt in three steps as bpf/sluice.bpf.c judge_step takes them: read
 * the word; read the clock and compute (limit_admit); compare-and-swap.
 * Every interleaving of the two CPUs' steps is run, with the boundary
 * between any two consecutive steps (step k reads the clock B + k - j).
 * After each, the admissions in CAS order are replayed on the reference
 * counts: none may fall in a window before the last one's (a window reset
 * twice, or rolled back), none may exceed the budget, and the word must
 * hold the replayed counts (no count lost). The same model with the clock
 * read before the word, or a plain store for the CAS, must lose counts.
 */
enum race_mode { RACE_CAS, RACE_CLOCK_FIRST, RACE_STORE };

#define RACE_PKTS	2
#define RACE_STEPS	40

struct cpu {
	int pc;		/* 0 read, 1 compute, 2 CAS; 3 done */
	int pkt;
	int clock_read;
	__u64 seen, now, next;
};

struct race {
	const struct sluice_limit *l;
	enum race_mode mode;
	__u64 B, j, st0;
	__u64 word;
	int step;
	struct cpu cpu[2];
	__u64 at[2 * RACE_PKTS], cost[2 * RACE_PKTS];
	int nadm;
	int bad;	/* a lost count found */
	__u64 runs;
};

static __u64 race_clock(const struct race *r)
{
	return r->B + (__u64)r->step - r->j;
}

/* Replays the admissions on reference counts; 1 if all is well. */
static int race_verify(const struct race *r)
{
	const struct sluice_limit *l = r->l;
	__u64 W = l->interval, N = l->tolerance, idx, prev, cur, last, p, c;
	int i;

	/* Before B the word holds st0's counts, read through the API. */
	idx = (r->B - 1) / W;
	if (l->algo == SLUICE_ALGO_FIXED_WINDOW) {
		prev = 0;
		cur = fw_count(r->st0, r->B - 1, W, N);
	} else {
		sw_counts(r->st0, idx, l->bits, &prev, &cur);
	}
	for (i = 0; i < r->nadm; i++) {
		__u64 w = r->at[i] / W;

		if (w < idx)
			return 0;	/* an admission in a window already left */
		if (w == idx + 1) {
			prev = cur;
			cur = 0;
		} else if (w > idx + 1) {
			prev = cur = 0;
		}
		idx = w;
		cur += r->cost[i];
		if (cur > N)
			return 0;
	}
	if (!r->nadm)
		return r->word == r->st0;
	last = idx * W;
	if (l->algo == SLUICE_ALGO_FIXED_WINDOW)
		return fw_count(r->word, last, W, N) == cur;
	sw_counts(r->word, idx, l->bits, &p, &c);
	return p == prev && c == cur;
}

static void race_explore(struct race *r)
{
	int k, progressed = 0;

	if (r->bad || r->step >= RACE_STEPS)
		return;
	for (k = 0; k < 2; k++) {
		struct cpu save = r->cpu[k];
		__u64 word = r->word;
		int nadm = r->nadm;
		struct cpu *c = &r->cpu[k];

		if (c->pc == 3)
			continue;
		progressed = 1;
		if (r->mode == RACE_CLOCK_FIRST && c->pc == 0 && !c->clock_read) {
			c->now = race_clock(r);
			c->clock_read = 1;
		} else if (c->pc == 0) {
			c->seen = r->word;
			c->pc = 1;
		} else if (c->pc == 1) {
			if (r->mode != RACE_CLOCK_FIRST)
				c->now = race_clock(r);
			if (limit_admit(r->l, c->seen, c->now, 1, &c->next)) {
				c->pc = 2;
			} else {	/* rejected: the next packet */
				c->pc = ++c->pkt < RACE_PKTS ? 0 : 3;
				c->clock_read = 0;
			}
		} else {
			if (r->mode == RACE_STORE || r->word == c->seen) {
				r->word = c->next;
				r->at[r->nadm] = c->now;
				r->cost[r->nadm++] = 1;
				c->pc = ++c->pkt < RACE_PKTS ? 0 : 3;
			} else {
				c->pc = 0;	/* lost the race: judge again */
			}
			c->clock_read = 0;
		}
		r->step++;
		race_explore(r);
		r->step--;
		r->cpu[k] = save;
		r->word = word;
		r->nadm = nadm;
		if (r->bad)
			return;
	}
	if (!progressed) {
		r->runs++;
		if (!race_verify(r))
			r->bad = 1;
	}
}

/* Runs every interleaving for every boundary position; returns whether a
 * lost count was found, and the count of interleavings in *runs. */
static int race_all(const struct sluice_limit *l, enum race_mode mode, __u64 st0, __u64 B,
		    __u64 *runs)
{
	struct race r = { .l = l, .mode = mode, .B = B, .st0 = st0 };

	for (r.j = 0; r.j <= 16 && !r.bad; r.j++) {
		memset(r.cpu, 0, sizeof(r.cpu));
		r.word = st0;
		r.step = 0;
		r.nadm = 0;
		race_explore(&r);
	}
	*runs += r.runs;
	return r.bad;
}

void case_race_model(void)
{
	static const __u64 budgets[] = { 1, 2, 3, 4 };
	size_t k, s;
	int a;
	__u64 runs = 0, broken_runs = 0;
	int clock_first_caught = 0, store_caught = 0;

	for (a = SLUICE_ALGO_FIXED_WINDOW; a <= SLUICE_ALGO_SLIDING_WINDOW; a++)
		for (k = 0; k < ARRAY_LEN(budgets); k++) {
			__u64 N = budgets[k], W = MS, B = 1234 * W;
			struct sluice_limit l = lim_of((__u8)a, W, N, 0);
			__u64 states[6];
			size_t ns = 0;

			/* Empty; partly and fully spent in the window before B. */
			states[ns++] = 0;
			for (s = 1; s <= N; s++) {
				__u64 st = 0, n;

				for (n = 0; n < s; n++)
					CHECK(judge(&l, &st, B - W + n, 1), "setup");
				states[ns++] = st;
			}
			for (s = 0; s < ns; s++) {
				CHECK(!race_all(&l, RACE_CAS, states[s], B, &runs),
				      "%s N=%llu word %llu: a count lost with CAS",
				      algo_word((__u8)a), (ull)N, (ull)states[s]);
				clock_first_caught |= race_all(&l, RACE_CLOCK_FIRST, states[s], B,
							       &broken_runs);
				store_caught |= race_all(&l, RACE_STORE, states[s], B, &broken_runs);
			}
		}
	CHECK(runs > 10000, "only %llu interleavings", (ull)runs);
	CHECK(clock_first_caught, "reading the clock before the word loses nothing");
	CHECK(store_caught, "a plain store for the CAS loses nothing");
}
