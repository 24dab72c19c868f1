/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Fragments: a later fragment is judged by the L4 facts of its datagram's
 * first fragment, kept in the fragment table (frag_l4, sluice/frag.h), as
 * Cilium's ipv4_handle_fragmentation does. Part of sluice.bpf.c, included
 * by it after maps.h. */
#ifndef SLUICE_BPF_FRAG_H
#define SLUICE_BPF_FRAG_H

/*
 * The fragment table's key of the fragment in ctx whose source is src and
 * whose header offsets l4 has (parse.h): 0, or -1 when the frame does not
 * hold them (it always does for a fragment the parser let through).
 */
static __always_inline int frag_key(struct xdp_md *ctx, const struct sluice_src_key *src,
				    const struct l4 *l4, struct sluice_frag_key *k)
{
	void *data = (void *)(long)ctx->data, *end = (void *)(long)ctx->data_end;
	__u32 l3 = l4->l3, id_at = l4->id_at;
	struct ipv6hdr *ip6;
	struct iphdr *ip;
	__be32 *id;

	if (l3 > PARSE_L3_OFFSET_MAX || id_at > FRAG_ID_AT_MAX)
		return -1;
	__builtin_memset(k, 0, sizeof(*k));
	__builtin_memcpy(k->src, src->a, sizeof(k->src));
	k->family = src->family;
	if (src->family == SLUICE_FAMILY_V4) {
		ip = data + l3;
		if ((void *)(ip + 1) > end)
			return -1;
		k->dst[10] = 0xff;
		k->dst[11] = 0xff;
		__builtin_memcpy(&k->dst[12], &ip->daddr, sizeof(ip->daddr));
		k->id = ip->id;
		k->proto = ip->protocol;
		return 0;
	}
	ip6 = data + l3;
	id = data + l3 + id_at;
	if ((void *)(ip6 + 1) > end || (void *)(id + 1) > end)
		return -1;
	__builtin_memcpy(k->dst, &ip6->daddr, sizeof(k->dst));
	k->id = *id;
	return 0;
}

/*
 * A fragment (l4 has L4_FIRST_FRAG or L4_LATER_FRAG): the first of a
 * datagram records its L4 facts; a later one takes them, and loses
 * L4_LATER_FRAG, when its first was seen and is still remembered. A later
 * fragment left with L4_LATER_FRAG is an orphan (rule_bucket). Global, so
 * the verifier checks it once and the path of whole packets is unchanged.
 */
__noinline int frag_facts(struct xdp_md *ctx, const struct sluice_src_key *src, struct l4 *l4)
{
	struct sluice_frag_key k;
	struct sluice_frag_l4 v, *f;

	if (!ctx || !src || !l4 || frag_key(ctx, src, l4, &k))
		return 0;
	if (l4->flags & L4_FIRST_FRAG) {
		v.proto = l4->proto;
		v.flags = l4->flags & (L4_PORTS | L4_SYN);
		v.dport = l4->dport;
		bpf_map_update_elem(&frag_l4, &k, &v, BPF_ANY);
		return 0;
	}
	f = bpf_map_lookup_elem(&frag_l4, &k);
	if (!f)
		return 0;
	l4->proto = f->proto;
	l4->flags = f->flags;
	l4->dport = f->dport;
	return 1;
}

#endif /* SLUICE_BPF_FRAG_H */
