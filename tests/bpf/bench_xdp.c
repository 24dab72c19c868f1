// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Per-packet cost of sluice's XDP program next to a bare XDP_DROP, measured
 * side by side through BPF_PROG_TEST_RUN in one run (the machine is noisy,
 * so only ratios measured together mean anything). */
#include <linux/bpf.h>
#include <stdio.h>
#include <unistd.h>
#include "fixture.h"

#define BENCH_REPEAT	1000000
#define BENCH_ROUNDS	7

static int load_bare_drop(void)
{
	struct bpf_insn insns[] = {
		/* r0 = XDP_DROP; exit */
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_DROP },
		{ .code = BPF_JMP | BPF_EXIT },
	};

	return bpf_prog_load(BPF_PROG_TYPE_XDP, "bare_drop", "GPL", insns,
			     sizeof(insns) / sizeof(insns[0]), NULL);
}

/* Median of BENCH_ROUNDS runs of `repeat` packets, in ns per packet. */
static double per_packet_ns(int prog_fd, const struct frame *f)
{
	double v[BENCH_ROUNDS], t;
	__u8 out[sizeof(f->buf)];

	for (int r = 0; r < BENCH_ROUNDS; r++) {
		LIBBPF_OPTS(bpf_test_run_opts, o,
			.data_in = f->buf, .data_size_in = (__u32)f->len,
			.data_out = out, .data_size_out = sizeof(out),
			.repeat = BENCH_REPEAT);

		if (bpf_prog_test_run_opts(prog_fd, &o))
			return -1;
		v[r] = o.duration;
	}
	for (int i = 1; i < BENCH_ROUNDS; i++)	/* insertion sort */
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[BENCH_ROUNDS / 2];
}

struct bench_case {
	const char *name;
	const char *src;	/* NULL: an ARP frame */
};

int main(void)
{
	static const struct bench_case cases[] = {
		{ "ipv4 known source, within limit (pass)", "198.18.1.1" },
		{ "ipv4 known source, rate limited (drop)", "198.18.2.1" },
		{ "ipv4 denied source (drop)", "198.18.3.1" },
		{ "ipv4 allowed source (pass)", "198.18.4.1" },
		{ "ipv6 known source, rate limited (drop)", "2001:2::1" },
		{ "non-IP frame (pass)", NULL },
	};
	struct fixture fx;
	struct frame f;
	char policy[64 * 1024];
	size_t off;
	int bare;
	double base;

	if (geteuid() != 0) {
		fprintf(stderr, "bench: needs root for BPF_PROG_TEST_RUN\n");
		return 77;
	}
	bare = load_bare_drop();
	if (bare < 0 || fixture_open(&fx, 0)) {
		fprintf(stderr, "bench: cannot load programs: %s\n", strerror(errno));
		return 1;
	}
	/* A realistic policy: a default and 1000 other prefixes in the trie. */
	off = (size_t)snprintf(policy, sizeof(policy),
			       "limit default --rate 100 --burst 100;"
			       "limit set 198.18.1.0/24 --rate 1000000000 --burst 1000000000;"
			       "limit set 198.18.2.0/24 --rate 1 --burst 1;"
			       "deny 198.18.3.0/24;allow 198.18.4.0/24;"
			       "limit set 2001:2::/64 --rate 1 --burst 1;");
	for (int i = 0; i < 1000 && off < sizeof(policy) - 64; i++)
		off += (size_t)snprintf(policy + off, sizeof(policy) - off,
					"limit set 198.19.%d.%d/30 --rate 10 --burst 10;",
					i / 64, (i % 64) * 4);
	if (fixture_policy(&fx, policy)) {
		fprintf(stderr, "bench: cannot apply the policy\n");
		return 1;
	}

	frame_udp_from(&f, "198.18.1.1");
	base = per_packet_ns(bare, &f);
	printf("%-44s %8s %8s\n", "case (BPF_PROG_TEST_RUN, median of 7 x 1M)", "ns/pkt",
	       "x bare");
	printf("%-44s %8.1f %8.2f\n", "bare XDP_DROP (baseline)", base, 1.0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double ns;

		if (cases[i].src) {
			frame_udp_from(&f, cases[i].src);
		} else {
			frame_eth(&f, ETH_P_ARP);
			frame_put(&f, NULL, 28);
		}
		run_frame(&fx, &f, 1, NULL);	/* create the bucket */
		ns = per_packet_ns(fx.prog_fd, &f);
		printf("%-44s %8.1f %8.2f   (+%.1f ns over bare)\n", cases[i].name, ns,
		       ns / base, ns - base);
	}
	fixture_close(&fx);
	close(bare);
	return 0;
}
