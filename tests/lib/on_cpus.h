/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The race tests' one way to hammer from every CPU at once: n threads, one
 * pinned to each of CPUs 0..n-1, held at a barrier until all are ready and
 * then released together, each running body(cpu, ctx). */
#ifndef SLUICE_TEST_ON_CPUS_H
#define SLUICE_TEST_ON_CPUS_H

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <linux/types.h>

typedef int (*on_cpu_fn)(int cpu, void *ctx);

struct on_cpu {
	pthread_t tid;
	pthread_barrier_t *line;
	on_cpu_fn body;
	void *ctx;
	int cpu, err;
};

static void *on_cpu_thread(void *arg)
{
	struct on_cpu *w = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	w->err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	pthread_barrier_wait(w->line); /* even unpinned: no thread is left waiting */
	if (!w->err)
		w->err = w->body(w->cpu, w->ctx);
	return NULL;
}

static inline __u64 on_cpus_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

/* Runs body on CPUs 0..n-1 at once. *t0: just before the release; *t1:
 * when the last has finished. 0, or the first error: a CPU that could not
 * be pinned (errno value), or what a body returned (non-zero). */
static inline int on_every_cpu(int n, on_cpu_fn body, void *ctx, __u64 *t0, __u64 *t1)
{
	struct on_cpu *w = calloc((size_t)n, sizeof(*w));
	pthread_barrier_t line;
	int err = 0, started = 0;

	*t0 = *t1 = on_cpus_now_ns();
	if (!w)
		return ENOMEM;
	pthread_barrier_init(&line, NULL, (unsigned int)n + 1);
	for (int i = 0; i < n; i++) {
		w[i] = (struct on_cpu){ .line = &line, .body = body, .ctx = ctx, .cpu = i };
		if (pthread_create(&w[i].tid, NULL, on_cpu_thread, &w[i]))
			abort(); /* the barrier would wait for it forever */
		started++;
	}
	*t0 = on_cpus_now_ns();
	pthread_barrier_wait(&line);
	for (int i = 0; i < started; i++) {
		pthread_join(w[i].tid, NULL);
		if (w[i].err && !err)
			err = w[i].err;
	}
	*t1 = on_cpus_now_ns();
	pthread_barrier_destroy(&line);
	free(w);
	return err;
}

#endif /* SLUICE_TEST_ON_CPUS_H */
