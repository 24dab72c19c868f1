// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The source table's hash seed is secret and rotates (sluice/sources.h, struct
 * sluice_src_seed). A source lives in one of two buckets of four slots,
 * picked by a seeded hash of its address: whoever knows the seed can find
 * 8 addresses whose two buckets are a victim's, send one packet from each
 * (under --rate 1/m --burst 1 each stays in debt, its slot held for a
 * minute) and the victim's first packet finds no slot.
 *  - config_attack: an attacker who reads what the pins' group reads (the
 *    config map) aims one such attack per distinct 64-bit word of it
 *    (and one with the guess 0), each at a victim of its own, then the
 *    victims each send a packet: every victim passes it, and no new source
 *    is refused. Shown to fail on the build whose config held the seed:
 *    the attack aimed by that word refuses its victim.
 *  - rotated_attack: a second load (a new attach) has another seed, found
 *    in no word of its config; an attack aimed with the first load's seed
 *    (an attacker who learnt it before the rotation) does not refuse its
 *    victim, while the same search with the current seed (root's alone)
 *    does land all 8 addresses in the victim's two buckets: the aim, not
 *    luck, is what the seed guards.
 * Exact counts through BPF_PROG_TEST_RUN; no clock assertion (a debt of a
 * minute outlasts the test by far).
 */
#define _GNU_SOURCE	/* memmem */
#include "fixture.h"
#include "../lib/harness.h"
#include "sluice/srctab.h"

#define SEED_TABLE	4096U		/* --max-sources: 1600 buckets, 6400 slots */
#define SEED_POLICY	"limit default --rate 1/m --burst 1"
#define ATTACKERS	(2 * SLUICE_SLOTS_PER_BUCKET)	/* both buckets' slots */
#define FLOOD		3U		/* packets per attacker: 1 passes, 2 in debt */
#define CFG_WORDS	(sizeof(struct sluice_config) / sizeof(__u64))
/* Addresses tried per attacker before giving up: the pair of buckets is
 * 1 in n(n-1)/2 = 1,279,200 addresses; 64 times that fails 1 in e^64. */
#define AIM_TRIES	(64ULL * 1600 * 1599 / 2)

/* 2001:2:0:NET::/64 with the 64-bit host i (all in 2001:2::/48). */
static void addr_v6(__u16 net, __u64 i, __u8 a[SLUICE_ADDR_LEN])
{
	memset(a, 0, SLUICE_ADDR_LEN);
	a[0] = 0x20;
	a[1] = 0x01;
	a[3] = 0x02;
	a[6] = (__u8)(net >> 8);
	a[7] = (__u8)net;
	for (int k = 0; k < 8; k++)
		a[15 - k] = (__u8)(i >> (8 * k));
}

/* The two buckets address a would have under seed in a table of n. */
static void buckets_of(const __u8 a[SLUICE_ADDR_LEN], __u64 seed, __u32 n, __u32 b[2])
{
	__u64 a0, a1;

	memcpy(&a0, a, sizeof(a0));
	memcpy(&a1, a + sizeof(a0), sizeof(a1));
	srctab_pick(srctab_hash(a0, a1, SLUICE_FAMILY_V6, seed), n, &b[0], &b[1]);
}

/* ATTACKERS addresses of net whose two buckets, under seed, are the
 * victim's: 0, or -1 if the search gave up. */
static int aim(__u16 net, const __u8 victim[SLUICE_ADDR_LEN], __u64 seed, __u32 n,
	       __u8 out[ATTACKERS][SLUICE_ADDR_LEN])
{
	__u32 v[2], b[2];
	unsigned int found = 0;

	buckets_of(victim, seed, n, v);
	for (__u64 i = 1; i <= AIM_TRIES * ATTACKERS && found < ATTACKERS; i++) {
		addr_v6(net, i, out[found]);
		buckets_of(out[found], seed, n, b);
		if ((b[0] == v[0] && b[1] == v[1]) || (b[0] == v[1] && b[1] == v[0]))
			found++;
	}
	return found == ATTACKERS ? 0 : -1;
}

static void frame_from(struct frame *f, const __u8 a[SLUICE_ADDR_LEN], char *text, size_t len)
{
	inet_ntop(AF_INET6, a, text, (socklen_t)len);
	memset(f, 0, sizeof(*f));
	frame_udp_from(f, text);
}

static __u64 event(struct fixture *fx, __u32 ev)
{
	__u64 n = 0;

	return read_event(&fx->m, ev, &n) ? ~0ULL : n;
}

/* The attackers flood: each sends FLOOD packets, the first passes. */
static void flood(struct fixture *fx, __u8 att[ATTACKERS][SLUICE_ADDR_LEN])
{
	char text[INET6_ADDRSTRLEN];
	struct frame f;

	for (unsigned int k = 0; k < ATTACKERS; k++) {
		frame_from(&f, att[k], text, sizeof(text));
		CHECK_EQ(send_n_frames(fx, &f, FLOOD), 1, "packets of attacker %s passed", text);
	}
}

/* The victim's first packet: passes, and no new source was refused. */
static void victim_passes(struct fixture *fx, const __u8 victim[SLUICE_ADDR_LEN],
			  const char *aimed_by)
{
	char text[INET6_ADDRSTRLEN];
	__u64 refused = event(fx, SLUICE_EV_SOURCE_REFUSED);
	struct frame f;

	frame_from(&f, victim, text, sizeof(text));
	CHECK_EQ(send_n_frames(fx, &f, 1), 1,
		 "victim %s of the attack aimed by %s: its first packet", text, aimed_by);
	CHECK_EQ(event(fx, SLUICE_EV_SOURCE_REFUSED) - refused, 0,
		 "new sources refused at victim %s's packet (attack aimed by %s)", text, aimed_by);
}

/* Every distinct word of the config (what the pins' group reads), and 0. */
static unsigned int readable_seeds(struct fixture *fx, __u64 out[CFG_WORDS + 1])
{
	__u64 w[CFG_WORDS];
	__u32 zero = 0;
	unsigned int n = 0, j;

	out[n++] = 0;
	if (bpf_map_lookup_elem(fx->m.config, &zero, w))
		return 0;
	for (size_t i = 0; i < CFG_WORDS; i++) {
		for (j = 0; j < n && out[j] != w[i]; j++)
			;
		if (j == n)
			out[n++] = w[i];
	}
	return n;
}

static __u32 table_buckets(struct fixture *fx)
{
	struct sluice_config cfg;
	__u32 zero = 0;

	return bpf_map_lookup_elem(fx->m.config, &zero, &cfg) ? 0 : cfg.src_buckets;
}

static struct fixture fx1, fx2;
static __u64 seed1;

static void config_attack(void)
{
	__u8 att[ATTACKERS][SLUICE_ADDR_LEN], victims[CFG_WORDS + 1][SLUICE_ADDR_LEN];
	__u64 cand[CFG_WORDS + 1];
	__u32 n = table_buckets(&fx1);
	unsigned int ncand = readable_seeds(&fx1, cand);
	char by[64];

	CHECK(n > 1 && ncand > 0, "cannot read the config map");
	CHECK(fixture_policy(&fx1, SEED_POLICY) == 0, "cannot apply the policy");
	/* The floods first, each aimed at its own victim, then the victims. */
	for (unsigned int c = 0; c < ncand; c++) {
		addr_v6(0x5eed, c + 1, victims[c]);
		CHECK(aim((__u16)(0xa000 + c), victims[c], cand[c], n, att) == 0,
		      "no %u addresses found for the attack aimed by word %u", ATTACKERS, c);
		flood(&fx1, att);
		RETURN_IF_FAILED();
	}
	for (unsigned int c = 0; c < ncand; c++) {
		snprintf(by, sizeof(by), "config word %u (0x%llx)", c, (ull)cand[c]);
		victim_passes(&fx1, victims[c], by);
		RETURN_IF_FAILED();
	}
}

/* Whether the 8 bytes of seed appear anywhere in the config's value. */
static bool config_holds(struct fixture *fx, __u64 seed)
{
	struct sluice_config cfg;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fx->m.config, &zero, &cfg))
		return true;
	return memmem(&cfg, sizeof(cfg), &seed, sizeof(seed)) != NULL;
}

