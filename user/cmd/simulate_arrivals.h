/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One simulate run's state, shared by simulate.c (the algorithms, the
 * report, the plot) and simulate_arrivals.c (the trace and the patterns). */
#ifndef SLUICE_SIMULATE_ARRIVALS_H
#define SLUICE_SIMULATE_ARRIVALS_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "rule.h"

enum sim_algo {
	A_TOKEN_BUCKET, A_LEAKY_QUEUE, A_FIXED_WINDOW, A_SLIDING_WINDOW, A_SLIDING_LOG, A_MAX,
};

enum sim_pattern { P_STEADY, P_BURSTY, P_BOUNDARY, P_RAMP, P_MAX };

/* The patterns' names, by enum sim_pattern; NULL-terminated. */
extern const char *const pattern_names[P_MAX + 1];

/* One run: the limit, the arrivals and what each algorithm made of them. */
struct sim {
	struct rule r;		/* rate and period as 'limit set' parses them */
	__u64 window_ns;
	__u64 budget;		/* N = rate x window */
	__u64 burst;		/* B */
	const char *source;	/* the trace's name or the pattern's */
	__u64 *t;		/* arrival times, ns, non-decreasing */
	size_t n, cap;
	__u8 *adm[A_MAX];	/* bit i: arrival i admitted */
	__u64 *depart;		/* leaky queue: when admitted arrivals leave it, ns */
	size_t admitted[A_MAX];
	__u64 max_in_window[A_MAX];
	__u64 delay_mean_ns, delay_max_ns;
	size_t over, under;	/* sliding-window admitted, log not; and back */
};

/* The arrivals of the trace file at path, in s; prints the error and
 * returns its exit code. */
int read_trace(struct sim *s, const char *path);
/* The pattern's arrivals from t = 0 for duration ns, in s; prints the
 * error and returns its exit code. */
int make_pattern(struct sim *s, enum sim_pattern p, __u64 duration);
/* A span for people: "1.5s", "250ms", "40us", "7ns" (simulate.c). */
void ns_words(__u64 ns, char *buf, size_t len);

#endif /* SLUICE_SIMULATE_ARRIVALS_H */
