// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Map layouts from their BTF: whether two versions' maps hold the same
 * bytes, and the translation of an old entry into a new one field by field,
 * by the fields' names (a field the new version adds starts at zero, one it
 * drops is left behind). Integers of another width keep their low bytes:
 * sluice runs on little-endian machines only, as its ABI says. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include "output.h"
#include "upgrade_btf.h"

#define LAYOUT_DEPTH 8	/* nesting of structs and arrays followed */

static void layout(const struct btf *btf, __u32 id, char *buf, size_t len, int depth)
{
	int rid = btf__resolve_type(btf, id);
	const struct btf_type *t = rid < 0 ? NULL : btf__type_by_id(btf, (__u32)rid);

	if (!t || depth > LAYOUT_DEPTH) {
		str_append(buf, len, "?");
		return;
	}
	if (btf_is_composite(t)) {
		const struct btf_member *mb = btf_members(t);

		str_append(buf, len, "%c%u{", btf_is_union(t) ? 'u' : 's', t->size);
		for (__u16 i = 0; i < btf_vlen(t); i++) {
			str_append(buf, len, "%s@%u/%u:", btf__name_by_offset(btf, mb[i].name_off),
			    btf_member_bit_offset(t, i), btf_member_bitfield_size(t, i));
			layout(btf, mb[i].type, buf, len, depth + 1);
			str_append(buf, len, ",");
		}
		str_append(buf, len, "}");
	} else if (btf_is_array(t)) {
		str_append(buf, len, "[%u]", btf_array(t)->nelems);
		layout(btf, btf_array(t)->type, buf, len, depth + 1);
	} else {
		str_append(buf, len, "k%u:%u", btf_kind(t), t->size);
	}
}

bool btf_same_layout(const struct btf *a, __u32 aid, const struct btf *b, __u32 bid)
{
	char la[4096] = "", lb[4096] = "";

	if (!aid || !bid)
		return aid == bid;
	if (!a || !b)
		return false;
	layout(a, aid, la, sizeof(la), 0);
	layout(b, bid, lb, sizeof(lb), 0);
	return strcmp(la, lb) == 0;
}

/* The member of old struct t named as the new one (anonymous ones by
 * position), or -1. */
static int old_member(const struct btf *ob, const struct btf_type *ot, const char *name,
		      __u16 pos)
{
	const struct btf_member *mb = btf_members(ot);

	for (__u16 i = 0; i < btf_vlen(ot); i++) {
		const char *n = btf__name_by_offset(ob, mb[i].name_off);

		if (*name ? strcmp(n, name) == 0 : (!*n && i == pos))
			return i;
	}
	return -1;
}

static void translate(const struct btf *ob, __u32 oid, const __u8 *src, const struct btf *nb,
		      __u32 nid, __u8 *dst, int depth);

static void translate_members(const struct btf *ob, const struct btf_type *ot, const __u8 *src,
			      const struct btf *nb, const struct btf_type *nt, __u8 *dst,
			      int depth)
{
	const struct btf_member *nm = btf_members(nt), *om = btf_members(ot);

	for (__u16 i = 0; i < btf_vlen(nt); i++) {
		int k = old_member(ob, ot, btf__name_by_offset(nb, nm[i].name_off), i);

		/* A bit field is carried over only where it did not move. */
		if (k < 0 || btf_member_bitfield_size(nt, i) || btf_member_bitfield_size(ot, k)) {
			if (k >= 0 && btf_member_bitfield_size(nt, i) ==
					      btf_member_bitfield_size(ot, k) &&
			    btf_member_bit_offset(nt, i) == btf_member_bit_offset(ot, k))
				memcpy(dst + btf_member_bit_offset(nt, i) / 8,
				       src + btf_member_bit_offset(ot, k) / 8,
				       (btf_member_bitfield_size(nt, i) + 7) / 8);
			continue;
		}
		translate(ob, om[k].type, src + btf_member_bit_offset(ot, k) / 8, nb, nm[i].type,
			  dst + btf_member_bit_offset(nt, i) / 8, depth + 1);
	}
}

static void translate(const struct btf *ob, __u32 oid, const __u8 *src, const struct btf *nb,
		      __u32 nid, __u8 *dst, int depth)
{
	int orid = btf__resolve_type(ob, oid), nrid = btf__resolve_type(nb, nid);
	const struct btf_type *ot, *nt;

	if (orid < 0 || nrid < 0 || depth > LAYOUT_DEPTH)
		return;
	ot = btf__type_by_id(ob, (__u32)orid);
	nt = btf__type_by_id(nb, (__u32)nrid);
	if (btf_kind(ot) != btf_kind(nt))
		return;
	if (btf_is_composite(nt)) {
		translate_members(ob, ot, src, nb, nt, dst, depth);
	} else if (btf_is_array(nt)) {
		__s64 oes = btf__resolve_size(ob, btf_array(ot)->type);
		__s64 nes = btf__resolve_size(nb, btf_array(nt)->type);
		__u32 n = btf_array(ot)->nelems < btf_array(nt)->nelems ? btf_array(ot)->nelems :
									  btf_array(nt)->nelems;

		for (__u32 i = 0; i < n && oes > 0 && nes > 0; i++)
			translate(ob, btf_array(ot)->type, src + i * oes, nb, btf_array(nt)->type,
				  dst + i * nes, depth + 1);
	} else if (btf_is_int(nt) || btf_is_enum(nt) || btf_is_enum64(nt)) {
		memcpy(dst, src, ot->size < nt->size ? ot->size : nt->size);
	}
}

