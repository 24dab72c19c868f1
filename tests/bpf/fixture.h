/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shared by the BPF tests and the benchmark: load sluice's XDP program
 * without attaching it, drive its policy through the CLI's own commit path,
 * run crafted frames through BPF_PROG_TEST_RUN and read its counters. */
#ifndef SLUICE_TEST_FIXTURE_H
#define SLUICE_TEST_FIXTURE_H

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <netinet/tcp.h>
#include <linux/in.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core.h"
#include "rule.h"
#include "sluice.skel.h"

struct options opts;

/* Opens a skeleton with sluice's layout (a test may build a variant). */
typedef struct sluice_bpf *(*skel_open_fn)(void);

struct fixture {
	struct sluice_bpf *skel;
	struct sluice_maps m;
	int prog_fd;
	/* What a loaded program was opened with and sized for (set once it
	 * is ready), so fixture_fresh can keep it. */
	skel_open_fn opened_with;
	__u32 max_sources;
};

/* What attach does once the program is loaded and fx's map descriptors
 * are set: seed the source table, then commit the initial policy. */
static inline int fixture_finish(struct fixture *fx, __u32 max_sources)
{
	struct policy *p;
	int err;

	fx->m.lock = -1;
	fx->m.ncpus = libbpf_num_possible_cpus();
	snprintf(fx->m.iface, sizeof(fx->m.iface), "test");
	err = srctab_init(&fx->m, max_sources);
	if (err)
		return err;
	p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	policy_init(p);
	err = policy_commit(&fx->m, p);
	free(p);
	return err;
}


static inline int fixture_open_with(struct fixture *fx, __u32 max_sources,
				    skel_open_fn open_skel)
{
	int err;

	memset(fx, 0, sizeof(*fx));
	fx->skel = open_skel();
	if (!fx->skel)
		return -errno;
	if (!max_sources)
		max_sources = SLUICE_MAX_SOURCES_DEFAULT;
	err = srctab_size(fx->skel->maps.src_table, fx->skel->maps.src_counts, max_sources);
	if (err)
		return err;
	err = sluice_bpf__load(fx->skel);
	if (err)
		return err;
	fx->prog_fd = bpf_program__fd(fx->skel->progs.sluice_xdp);
#define MAP_FD(name) fx->m.name = bpf_map__fd(fx->skel->maps.name);
	SLUICE_MAPS(MAP_FD)
#undef MAP_FD
	err = fixture_finish(fx, max_sources);
	if (err)
		return err;
	fx->opened_with = open_skel;
	fx->max_sources = max_sources;
	return 0;
}

static inline int fixture_open(struct fixture *fx, __u32 max_sources)
{
	return fixture_open_with(fx, max_sources, sluice_bpf__open);
}

/* A BPF test's start: as root, with the program loaded into fx. 0, or the
 * exit status to end with: 77 (skipped: not root) or 1 (cannot load). */
