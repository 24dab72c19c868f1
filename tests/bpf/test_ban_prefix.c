// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Prefix bans (ban add, ban load) through the real program, with crafted
 * packets: the longest prefix decides (a /32 inside a banned /24, the /24's
 * neighbours outside it), IPv4 and IPv6 are apart (an IPv6 ::ffff:a.b.c.d
 * packet is not IPv4 a.b.c.d's), a ban comes before an `allow` rule, an
 * expired entry drops nothing while it is still in the table, every drop
 * is counted exactly (reason banned, the entry, its list; none to a rule),
 * a prefix in two lists counts to the first, and with the table removed
 * the program passes everything again. An expired narrower entry hides no
 * live broader one (a chain of them included), and a `ban del` of a prefix
 * that is no entry, hammered from another thread, lets no packet of a
 * covering ban through. Each list keeps its own end of a prefix: the list
 * that bans it forever letting go leaves another list's ended ban ended.
 * A list's name is freed with its last prefix (64 lists come and go, and
 * a 65th is made). The writes are the CLI's own (prefix_put,
 * prefix_ban_del, bantab_*); the clock is set by writing ends already past,
 * no sleeping on a tight margin. */
#include <pthread.h>
#include <unistd.h>
#include "fixture.h"
#include "../lib/harness.h"
#include "ban.h"

#define N		50	/* frames a case sends */
#define HOUR_NS		(3600 * SLUICE_NS_PER_SEC)

static struct fixture fx;
static struct bantab t;

static int key_of(const char *pfx, struct sluice_ban_key *k)
{
	struct cidr c;
	char why[200];

	if (parse_ban_prefix(pfx, &c, why, sizeof(why)))
		return -EINVAL;
	bantab_key(&c, k);
	return 0;
}