void btf_translate(const struct btf *ob, __u32 oid, const void *src, size_t osize,
		   const struct btf *nb, __u32 nid, void *dst, size_t nsize)
{
	memset(dst, 0, nsize);
	if (!oid || !nid || !ob || !nb) {
		memcpy(dst, src, osize < nsize ? osize : nsize);
		return;
	}
	translate(ob, oid, src, nb, nid, dst, 0);
}

static bool is_percpu(__u32 type)
{
	return type == BPF_MAP_TYPE_PERCPU_ARRAY || type == BPF_MAP_TYPE_PERCPU_HASH ||
	       type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}

/* One old entry (key ok, value ov) written to the new map as translated. */
static int copy_entry(const struct map_side *o, const struct map_side *n, int ncpus,
		      const void *ok, const __u8 *ov, void *nk, __u8 *nv)
{
	bool pc = is_percpu(n->info.type);
	size_t ovs = pc ? (o->info.value_size + 7U) & ~7U : o->info.value_size;
	size_t nvs = pc ? (n->info.value_size + 7U) & ~7U : n->info.value_size;

	btf_translate(o->btf, o->info.btf_key_type_id, ok, o->info.key_size, n->btf,
		      n->info.btf_key_type_id, nk, n->info.key_size);
	for (int c = 0; c < (pc ? ncpus : 1); c++)
		btf_translate(o->btf, o->info.btf_value_type_id, ov + (size_t)c * ovs,
			      o->info.value_size, n->btf, n->info.btf_value_type_id,
			      nv + (size_t)c * nvs, n->info.value_size);
	if (!bpf_map_update_elem(n->fd, nk, nv, BPF_ANY))
		return 0;
	/* An array that shrank, or a hash that did: the rest has no place. */
	return errno == E2BIG || errno == ENOSPC ? 0 : -errno;
}

static size_t all_cpus(const struct bpf_map_info *info, int ncpus)
{
	return is_percpu(info->type) ? ((info->value_size + 7U) & ~7U) * (size_t)ncpus :
				       info->value_size;
}

int btf_copy_map(const struct map_side *o, const struct map_side *n, int ncpus)
{
	__u8 *ok = calloc(1, o->info.key_size + 1), *next = calloc(1, o->info.key_size + 1);
	__u8 *nk = calloc(1, n->info.key_size + 1);
	__u8 *ov = calloc(1, all_cpus(&o->info, ncpus) + 1);
	__u8 *nv = calloc(1, all_cpus(&n->info, ncpus) + 1);
	int err = ok && next && nk && ov && nv ? 0 : -ENOMEM;
	bool first = true;

	while (!err) {
		if (bpf_map_get_next_key(o->fd, first ? NULL : ok, next)) {
			err = errno == ENOENT ? 1 : -errno;
			break;
		}
		first = false;
		memcpy(ok, next, o->info.key_size);
		if (bpf_map_lookup_elem(o->fd, ok, ov))
			continue;	/* gone meanwhile */
		err = copy_entry(o, n, ncpus, ok, ov, nk, nv);
	}
	free(ok);
	free(next);
	free(nk);
	free(ov);
	free(nv);
	return err == 1 ? 0 : err;
}

__u32 btf_inner_value_size(const struct btf *btf, const char *name)
{
	const struct btf_type *t, *m;
	const struct btf_member *mb;
	int id = btf ? btf__find_by_name_kind(btf, name, BTF_KIND_STRUCT) : -1;

	t = id > 0 ? btf__type_by_id(btf, (__u32)id) : NULL;
	if (!t)
		return 0;
	mb = btf_members(t);
	for (__u16 i = 0; i < btf_vlen(t); i++) {
		if (strcmp(btf__name_by_offset(btf, mb[i].name_off), "value_size") != 0)
			continue;
		/* __uint(value_size, N) is int (*value_size)[N]. */
		m = btf__type_by_id(btf, mb[i].type);
		m = m && btf_is_ptr(m) ? btf__type_by_id(btf, m->type) : NULL;
		return m && btf_is_array(m) ? btf_array(m)->nelems : 0;
	}
	return 0;
}
