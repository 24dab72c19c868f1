// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* fill_sources: puts many sources into a pinned source table without
 * sending a packet, and counts a table independently of sluice.
 *
 *   fill_sources fill PIN N    inserts 2001:2::/48 keys 1..N (fresh buckets)
 *   fill_sources count PIN     prints the number of keys, walked one by one
 * Only the map's keys change: no traffic, no policy. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "sluice/sluice.h"

#define BATCH 8192

static void key_of(__u32 i, struct sluice_src_key *k)
{
	memset(k, 0, sizeof(*k));
	k->a[0] = 0x20;		/* 2001:2:: */
	k->a[1] = 0x01;
	k->a[3] = 0x02;
	k->a[12] = (__u8)(i >> 24);
	k->a[13] = (__u8)(i >> 16);
	k->a[14] = (__u8)(i >> 8);
	k->a[15] = (__u8)i;
	k->family = SLUICE_FAMILY_V6;
}

static int fill(int fd, __u32 n)
{
	struct sluice_src_key *keys = calloc(BATCH, sizeof(*keys));
	struct sluice_bucket *vals = calloc(BATCH, sizeof(*vals));
	__u32 i = 0;

	if (!keys || !vals)
		return 1;
	while (i < n) {
		__u32 c = 0;

		for (; c < BATCH && i < n; c++)
			key_of(++i, &keys[c]);
		if (bpf_map_update_batch(fd, keys, vals, &c, NULL)) {
			fprintf(stderr, "fill_sources: update_batch: %s\n", strerror(errno));
			return 1;
		}
	}
	free(keys);
	free(vals);
	return 0;
}

/* Key by key, the slow way: independent of sluice's own counting. */
static int count(int fd)
{
	struct sluice_src_key cur, next;
	void *prev = NULL;
	unsigned long n = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		cur = next;
		prev = &cur;
		n++;
	}
	if (errno != ENOENT) {
		fprintf(stderr, "fill_sources: get_next_key: %s\n", strerror(errno));
		return 1;
	}
	printf("%lu\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	int fd;

	if (argc < 3 || (strcmp(argv[1], "fill") && strcmp(argv[1], "count")) ||
	    (!strcmp(argv[1], "fill") && argc != 4)) {
		fprintf(stderr, "usage: fill_sources fill PIN N | fill_sources count PIN\n");
		return 2;
	}
	fd = bpf_obj_get(argv[2]);
	if (fd < 0) {
		fprintf(stderr, "fill_sources: %s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	if (!strcmp(argv[1], "count"))
		return count(fd);
	return fill(fd, (__u32)strtoul(argv[3], NULL, 10));
}
