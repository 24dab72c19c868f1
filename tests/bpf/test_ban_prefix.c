// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Prefix bans (ban add, ban load) through the real program, with crafted
 * packets: the longest prefix decides (a /32 inside a banned /24, the /24's
 * neighbours outside it), IPv4 and IPv6 are apart (an IPv6 ::ffff:a.b.c.d
 * packet is not IPv4 a.b.c.d's), a ban comes before an `allow` rule, an
 * expired entry drops nothing while it is still in the table, every drop
 * is counted exactly (reason banned, the entry, its list; none to a rule),
 * a prefix in two lists counts to the first, and with the table removed
 * the program passes everything again. The writes are the CLI's own
 * (prefix_put, prefix_ban_del, bantab_*). */
#include <unistd.h>
#include "fixture.h"
#include "check.h"

#define N		50	/* frames a case sends */
#define HOUR_NS		(3600 * SLUICE_NS_PER_SEC)

static struct fixture fx;
static struct bantab t;
static int li_default, li_feed;

static int key_of(const char *pfx, struct sluice_ban_key *k)
{
	struct cidr c;
	char why[200];

	if (parse_ban_prefix(pfx, &c, why, sizeof(why)))
		return -EINVAL;
	bantab_key(&c, k);
	return 0;
}

/* Bans pfx in list li until until_ns (0: forever), installing the trie. */
static int ban(const char *pfx, int li, __u64 until_ns)
{
	struct sluice_ban_key k;
	int fd = t.trie, err;

	if (key_of(pfx, &k))
		return -EINVAL;
	if (fd < 0 && (fd = bantab_new_trie(&t)) < 0)
		return fd;
	err = prefix_put(&t, fd, &k, li, until_ns, SLUICE_BAN_KIND_ADDED);
	if (!err && t.trie != fd)
		err = bantab_install(&fx.m, &t, fd);
	return err ? err : bantab_lists_write(&fx.m, &t);
}

static __u64 entry_dropped(const char *pfx)
{
	struct sluice_ban_key k;
	struct sluice_pfx_ban v;

	if (key_of(pfx, &k) || prefix_exact(t.trie, &k, &v) != 1)
		return ~0ULL;
	return v.dropped;
}

static __u64 list_dropped(int li)
{
	struct sluice_counter c;

	return read_ban_drops(&fx.m, (__u32)li, &c) ? ~0ULL : c.packets;
}

static __u64 reason_packets(__u32 reason)
{
	struct sluice_counter c[SLUICE_R_MAX];

	counters_now(&fx, c);
	return c[reason].packets;
}

/* N frames from src: how many passed; *banned the banned drops they made. */
static __u64 send_from(const char *src, __u64 *banned)
{
	struct frame f;
	__u64 b0 = reason_packets(SLUICE_R_BANNED), passed;

	frame_udp_from(&f, src);
	passed = send_n_frames(&fx, &f, N);
	*banned = reason_packets(SLUICE_R_BANNED) - b0;
	return passed;
}

static void longest_prefix_decides(void)
{
	__u64 banned;

	CHECK(ban("198.18.64.0/24", li_default, 0) == 0, "ban 198.18.64.0/24");
	CHECK(send_from("198.18.64.9", &banned) == 0 && banned == N,
	      "198.18.64.9 inside the /24: %llu banned of %d", (unsigned long long)banned, N);
	CHECK(send_from("198.18.65.9", &banned) == N && banned == 0,
	      "198.18.65.9 outside the /24 was dropped (%llu banned)", (unsigned long long)banned);
	CHECK(send_from("198.18.63.255", &banned) == N && banned == 0,
	      "198.18.63.255 outside the /24 was dropped");
	CHECK(entry_dropped("198.18.64.0/24") == N, "the /24's dropped: %llu, want %d",
	      (unsigned long long)entry_dropped("198.18.64.0/24"), N);
	CHECK(list_dropped(li_default) == N, "list default's drops: %llu, want %d",
	      (unsigned long long)list_dropped(li_default), N);
	/* A /32 inside it, in another list: the longest match counts. */
	CHECK(ban("198.18.64.7", li_feed, 0) == 0, "ban 198.18.64.7");
	CHECK(send_from("198.18.64.7", &banned) == 0 && banned == N, "198.18.64.7 not banned");
	CHECK(entry_dropped("198.18.64.7/32") == N && entry_dropped("198.18.64.0/24") == N,
	      "the /32 took the drops: /32 %llu, /24 %llu",
	      (unsigned long long)entry_dropped("198.18.64.7/32"),
	      (unsigned long long)entry_dropped("198.18.64.0/24"));
	CHECK(list_dropped(li_feed) == N, "list feed's drops: %llu, want %d",
	      (unsigned long long)list_dropped(li_feed), N);
}

static void families_apart(void)
{
	__u64 banned;

	CHECK(send_from("::ffff:198.18.64.9", &banned) == N && banned == 0,
	      "an IPv6 ::ffff:198.18.64.9 packet was taken for IPv4 198.18.64.9");
	CHECK(ban("2001:2:0:7::/64", li_default, 0) == 0, "ban 2001:2:0:7::/64");
	CHECK(send_from("2001:2:0:7::99", &banned) == 0 && banned == N, "2001:2:0:7::99 not banned");
	CHECK(send_from("2001:2:0:8::99", &banned) == N && banned == 0, "2001:2:0:8::99 banned");
	/* ::ffff:a.b.c.d written in a ban is IPv4 a.b.c.d. */
	CHECK(ban("::ffff:198.18.66.0/120", li_default, 0) == 0, "ban ::ffff:198.18.66.0/120");
	CHECK(send_from("198.18.66.1", &banned) == 0 && banned == N,
	      "198.18.66.1 not banned by ::ffff:198.18.66.0/120");
}

static void before_allow_no_rule_counts(void)
{
	struct sluice_policy_counter pc;
	__u64 banned;

	CHECK(fixture_policy(&fx, "allow 198.18.67.0/24;limit default --rate 1000000 --burst 1000000") == 0,
	      "policy");
	CHECK(ban("198.18.67.0/25", li_default, 0) == 0, "ban 198.18.67.0/25");
	CHECK(send_from("198.18.67.1", &banned) == 0 && banned == N,
	      "an allowed source under a ban passed");
	CHECK(send_from("198.18.67.200", &banned) == N, "the allow rule's other half was dropped");
	CHECK(read_policy_counter(&fx.m, SLUICE_POLICY_DEFAULT, &pc) == 0, "policy counters");
	CHECK(pc.drop_packets == 0, "the default rule counted %llu drops of banned sources",
	      (unsigned long long)pc.drop_packets);
}

static void expired_drops_nothing(void)
{
	__u64 banned;

	CHECK(ban("198.18.68.0/24", li_default, mono_now_ns() + SLUICE_NS_PER_SEC / 5) == 0,
	      "ban 198.18.68.0/24 for 200 ms");
	CHECK(send_from("198.18.68.1", &banned) == 0 && banned == N, "not banned within 200 ms");
	usleep(250000);
	CHECK(send_from("198.18.68.1", &banned) == N && banned == 0,
	      "an expired ban still drops (%llu banned)", (unsigned long long)banned);
	CHECK(entry_dropped("198.18.68.0/24") == N, "the expired entry is gone or miscounted");
}

static void lifted_and_removed(void)
{
	struct cidr c;
	char why[200];
	__u64 banned;

	CHECK(parse_ban_prefix("198.18.64.0/24", &c, why, sizeof(why)) == 0, "prefix");
	CHECK(prefix_ban_del(&fx.m, &t, &c, -1) == 1, "ban del 198.18.64.0/24");
	CHECK(send_from("198.18.64.9", &banned) == N && banned == 0, "a lifted ban still drops");
	CHECK(send_from("198.18.64.7", &banned) == 0 && banned == N,
	      "lifting the /24 lifted the /32 inside it");
	CHECK(bantab_install(&fx.m, &t, -1) == 0, "remove the table");
	CHECK(send_from("198.18.64.7", &banned) == N && banned == 0,
	      "with no table a packet was dropped as banned");
}

int main(void)
{
	int err = fixture_main_open(&fx);

	if (err)
		return err;
	if (fixture_policy(&fx, "limit default --rate 1000000 --burst 1000000") ||
	    bantab_open(&fx.m, &t) || (li_default = bantab_list_take(&t, "default")) < 0 ||
	    (li_feed = bantab_list_take(&t, "feed")) < 0) {
		printf("FAIL setup: policy or ban table\n");
		return 1;
	}
	RUN(longest_prefix_decides);
	RUN(families_apart);
	RUN(before_allow_no_rule_counts);
	RUN(expired_drops_nothing);
	RUN(lifted_and_removed);
	bantab_close(&t);
	fixture_close(&fx);
	return check_summary();
}
