/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The differential packet fuzzer's frame and policy generator
 * (fuzz_gen.c), as fuzz_pkt.c uses it: every frame and policy a function
 * of (seed, phase, index), and the count of each mutation made. */
#ifndef SLUICE_TEST_FUZZ_PKT_H
#define SLUICE_TEST_FUZZ_PKT_H

#include <stddef.h>
#include <linux/types.h>

#define FRAME_MAX	9000		/* the longest frame sent: a jumbo frame, */
#define LINEAR_MAX	512		/* all of whose headers lie in the first buffer */
#define CACHE_LINE	64		/* the kernel's SMP_CACHE_BYTES (x86-64) */
#define BUILD_MAX	10240		/* room while building */
#define PHASE_FRAMES	100000U		/* frames per policy (one program load) */
/* The program's source table: large enough that no phase's few thousand
 * sources fill both of a source's candidate buckets (the reference does
 * not model where a source sits, so a reclaim or a refusal would differ
 * from it; each phase checks that none happened). Two choices at this
 * size: about 10^-23 a new source, by the balanced-allocation fluid
 * limit; at 2048 it happens within a phase. */
#define MAX_SOURCES	65536U
#define REF_CAP		(1U << 18)	/* the reference's bucket table */
#define SWEEP_LEN	128U		/* truncation sweeps cover offsets 0..127 */
#define MAX_CPUS	256

struct rng {
	__u64 s;
};

/* ---- mutation kinds: what the generator did, for the summary ---- */

#define MUTATION_KINDS(X)						\
	X(vlan0) X(vlan1) X(vlan2) X(vlan3) X(vlan4) X(vlan_deep)	\
	X(qinq_8021ad)							\
	X(arp) X(non_ip) X(v4_tcp_syn) X(v4_tcp_other) X(v4_udp)	\
	X(v4_icmp) X(v4_other_l4) X(v4_options) X(v4_lying_ihl)		\
	X(v4_lying_totlen) X(v4_bad_version) X(v4_frag_first)		\
	X(v4_frag_later) X(v6_tcp_syn) X(v6_tcp_other) X(v6_udp)	\
	X(v6_icmpv6) X(v6_other_l4) X(v6_ext_chain) X(v6_ext_long)	\
	X(v6_ext_loop) X(v6_frag_first) X(v6_frag_later) X(v6_jumbo)	\
	X(v6_bad_version) X(v4_mapped_src) X(random_src)		\
	X(truncate) X(truncate_sweep) X(byte_flip) X(pad) X(jumbo_frame)
#define MK_ENUM(n) MK_##n,
enum mutation { MUTATION_KINDS(MK_ENUM) MK_MAX };
#undef MK_ENUM
extern const char *const mk_names[MK_MAX];
extern __u64 mk_count[MK_MAX];

/* The generator of (seed, a, b). */
struct rng rng_for(__u64 seed, __u64 a, __u64 b);
/* Frame idx of a phase into out (FRAME_MAX bytes); returns its length. */
size_t gen_frame(__u64 seed, __u32 phase, __u32 idx, __u8 *out);
/* The phase's policy as policy-file lines, and its new-source budget. */
void gen_policy(struct rng *r, char *text, size_t len, __u64 *budget);

#endif /* SLUICE_TEST_FUZZ_PKT_H */