static inline int fixture_main_open(struct fixture *fx)
{
	if (geteuid() != 0) {
		printf("needs root for BPF_PROG_TEST_RUN\n");
		return 77;
	}
	if (fixture_open(fx, 0)) {
		printf("FAIL load: cannot load the XDP program: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

static inline void fixture_close(struct fixture *fx)
{
	sluice_bpf__destroy(fx->skel);
	fx->skel = NULL;
	fx->opened_with = NULL;
}

/* Every value of array map fd (n values of esz bytes each, all CPUs' for a
 * per-CPU one) set to zero, as the kernel makes them. */
static inline int fixture_zero_array(int fd, __u32 n, size_t esz)
{
	__u32 chunk = (__u32)(esz < (1U << 20) ? (1U << 20) / esz : 1), done, cnt;
	__u32 *keys;
	void *zeros;
	int err = 0;

	if (chunk > n)
		chunk = n;
	keys = calloc(chunk ? chunk : 1, sizeof(*keys));
	zeros = calloc(chunk ? chunk : 1, esz);
	for (done = 0; keys && zeros && !err && done < n; done += cnt) {
		cnt = n - done < chunk ? n - done : chunk;
		for (__u32 i = 0; i < cnt; i++)
			keys[i] = done + i;
		if (bpf_map_update_batch(fd, keys, zeros, &cnt, NULL))
			err = -errno;
	}
	if (!keys || !zeros)
		err = -ENOMEM;
	free(keys);
	free(zeros);
	return err;
}

/* Every entry of a hash, LRU hash or trie map fd (keys of ksz bytes)
 * deleted: its keys gathered a batch at a time, then deleted. */
static inline int fixture_empty_keyed(int fd, __u32 ksz)
{
	enum { BATCH = 4096 };
	__u8 *keys = malloc((size_t)BATCH * ksz);
	int err = 0;
	__u32 n;

	if (!keys)
		return -ENOMEM;
	do {
		n = 0;
		if (!bpf_map_get_next_key(fd, NULL, keys))
			for (n = 1; n < BATCH; n++)
				if (bpf_map_get_next_key(fd, keys + (size_t)(n - 1) * ksz,
							 keys + (size_t)n * ksz))
					break;
		for (__u32 i = 0; i < n && !err; i++)
			if (bpf_map_delete_elem(fd, keys + (size_t)i * ksz) && errno != ENOENT)
				err = -errno;
	} while (n && !err);
	free(keys);
	return err;
}

/* Map back to what loading the program made it: an array's values zero,
 * a hash's, trie's and queue's entries gone, a map-in-map's slots empty.
 * -EOPNOTSUPP for a kind it cannot bring back (global data that is not
 * read-only, say): then the program must be loaded anew. */
static inline int fixture_map_clear(struct bpf_map *map)
{
	__u32 n = bpf_map__max_entries(map), ksz = bpf_map__key_size(map);
	size_t vsz = bpf_map__value_size(map);
	int fd = bpf_map__fd(map), ncpus;
	__u8 value[256];

	switch (bpf_map__type(map)) {
	case BPF_MAP_TYPE_ARRAY:
		if (bpf_map__is_internal(map))	/* .rodata is frozen; .data cannot be */
			return bpf_map__map_flags(map) & BPF_F_RDONLY_PROG ? 0 : -EOPNOTSUPP;
		return fixture_zero_array(fd, n, vsz);
	case BPF_MAP_TYPE_PERCPU_ARRAY:
		ncpus = libbpf_num_possible_cpus();
		if (ncpus <= 0)
			return ncpus ? ncpus : -EINVAL;
		return fixture_zero_array(fd, n, (size_t)ncpus * ((vsz + 7) / 8 * 8));
	case BPF_MAP_TYPE_HASH:
	case BPF_MAP_TYPE_LRU_HASH:
	case BPF_MAP_TYPE_PERCPU_HASH:
	case BPF_MAP_TYPE_LRU_PERCPU_HASH:
	case BPF_MAP_TYPE_LPM_TRIE:
	case BPF_MAP_TYPE_HASH_OF_MAPS:
		return fixture_empty_keyed(fd, ksz);
	case BPF_MAP_TYPE_ARRAY_OF_MAPS:
		for (__u32 i = 0; i < n; i++)
			if (bpf_map_delete_elem(fd, &i) && errno != ENOENT)
				return -errno;
		return 0;
	case BPF_MAP_TYPE_QUEUE:
	case BPF_MAP_TYPE_STACK:
		if (vsz > sizeof(value))
			return -EOPNOTSUPP;
		while (!bpf_map_lookup_and_delete_elem(fd, NULL, value))
			;
		return errno == ENOENT ? 0 : -errno;
	default:
		return -EOPNOTSUPP;
	}
}

/* The program as fixture_open_with left it, without loading it again:
 * every map cleared (fixture_map_clear), then seeded and the initial
 * policy committed as at load. Verifying the program takes seconds a
 * load, so cases that each want a fresh program share one this way. */
static inline int fixture_reset(struct fixture *fx)
{
	struct bpf_map *map;
	int err;

	if (!fx->skel || !fx->opened_with)
		return -EINVAL;
	bpf_object__for_each_map(map, fx->skel->obj) {
		err = fixture_map_clear(map);
		if (err)
			return err;
	}
	return fixture_finish(fx, fx->max_sources);
}

/* A case's start: a program of open_skel for max_sources (0: the default)
 * whose maps hold nothing any earlier case left. The loaded one when it
 * is of the same kind and size, reset; otherwise loaded anew. */
static inline int fixture_fresh(struct fixture *fx, __u32 max_sources, skel_open_fn open_skel)
{
	if (!max_sources)
		max_sources = SLUICE_MAX_SOURCES_DEFAULT;
	if (fx->skel && fx->opened_with == open_skel && fx->max_sources == max_sources &&
	    !fixture_reset(fx))
		return 0;
	fixture_close(fx);
	return fixture_open_with(fx, max_sources, open_skel);
}

/* Parse a policy written as policy-file lines separated by ';' into p,
 * with the CLI's own rule parser (user/lib/rule.c). */
static inline int fixture_parse_policy(const char *text, struct policy *p)
{
	char *copy = strdup(text), *save = NULL, *line, why[256];
	int err = 0, n;

	if (!copy)
		return -ENOMEM;
	policy_init(p);
	for (line = strtok_r(copy, ";", &save); line && !err; line = strtok_r(NULL, ";", &save)) {
		enum rule_verb verb;
		struct rule r;

		n = rule_parse_line(line, &r, &verb, why, sizeof(why));
		if (n < 0 || (n > 0 && verb == RULE_DEL)) {
			fprintf(stderr, "fixture policy: %s\n", n < 0 ? why : "no limit del here");
			err = -EINVAL;
		} else if (n > 0 && verb == RULE_DEFAULT) {
			p->def = r;
			p->def.index = SLUICE_POLICY_DEFAULT;
		} else if (n > 0 && policy_put(p, &r, why, sizeof(why))) {
			fprintf(stderr, "fixture policy: %s\n", why);
			err = -EINVAL;
		}
	}
	free(copy);
	return err;
}

/* Apply a policy written as fixture_parse_policy reads it. */
static inline int fixture_policy(struct fixture *fx, const char *text)
{
	struct policy *p = malloc(sizeof(*p));
	int err;

	if (!p)
		return -ENOMEM;
	err = fixture_parse_policy(text, p);
	if (!err)
		err = policy_commit(&fx->m, p);
	free(p);
	return err;
}

/* Frame builder: Ethernet, optional VLAN tags, IPv4 or IPv6, UDP. */
struct frame {
	__u8 buf[512];
	size_t len;
};

/* The IPv6 fragment header (RFC 8200 4.5), for crafted fragments. */
struct v6_frag {
	__u8 nexthdr;
	__u8 reserved;
	__be16 frag_off;	/* offset | M */
	__be32 identification;
};

static inline void *frame_put(struct frame *f, const void *data, size_t n)
{
	void *at = f->buf + f->len;

	if (data)
		memcpy(at, data, n);
	else
		memset(at, 0, n);
	f->len += n;
	return at;
}

static inline void frame_eth(struct frame *f, __u16 proto)
{
	struct ethhdr eth = { .h_dest = { 2, 0, 0, 0, 0, 2 },
			      .h_source = { 2, 0, 0, 0, 0, 1 },
			      .h_proto = htons(proto) };

	f->len = 0;
	frame_put(f, &eth, sizeof(eth));
}

/* Append a VLAN tag; the tag's inner protocol is `inner`. */
static inline void frame_vlan(struct frame *f, __u16 inner)
{
	__be16 tag[2] = { htons(100), htons(inner) };

	frame_put(f, tag, sizeof(tag));
}

static inline struct iphdr *frame_ipv4(struct frame *f, const char *src, __u8 ihl)
{
	struct iphdr *ip = frame_put(f, NULL, (size_t)ihl * 4);

	ip->version = 4;
	ip->ihl = ihl;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons((__u16)(ihl * 4 + sizeof(struct udphdr)));
	inet_pton(AF_INET, src, &ip->saddr);
	inet_pton(AF_INET, "198.18.0.2", &ip->daddr);
	return ip;
}

static inline struct ipv6hdr *frame_ipv6(struct frame *f, const char *src, __u8 nexthdr)
{
	struct ipv6hdr *ip6 = frame_put(f, NULL, sizeof(*ip6));

	ip6->version = 6;
	ip6->nexthdr = nexthdr;
	ip6->hop_limit = 64;
	inet_pton(AF_INET6, src, &ip6->saddr);
	inet_pton(AF_INET6, "2001:2::2", &ip6->daddr);
	return ip6;
}

static inline void frame_udp(struct frame *f)
{
	struct udphdr udp = { .source = htons(4000), .dest = htons(5000),
			      .len = htons(sizeof(udp)) };

	frame_put(f, &udp, sizeof(udp));
}

/* Ethernet + IPv4/UDP or IPv6/UDP from src. */
static inline void frame_udp_from(struct frame *f, const char *src)
{
	if (strchr(src, ':')) {
		frame_eth(f, ETH_P_IPV6);
		frame_ipv6(f, src, IPPROTO_UDP);
	} else {
		frame_eth(f, ETH_P_IP);
		frame_ipv4(f, src, 5);
	}
	frame_udp(f);
}

/* Ethernet + IPv4 or IPv6 from src with L4 protocol proto, and room for
 * an L4 header of l4_len bytes; the frame is padded to size bytes. */
static inline void *frame_l4(struct frame *f, const char *src, __u8 proto, size_t l4_len, size_t size)
{
	struct iphdr *ip;
	void *l4;

	if (strchr(src, ':')) {
		frame_eth(f, ETH_P_IPV6);
		frame_ipv6(f, src, proto)->payload_len = htons((__u16)l4_len);
	} else {
		frame_eth(f, ETH_P_IP);
		ip = frame_ipv4(f, src, 5);
		ip->protocol = proto;
		ip->tot_len = htons((__u16)(sizeof(*ip) + l4_len));
	}
	l4 = frame_put(f, NULL, l4_len);
	if (size > f->len && size <= sizeof(f->buf))
		frame_put(f, NULL, size - f->len);
	return l4;
}

static inline void frame_udp_to(struct frame *f, const char *src, __u16 dport)
{
	struct udphdr *u = frame_l4(f, src, IPPROTO_UDP, sizeof(*u), 0);

	u->source = htons(4000);
	u->dest = htons(dport);
	u->len = htons(sizeof(*u));
}

static inline void frame_tcp(struct frame *f, const char *src, __u16 dport, int syn, int ack)
{
	struct tcphdr *t = frame_l4(f, src, IPPROTO_TCP, sizeof(*t), 0);

	t->source = htons(40000);
	t->dest = htons(dport);
	t->doff = sizeof(*t) / 4;
	t->syn = syn ? 1 : 0;
	t->ack = ack ? 1 : 0;
}

/* Run the frame `repeat` times; returns the last XDP action or -errno. */
static inline int run_frame(struct fixture *fx, const struct frame *f, __u32 repeat,
			    __u32 *duration_ns)
{
	__u8 out[sizeof(f->buf)];
	LIBBPF_OPTS(bpf_test_run_opts, o,
		.data_in = f->buf,
		.data_size_in = (__u32)f->len,
		.data_out = out,
		.data_size_out = sizeof(out),
		.repeat = repeat,
	);
	int err = bpf_prog_test_run_opts(fx->prog_fd, &o);

	if (err)
		return -errno;
	if (duration_ns)
		*duration_ns = o.duration;
	return (int)o.retval;
}

/* Send frame f n times, one run each; returns how many passed. */
static inline __u64 send_n_frames(struct fixture *fx, const struct frame *f, unsigned int n)
{
	__u64 passed = 0;

	for (unsigned int i = 0; i < n; i++)
		if (run_frame(fx, f, 1, NULL) == XDP_PASS)
			passed++;
	return passed;
}

static inline void counters_now(struct fixture *fx, struct sluice_counter c[SLUICE_R_MAX])
{
	if (read_counters(&fx->m, c))
		memset(c, 0, sizeof(struct sluice_counter) * SLUICE_R_MAX);
}

static inline int bucket_of(struct fixture *fx, const char *src, struct sluice_bucket *b)
{
	struct sluice_src_key k;

	if (parse_source(src, &k))
		return -EINVAL;
	return bucket_lookup(&fx->m, &k, b);
}

/* Overwrite the passed and dropped counts of src's slot in place. */
static inline int set_source_counts(struct fixture *fx, const char *src, __u32 passed,
				    __u32 dropped)
{
	struct sluice_slot_count *n;
	struct sluice_src_key k;
	struct srctab t;
	long at;

	if (parse_source(src, &k) || srctab_open(&fx->m, &t))
		return -EINVAL;
	at = srctab_find(&t, &k);
	if (at >= 0) {
		n = &t.cnt[at / SLUICE_SLOTS_PER_BUCKET].c[at % SLUICE_SLOTS_PER_BUCKET];
		n->passed = passed;
		n->dropped = dropped;
	}
	srctab_close(&t);
	return at >= 0 ? 0 : -ENOENT;
}

/* The bucket of IPv6 packets from src: parse_source takes ::ffff:a.b.c.d
 * as the IPv4 source, the datapath keys such a packet as IPv6. */
static inline int bucket_of_v6(struct fixture *fx, const char *src, struct sluice_bucket *b)
{
	struct sluice_src_key k;

	if (parse_source(src, &k))
		return -EINVAL;
	k.family = SLUICE_FAMILY_V6;
	return bucket_lookup(&fx->m, &k, b);
}

#endif /* SLUICE_TEST_FIXTURE_H */
