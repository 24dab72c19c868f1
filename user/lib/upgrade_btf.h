/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Map layouts compared and translated through their BTF (upgrade_btf.c). */
#ifndef SLUICE_UPGRADE_BTF_H
#define SLUICE_UPGRADE_BTF_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/bpf.h>
#include <linux/types.h>

struct btf;

/* One map of one version: its fd, what the kernel says of it, and the BTF
 * its key and value type ids refer to (NULL: none). */
struct map_side {
	int fd;
	struct bpf_map_info info;
	const struct btf *btf;
};

/* Whether type aid of a and bid of b lay out the same bytes: the same
 * sizes, and the same fields by name at the same offsets, all the way
 * down. Two absent types (id 0) are the same. */
bool btf_same_layout(const struct btf *a, __u32 aid, const struct btf *b, __u32 bid);
/* dst (nsize bytes, zeroed first) gets src's fields by name; without type
 * information, src's bytes as far as they go. */
void btf_translate(const struct btf *ob, __u32 oid, const void *src, size_t osize,
		   const struct btf *nb, __u32 nid, void *dst, size_t nsize);
/* The value size an inner map template of btf declares (a struct such as
 * bpf/maps.h's ban_trie_inner, by name, with __uint(value_size, N)): N,
 * or 0 when btf has no such template or does not say. */
__u32 btf_inner_value_size(const struct btf *btf, const char *name);
/* Every entry of o into n, translated (per CPU for per-CPU maps). Entries
 * that no longer fit (a shorter array) are left out. 0 or -errno. */
int btf_copy_map(const struct map_side *o, const struct map_side *n, int ncpus);

#endif /* SLUICE_UPGRADE_BTF_H */