/* Live slots in bucket b, under root's view of the table. */
static unsigned int live_in(const struct srctab *t, __u32 b)
{
	struct sluice_src_key k;
	struct sluice_bucket sb;
	unsigned int n = 0;

	for (__u32 i = 0; i < SLUICE_SLOTS_PER_BUCKET; i++)
		n += srctab_read(t, b * SLUICE_SLOTS_PER_BUCKET + i, &k, &sb);
	return n;
}

/* A victim of net whose two buckets under seed are empty: 0, or -1. */
static int empty_victim(struct fixture *fx, __u16 net, __u64 seed, __u32 n,
			__u8 a[SLUICE_ADDR_LEN], __u32 v[2])
{
	struct srctab t;
	int r = -1;

	if (srctab_open(&fx->m, &t))
		return -1;
	for (__u64 i = 1; i <= n && r; i++) {
		addr_v6(net, i, a);
		buckets_of(a, seed, n, v);
		if (!live_in(&t, v[0]) && !live_in(&t, v[1]))
			r = 0;
	}
	srctab_close(&t);
	return r;
}

/* Whether every attacker is live in bucket v[0] or v[1], root's view. */
static bool all_in(struct fixture *fx, __u8 att[ATTACKERS][SLUICE_ADDR_LEN], const __u32 v[2])
{
	struct sluice_src_key k = { .family = SLUICE_FAMILY_V6, .key_len = SLUICE_KEY_LEN_SOURCE,
				    .policy = SLUICE_KEY_HOME };
	struct srctab t;
	unsigned int in = 0;
	long at;

	if (srctab_open(&fx->m, &t))
		return false;
	for (unsigned int i = 0; i < ATTACKERS; i++) {
		memcpy(k.a, att[i], sizeof(k.a));
		at = srctab_find(&t, &k);
		in += at >= 0 && (at / SLUICE_SLOTS_PER_BUCKET == v[0] ||
				  at / SLUICE_SLOTS_PER_BUCKET == v[1]);
	}
	srctab_close(&t);
	return in == ATTACKERS;
}

