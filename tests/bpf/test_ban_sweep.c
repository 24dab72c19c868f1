// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The ban table's sweep (user/cmd/ban.c) against a ban written while it runs,
 * deterministically: ban_sweep_window, which the sweep calls between
 * reading an entry as expired and taking it out of the table, is defined
 * here and bans the same source again right there, as a check-server
 * thread may. The fresh ban must stay in the table, the bans word must
 * keep its live bit, and the real program must drop the source as banned.
 * Expired entries nobody writes again go; live ones stay; the last one
 * gone, the live bit is cleared. */
#include <unistd.h>
#include "fixture.h"
#include "../lib/harness.h"

#define MINUTE_NS	(60 * SLUICE_NS_PER_SEC)

static struct fixture fx;
static struct ban_writer w;
static struct sluice_src_key reban_key;
static bool reban_armed;
static int window_calls, reban_err;

void ban_sweep_window(const struct sluice_src_key *key)
{
	window_calls++;
	if (reban_armed && !memcmp(key, &reban_key, sizeof(*key))) {
		reban_armed = false;
		reban_err = ban_put(&w, key, 0, mono_now_ns() + MINUTE_NS);
	}
}

static int key_of(const char *addr, struct sluice_src_key *k)
{
	return parse_source(addr, k) ? -EINVAL : 0;
}

/* until_ns of addr's entry, 0 when it has none. */
static __u64 ban_until(const char *addr)
{
	struct sluice_src_key k;
	struct sluice_ban v;

	if (key_of(addr, &k) || bpf_map_lookup_elem(fx.m.bans, &k, &v))
		return 0;
	return v.until_ns;
}

static int ban(const char *addr, __s64 from_now_ns)
{
	struct sluice_src_key k;

	if (key_of(addr, &k))
		return -EINVAL;
	return ban_put(&w, &k, 0, (__u64)((__s64)mono_now_ns() + from_now_ns));
}

static void empty_table(void)
{
	struct sluice_src_key k;

	while (!bpf_map_get_next_key(fx.m.bans, NULL, &k))
		bpf_map_delete_elem(fx.m.bans, &k);
}

static __u64 banned_packets(void)
{
	struct sluice_counter c[SLUICE_R_MAX];

	counters_now(&fx, c);
	return c[SLUICE_R_BANNED].packets;
}

/* The race: the entry is read as expired, banned again, then swept. */
static void reban_between_read_and_delete(void)
{
	struct frame f;
	__u64 before;
	int live;

	empty_table();
	CHECK(ban("198.18.0.1", -1) == 0, "ban 198.18.0.1 (expired)");
	CHECK(key_of("198.18.0.1", &reban_key) == 0, "key");
	window_calls = 0;
	reban_err = 0;
	reban_armed = true;
	live = ban_sweep(&w);
	CHECK(window_calls == 1, "the sweep's window was reached %d times, want 1", window_calls);
	CHECK(reban_err == 0, "ban_put in the window: %s", strerror(-reban_err));
	CHECK(ban_until("198.18.0.1") > mono_now_ns(),
	      "the ban written during the sweep is gone from the table (until_ns %llu)",
	      (unsigned long long)ban_until("198.18.0.1"));
	CHECK(live == 1, "sweep: %d live bans, want 1 (the fresh one)", live);
	CHECK(__atomic_load_n(&w.state->bans, __ATOMIC_ACQUIRE) & SLUICE_BANS_LIVE,
	      "the bans word lost its live bit");
	before = banned_packets();
	frame_udp_from(&f, "198.18.0.1");
	CHECK(run_frame(&fx, &f, 1, NULL) == XDP_DROP, "198.18.0.1's packet is not dropped");
	CHECK(banned_packets() == before + 1, "198.18.0.1's packet is not counted banned");
}

/* Without a writer: expired entries go, live ones stay. */
static void expired_go_live_stay(void)
{
	int live;

	empty_table();
	CHECK(ban("198.18.0.2", -1) == 0 && ban("198.18.0.3", MINUTE_NS) == 0 &&
	      ban("198.18.0.4", -MINUTE_NS) == 0, "ban");
	live = ban_sweep(&w);
	CHECK(live == 1, "sweep: %d live bans, want 1", live);
	CHECK(!ban_until("198.18.0.2") && !ban_until("198.18.0.4"), "an expired ban was left");
	CHECK(ban_until("198.18.0.3") > mono_now_ns(), "the live ban was swept");
	CHECK(__atomic_load_n(&w.state->bans, __ATOMIC_ACQUIRE) & SLUICE_BANS_LIVE,
	      "the bans word lost its live bit with a ban left");
}

/* The last ban expired: the datapath may stop looking. */
static void last_one_clears_the_live_bit(void)
{
	struct frame f;
	int live;

	empty_table();
	CHECK(ban("198.18.0.5", -1) == 0, "ban");
	live = ban_sweep(&w);
	CHECK(live == 0, "sweep: %d live bans, want 0", live);
	CHECK(!ban_until("198.18.0.5"), "the expired ban was left");
	CHECK(!(__atomic_load_n(&w.state->bans, __ATOMIC_ACQUIRE) & SLUICE_BANS_LIVE),
	      "the live bit is still set with no ban left");
	frame_udp_from(&f, "198.18.0.5");
	CHECK(run_frame(&fx, &f, 1, NULL) == XDP_PASS, "198.18.0.5's packet is not passed");
}

int main(void)
{
	int err = fixture_main_open(&fx);

	if (err)
		return err;
	if (ban_writer_open(&fx.m, &w)) {
		printf("FAIL setup: cannot open the ban writer\n");
		return 1;
	}
	RUN(reban_between_read_and_delete);
	RUN(expired_go_live_stay);
	RUN(last_one_clears_the_live_bit);
	ban_writer_close(&w);
	fixture_close(&fx);
	return check_summary();
}