/* Bans pfx in list `list` until until_ns (0: forever), installing the trie. */
static int ban(const char *pfx, const char *list, __u64 until_ns)
{
	struct sluice_ban_key k;
	int fd = t.trie, err, li = bantab_list_take(&t, list);

	if (li < 0)
		return li;
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

static __u64 list_dropped(const char *list)
{
	struct sluice_counter c;
	int li = bantab_list_find(&t, list);

	return li < 0 || read_ban_drops(&fx.m, (__u32)li, &c) ? ~0ULL : c.packets;
}

/* ban del pfx (from every list, or list's only): 1, 0 or an exit status. */
static int unban(const char *pfx, const char *list)
{
	struct cidr c;
	char why[200];
	int li = list ? bantab_list_find(&t, list) : -1;

	if (parse_ban_prefix(pfx, &c, why, sizeof(why)) || (list && li < 0))
		return -EINVAL;
	return prefix_ban_del(&fx.m, &t, &c, li);
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

	CHECK(ban("198.18.64.0/24", "default", 0) == 0, "ban 198.18.64.0/24");
	CHECK(send_from("198.18.64.9", &banned) == 0 && banned == N,
	      "198.18.64.9 inside the /24: %llu banned of %d", (unsigned long long)banned, N);
	CHECK(send_from("198.18.65.9", &banned) == N && banned == 0,
	      "198.18.65.9 outside the /24 was dropped (%llu banned)", (unsigned long long)banned);
	CHECK(send_from("198.18.63.255", &banned) == N && banned == 0,
	      "198.18.63.255 outside the /24 was dropped");
	CHECK(entry_dropped("198.18.64.0/24") == N, "the /24's dropped: %llu, want %d",
	      (unsigned long long)entry_dropped("198.18.64.0/24"), N);
	CHECK(list_dropped("default") == N, "list default's drops: %llu, want %d",
	      (unsigned long long)list_dropped("default"), N);
	/* A /32 inside it, in another list: the longest match counts. */
	CHECK(ban("198.18.64.7", "feed", 0) == 0, "ban 198.18.64.7");
	CHECK(send_from("198.18.64.7", &banned) == 0 && banned == N, "198.18.64.7 not banned");
	CHECK(entry_dropped("198.18.64.7/32") == N && entry_dropped("198.18.64.0/24") == N,
	      "the /32 took the drops: /32 %llu, /24 %llu",
	      (unsigned long long)entry_dropped("198.18.64.7/32"),
	      (unsigned long long)entry_dropped("198.18.64.0/24"));
	CHECK(list_dropped("feed") == N, "list feed's drops: %llu, want %d",
	      (unsigned long long)list_dropped("feed"), N);
}

static void families_apart(void)
{
	__u64 banned;

	CHECK(send_from("::ffff:198.18.64.9", &banned) == N && banned == 0,
	      "an IPv6 ::ffff:198.18.64.9 packet was taken for IPv4 198.18.64.9");
	CHECK(ban("2001:2:0:7::/64", "default", 0) == 0, "ban 2001:2:0:7::/64");
	CHECK(send_from("2001:2:0:7::99", &banned) == 0 && banned == N, "2001:2:0:7::99 not banned");
	CHECK(send_from("2001:2:0:8::99", &banned) == N && banned == 0, "2001:2:0:8::99 banned");
	/* ::ffff:a.b.c.d written in a ban is IPv4 a.b.c.d. */
	CHECK(ban("::ffff:198.18.66.0/120", "default", 0) == 0, "ban ::ffff:198.18.66.0/120");
	CHECK(send_from("198.18.66.1", &banned) == 0 && banned == N,
	      "198.18.66.1 not banned by ::ffff:198.18.66.0/120");
}

static void before_allow_no_rule_counts(void)
{
	struct sluice_policy_counter pc;
	__u64 banned;

	CHECK(fixture_policy(&fx, "allow 198.18.67.0/24;limit default --rate 1000000 --burst 1000000") == 0,
	      "policy");
	CHECK(ban("198.18.67.0/25", "default", 0) == 0, "ban 198.18.67.0/25");
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

	CHECK(ban("198.18.68.0/24", "default", mono_now_ns() + SLUICE_NS_PER_SEC / 5) == 0,
	      "ban 198.18.68.0/24 for 200 ms");
	CHECK(send_from("198.18.68.1", &banned) == 0 && banned == N, "not banned within 200 ms");
	usleep(250000);
	CHECK(send_from("198.18.68.1", &banned) == N && banned == 0,
	      "an expired ban still drops (%llu banned)", (unsigned long long)banned);
	CHECK(entry_dropped("198.18.68.0/24") == N, "the expired entry is gone or miscounted");
}

/* A ban that ended a second ago: a clock set by the end written, not by
 * waiting. */
static __u64 ended(void)
{
	return mono_now_ns() - SLUICE_NS_PER_SEC;
}

static void expired_hides_no_cover(void)
{
	__u64 banned;

	CHECK(ban("198.18.96.0/20", "default", 0) == 0, "ban 198.18.96.0/20 forever");
	CHECK(ban("198.18.97.0/24", "feed", ended()) == 0, "ban 198.18.97.0/24, ended");
	CHECK(send_from("198.18.97.5", &banned) == 0 && banned == N,
	      "an expired /24 hid the live /20: %llu of %d from 198.18.97.5 banned",
	      (unsigned long long)banned, N);
	CHECK(entry_dropped("198.18.96.0/20") == N, "the /20 took %llu drops, want %d",
	      (unsigned long long)entry_dropped("198.18.96.0/20"), N);
	/* A chain: /28 and /26 ended inside the ended /24, under the /20. */
	CHECK(ban("198.18.97.64/26", "feed", ended()) == 0, "ban 198.18.97.64/26, ended");
	CHECK(ban("198.18.97.80/28", "default", ended()) == 0, "ban 198.18.97.80/28, ended");
	CHECK(send_from("198.18.97.81", &banned) == 0 && banned == N,
	      "three expired entries hid the live /20: %llu banned of %d",
	      (unsigned long long)banned, N);
	CHECK(send_from("198.18.112.1", &banned) == N && banned == 0,
	      "198.18.112.1, outside the /20, was dropped");
	CHECK(unban("198.18.96.0/20", NULL) == 1, "ban del 198.18.96.0/20");
	CHECK(send_from("198.18.97.81", &banned) == N && banned == 0,
	      "with the /20 gone, an expired entry still drops");
}

/* ban del of a prefix that is no entry, again and again, in a thread. */
static volatile int hammering;
static int hammer_bad;

static void *hammer(void *arg)
{
	(void)arg;
	while (__atomic_load_n(&hammering, __ATOMIC_ACQUIRE))
		if (unban("198.18.98.0/24", NULL) != 0)
			hammer_bad++;
	return NULL;
}

static void del_of_no_entry_hides_nothing(void)
{
	struct frame f;
	pthread_t tid;
	__u64 passed = 0, sent = 0;

	CHECK(ban("198.18.96.0/20", "default", 0) == 0, "ban 198.18.96.0/20 forever");
	frame_udp_from(&f, "198.18.98.7");
	__atomic_store_n(&hammering, 1, __ATOMIC_RELEASE);
	CHECK(pthread_create(&tid, NULL, hammer, NULL) == 0, "thread");
	for (int i = 0; i < 20000; i++, sent++)
		passed += run_frame(&fx, &f, 1, NULL) == XDP_PASS;
	__atomic_store_n(&hammering, 0, __ATOMIC_RELEASE);
	pthread_join(tid, NULL);
	CHECK(passed == 0, "ban del of 198.18.98.0/24 (no entry) under a banned /20: %llu of %llu passed",
	      (unsigned long long)passed, (unsigned long long)sent);
	CHECK(hammer_bad == 0, "ban del of a prefix that is no entry answered other than 0 (%d times)",
	      hammer_bad);
	CHECK(unban("198.18.96.0/20", NULL) == 1, "ban del 198.18.96.0/20");
}

static void each_list_its_own_end(void)
{
	__u64 banned;

	/* fail2ban's ban has run its hour; a feed holds the prefix forever. */
	CHECK(ban("198.18.100.0/24", "f2b", ended()) == 0, "ban in f2b, ended");
	CHECK(ban("198.18.100.0/24", "feed", 0) == 0, "ban in feed forever");
	CHECK(send_from("198.18.100.1", &banned) == 0 && banned == N, "not banned while feed holds it");
	CHECK(unban("198.18.100.0/24", "feed") == 1, "ban del --list feed");
	CHECK(send_from("198.18.100.1", &banned) == N && banned == 0,
	      "f2b's ended ban became feed's forever: %llu of %d banned", (unsigned long long)banned, N);
	/* The other order, and a live end: forever first, then 1 h. */
	CHECK(ban("198.18.100.0/24", "feed", 0) == 0, "ban in feed forever");
	CHECK(ban("198.18.100.0/24", "f2b", mono_now_ns() + HOUR_NS) == 0, "ban in f2b for 1 h");
	CHECK(unban("198.18.100.0/24", "feed") == 1, "ban del --list feed");
	CHECK(send_from("198.18.100.1", &banned) == 0 && banned == N, "f2b's hour was lifted with feed");
	CHECK(unban("198.18.100.0/24", NULL) == 1, "ban del");
}

static void list_names_freed(void)
{
	char name[32], pfx[32];
	int made = 0;

	for (int i = 0; i < (int)SLUICE_BAN_LISTS + 1; i++) {
		snprintf(name, sizeof(name), "churn%d", i);
		snprintf(pfx, sizeof(pfx), "198.18.101.%d", i);
		if (ban(pfx, name, 0) != 0 || unban(pfx, NULL) != 1)
			break;
		made++;
	}
	CHECK(made == (int)SLUICE_BAN_LISTS + 1,
	      "lists made and emptied, one after another: %d, then no room", made);
	CHECK(bantab_list_find(&t, "churn0") < 0, "list churn0 kept its name after its last prefix went");
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
	    bantab_open(&fx.m, &t)) {
		printf("FAIL setup: policy or ban table\n");
		return 1;
	}
	RUN(longest_prefix_decides);
	RUN(families_apart);
	RUN(before_allow_no_rule_counts);
	RUN(expired_drops_nothing);
	RUN(expired_hides_no_cover);
	RUN(del_of_no_entry_hides_nothing);
	RUN(each_list_its_own_end);
	RUN(list_names_freed);
	RUN(lifted_and_removed);
	bantab_close(&t);
	fixture_close(&fx);
	return check_summary();
}