static void rotated_attack(void)
{
	__u8 att[ATTACKERS][SLUICE_ADDR_LEN], victim[SLUICE_ADDR_LEN], aimed[SLUICE_ADDR_LEN];
	__u32 n = table_buckets(&fx2), v[2];
	__u64 seed2 = 0;

	CHECK(srctab_seed(&fx2.m, &seed2) == 0 && n > 1, "root cannot read the seed");
	CHECK(seed1 && seed2 && seed2 != seed1,
	      "the seed did not rotate with the table: 0x%llx then 0x%llx", (ull)seed1, (ull)seed2);
	CHECK(!config_holds(&fx2, seed2) && !config_holds(&fx2, seed1),
	      "the config map (the group reads it) holds the seed 0x%llx", (ull)seed2);
	CHECK(fixture_policy(&fx2, SEED_POLICY) == 0, "cannot apply the policy");
	addr_v6(0x5eed, 1, victim);
	CHECK(aim(0xb000, victim, seed1, n, att) == 0, "no addresses for the old seed's attack");
	flood(&fx2, att);
	RETURN_IF_FAILED();
	victim_passes(&fx2, victim, "the seed of the attach before");
	RETURN_IF_FAILED();
	/* The same search with the seed in use lands every address in the
	 * victim's two buckets (another victim, whose buckets the sources
	 * so far left empty). */
	CHECK(empty_victim(&fx2, 0x5eee, seed2, n, aimed, v) == 0, "no victim with empty buckets");
	CHECK(aim(0xc000, aimed, seed2, n, att) == 0, "no addresses for the current seed's attack");
	flood(&fx2, att);
	RETURN_IF_FAILED();
	CHECK(all_in(&fx2, att, v), "an attack aimed with the seed in use did not land in its "
	      "victim's buckets %u and %u: the test aims nothing", v[0], v[1]);
}

int main(int argc, char **argv)
{
	harness_select(argc, argv);
	if (geteuid() != 0) {
		printf("needs root for BPF_PROG_TEST_RUN\n");
		return 77;
	}
	if (fixture_open(&fx1, SEED_TABLE)) {
		printf("FAIL load: cannot load the XDP program: %s\n", strerror(errno));
		return 1;
	}
	RUN_SELECTED(config_attack);
	if (srctab_seed(&fx1.m, &seed1))
		seed1 = 0;
	fixture_close(&fx1);
	/* A new attach: a new table, a new seed. */
	if (fixture_open(&fx2, SEED_TABLE)) {
		printf("FAIL load: cannot load the XDP program again: %s\n", strerror(errno));
		return 1;
	}
	RUN_SELECTED(rotated_attack);
	fixture_close(&fx2);
	return check_summary();
}
