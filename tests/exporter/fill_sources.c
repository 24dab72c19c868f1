// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* fill_sources: puts many sources into a pinned source table without
 * sending a packet, and counts a table independently of sluice.
 *
 *   fill_sources fill DIR N    puts 2001:2::/48 sources 1..N into free slots
 *                              of the source table pinned under DIR (fresh
 *                              buckets); prints how many found one
 *   fill_sources count DIR     prints the live slots (home and keyed
 *                              buckets), slot by slot
 * Only the table changes: no traffic, no policy. The slots are written in
 * place, through an mmap of the pinned array, as the XDP program's claim
 * writes them (include/sluice/srctab.h gives the two candidate buckets),
 * and counted as it counts them: the slots it took empty are added to
 * src_stats' LIVE (on the first CPU; a read-modify-write, so the table
 * must be quiet meanwhile). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "sluice/sluice.h"
#include "sluice/srctab.h"

struct table {
	struct sluice_slot_bucket *tab;
	size_t len;
	__u32 n;
	__u64 seed;
	int stats;	/* src_stats */
};

static int open_pin(const char *dir, const char *name)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		fprintf(stderr, "fill_sources: %s: %s\n", path, strerror(errno));
	return fd;
}

static int table_open(const char *dir, struct table *t)
{
	int cfd = open_pin(dir, "config"), tfd = open_pin(dir, "src_table");
	int sfd = open_pin(dir, "src_seed");	/* root's alone: this runs as root */
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info), zero = 0;
	struct sluice_src_seed seed;
	struct sluice_config cfg;

	t->stats = open_pin(dir, "src_stats");
	if (cfd < 0 || tfd < 0 || sfd < 0 || t->stats < 0 ||
	    bpf_map_lookup_elem(cfd, &zero, &cfg) || bpf_map_lookup_elem(sfd, &zero, &seed) ||
	    bpf_obj_get_info_by_fd(tfd, &info, &len))
		return -1;
	t->n = info.max_entries;
	t->seed = seed.seed;
	t->len = ((size_t)t->n * sizeof(*t->tab) + 4095) / 4096 * 4096;
	t->tab = mmap(NULL, t->len, PROT_READ | PROT_WRITE, MAP_SHARED, tfd, 0);
	if (t->tab == MAP_FAILED || t->n < 2 || cfg.src_buckets != t->n) {
		fprintf(stderr, "fill_sources: cannot map the source table\n");
		return -1;
	}
	return 0;
}

static void addr_of(__u32 i, __u8 a[SLUICE_ADDR_LEN])
{
	memset(a, 0, SLUICE_ADDR_LEN);
	a[0] = 0x20;		/* 2001:2:: */
	a[1] = 0x01;
	a[3] = 0x02;
	a[12] = (__u8)(i >> 24);
	a[13] = (__u8)(i >> 16);
	a[14] = (__u8)(i >> 8);
	a[15] = (__u8)i;
}

static int empties(const struct sluice_slot_bucket *b)
{
	int e = 0;

	for (__u32 k = 0; k < SLUICE_SLOTS_PER_BUCKET; k++)
		e += !(b->s[k].ctl & SLUICE_SLOT_STATE_MASK);
	return e;
}

/* A free slot of source i's two buckets, the emptier first, as the XDP
 * program takes them, claimed: 1, or 0 if both are full. */
static int put(struct table *t, __u32 i)
{
	__u8 a[SLUICE_ADDR_LEN];
	__u64 a0, a1;
	__u32 b[2];

	addr_of(i, a);
	memcpy(&a0, a, sizeof(a0));
	memcpy(&a1, a + sizeof(a0), sizeof(a1));
	srctab_pick(srctab_hash(a0, a1, SLUICE_FAMILY_V6, t->seed), t->n, &b[0], &b[1]);
	if (empties(&t->tab[b[1]]) > empties(&t->tab[b[0]])) {
		__u32 x = b[0];

		b[0] = b[1];
		b[1] = x;
	}
	for (int j = 0; j < 2; j++)
		for (__u32 k = 0; k < SLUICE_SLOTS_PER_BUCKET; k++) {
			struct sluice_slot *s = &t->tab[b[j]].s[k];

			if (s->ctl & SLUICE_SLOT_STATE_MASK)
				continue;
			if (!__sync_bool_compare_and_swap(&s->ctl, 0, SLUICE_SLOT_CLAIMING))
				continue;
			memcpy(s->a, a, sizeof(s->a));
			s->tat = 0;
			__atomic_store_n(&s->ctl, SLUICE_SLOT_LIVE | SLUICE_SLOT_V6 |
				       SLUICE_SLOT_VER_ONE, __ATOMIC_RELEASE);
			return 1;
		}
	return 0;
}

/* n more slots held, in src_stats' LIVE, as the XDP program counts them. */
static int count_held(struct table *t, unsigned long n)
{
	int ncpus = libbpf_num_possible_cpus();
	__u32 key = SLUICE_SRC_STAT_LIVE;
	__u64 *v;
	int r = 1;

	if (ncpus <= 0)
		return 1;
	v = calloc((size_t)ncpus, sizeof(*v));
	if (v && !bpf_map_lookup_elem(t->stats, &key, v)) {
		v[0] += n;
		r = bpf_map_update_elem(t->stats, &key, v, BPF_EXIST) ? 1 : 0;
	}
	if (r)
		fprintf(stderr, "fill_sources: src_stats: %s\n", strerror(errno));
	free(v);
	return r;
}

static int fill(struct table *t, __u32 n)
{
	unsigned long put_in = 0;

	for (__u32 i = 1; i <= n; i++)
		put_in += put(t, i);
	if (count_held(t, put_in))
		return 1;
	printf("%lu\n", put_in);
	return 0;
}

/* Slot by slot, the slow way: independent of sluice's own
 * counting. */
static int count(struct table *t)
{
	unsigned long n = 0;

	for (__u32 b = 0; b < t->n; b++)
		for (__u32 k = 0; k < SLUICE_SLOTS_PER_BUCKET; k++)
			n += (t->tab[b].s[k].ctl & SLUICE_SLOT_STATE_MASK) == SLUICE_SLOT_LIVE;
	printf("%lu\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	struct table t;

	if (argc < 3 || (strcmp(argv[1], "fill") && strcmp(argv[1], "count")) ||
	    (!strcmp(argv[1], "fill") && argc != 4)) {
		fprintf(stderr, "usage: fill_sources fill DIR N | fill_sources count DIR\n");
		return 2;
	}
	if (table_open(argv[2], &t))
		return 1;
	if (!strcmp(argv[1], "count"))
		return count(&t);
	return fill(&t, (__u32)strtoul(argv[3], NULL, 10));
}
