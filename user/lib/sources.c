// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Tracked-source counts: the source table's from the counters the datapath
 * keeps (src_stats); the keyed buckets' from the kernel's per-map element
 * counter, read through a BPF iterator, with a batched walk for small
 * tables and as the fallback. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "sources.h"
#include "output.h"
#include "maps.h"
#include "srctab.h"
#include "sources.skel.h"

#define ITER_BUF	4096

struct src_counter {
	struct sources_bpf *skel;
	struct bpf_link *link;
};

static int libbpf_silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

struct src_counter *src_counter_open(void)
{
	struct src_counter *c = calloc(1, sizeof(*c));
	libbpf_print_fn_t old;
	int err = 0;

	if (!c)
		return NULL;
	/* Failing here is normal on older kernels: say nothing, fall back. */
	old = libbpf_set_print(libbpf_silent);
	if (log_enabled(LOG_DEBUG))
		libbpf_set_print(old);
	c->skel = sources_bpf__open_and_load();
	if (!c->skel) {
		err = errno ? errno : EINVAL;
		goto out;
	}
	c->link = bpf_program__attach_iter(c->skel->progs.dump_source_counts, NULL);
	if (!c->link)
		err = errno ? errno : EINVAL;
out:
	libbpf_set_print(old);
	if (err) {
		src_counter_close(c);
		errno = err;
		return NULL;
	}
	return c;
}

void src_counter_close(struct src_counter *c)
{
	if (!c)
		return;
	bpf_link__destroy(c->link);
	sources_bpf__destroy(c->skel);
	free(c);
}

/* Each read of a fresh iterator fd runs the program over every map. */
long src_counter_get(const struct src_counter *c, __u32 id)
{
	char buf[ITER_BUF], *line, *end;
	size_t have = 0;
	long found = -ENOENT;
	ssize_t n;
	int fd;

	fd = bpf_iter_create(bpf_link__fd(c->link));
	if (fd < 0)
		return -errno;
	for (;;) {
		n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			found = -errno;
			break;
		}
		have += (size_t)n;
		buf[have] = '\0';
		/* Whole lines "ID COUNT\n"; keep a partial one for the next read. */
		line = buf;
		while ((end = strchr(line, '\n'))) {
			unsigned long mid;
			long long cnt;

			*end = '\0';
			if (sscanf(line, "%lu %lld", &mid, &cnt) == 2 && mid == id)
				found = cnt < 0 ? 0 : (long)cnt;
			line = end + 1;
		}
		have = strlen(line);
		memmove(buf, line, have);
		if (n == 0 || have == sizeof(buf) - 1)
			break;
	}
	close(fd);
	return found;
}

long sources_walk(int map_fd)
{
	return walk_keyed(map_fd, NULL, NULL);
}

/* A walk stops here; the iterator counts a bigger table. */
#define SOURCES_WALK_MAX	16384

static int walk_until_max(const struct sluice_src_key *k, const struct sluice_bucket *b, void *ctx)
{
	long *seen = ctx;

	(void)k;
	(void)b;
	return ++*seen > SOURCES_WALK_MAX;
}

/* A one-shot count: loading the iterator costs ~60 ms (libbpf parses the
 * kernel's BTF for it), a walk ~1 ms a few thousand sources; so a short
 * walk first, and the iterator only for a table bigger than that. */
long sources_count(int map_fd)
{
	struct src_counter *c;
	long seen = 0, n;
	__u32 id;

	n = walk_keyed(map_fd, walk_until_max, &seen);
	if (n >= 0 && n <= SOURCES_WALK_MAX && seen <= SOURCES_WALK_MAX)
		return n;
	c = src_counter_open();
	id = map_id(map_fd);
	n = -ENOENT;
	if (c && id)
		n = src_counter_get(c, id);
	src_counter_close(c);
	return n >= 0 ? n : sources_walk(map_fd);
}

/* The sum over the CPUs of stat's deltas, clamped to [0, max]. */
static int src_stat_sum(const struct sluice_maps *m, __u32 stat, __u64 max, __u64 *out)
{
	__u64 *vals = calloc((size_t)m->ncpus, sizeof(*vals));
	__u64 sum = 0;
	int err = 0;

	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(m->src_stats, &stat, vals)) {
		err = -errno;
	} else {
		for (int c = 0; c < m->ncpus; c++)
			sum += vals[c];	/* modulo 2^64: a CPU's deltas may sum below 0 */
		*out = (__s64)sum < 0 ? 0 : sum > max ? max : sum;
	}
	free(vals);
	return err;
}

int src_occupancy_read(const struct sluice_maps *m, struct src_occupancy *o)
{
	int err;

	memset(o, 0, sizeof(*o));
	o->slots = (__u64)map_capacity(m->src_table) * SLUICE_SLOTS_PER_BUCKET;
	if (!o->slots)
		return -EINVAL;
	err = src_stat_sum(m, SLUICE_SRC_STAT_LIVE, o->slots, &o->live);
	if (!err)
		err = src_stat_sum(m, SLUICE_SRC_STAT_ESTABLISHED, o->live, &o->established);
	if (!err)
		err = src_stat_sum(m, SLUICE_SRC_STAT_KEYED, o->live, &o->keyed);
	return err;
}

long table_sources(const struct sluice_maps *m)
{
	struct src_occupancy o;
	int err = src_occupancy_read(m, &o);

	return err ? err : (long)o.live;
}

long count_sources(const struct sluice_maps *m)
{
	long slots = table_sources(m), keyed;

	if (slots < 0)
		return slots;
	keyed = sources_count(m->src_buckets);
	return keyed < 0 ? keyed : slots + keyed;
}
