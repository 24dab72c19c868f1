// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Fragments through BPF_PROG_TEST_RUN with crafted trains: a later
 * fragment is judged by the rule and bucket its datagram's first fragment
 * was (doc/rules.rst, "Fragments"), IPv4 and IPv6, with exact admission
 * counts; a later fragment whose first was never seen is an orphan,
 * dropped as frag_orphan only where a rule matching on what it lacks might
 * decide it. Limits are per hour: no refill within a case. Against a
 * datapath that judges a later fragment without its first's ports, the
 * train cases fail: every later fragment passes by the default or by the
 * source's most specific L4 rule. */
#include "fixture.h"
#include "../lib/harness.h"

static struct fixture fx;

static int setup(const char *policy)
{
	fixture_close(&fx);
	if (fixture_open(&fx, 0))
		return -1;
	return fixture_policy(&fx, policy);
}

/* UDP datagrams of DGRAM bytes (8 of header), cut into fragments of PER
 * payload bytes (a multiple of 8), the last shorter. */
#define IPV4_MF	0x2000	/* More Fragments, in frag_off (RFC 791) */
#define DGRAM	608U
#define PER	200U
#define V4_FRAME(n)	(sizeof(struct ethhdr) + sizeof(struct iphdr) + (n))
#define V6_FRAME(n)	(sizeof(struct ethhdr) + sizeof(struct ipv6hdr) + 8 + (n))

/* n bytes of datagram id from src at offset off (bytes), protocol proto
 * (for IPv6: what the fragment header says), more fragments to come when
 * more; the first fragment starts with a UDP header to dport. */
static void frame_frag(struct frame *f, const char *src, __u32 id, __u8 proto, __u32 off,
		       int more, __u32 n, __u16 dport)
{
	struct udphdr *u;
	struct iphdr *ip;
	struct v6_frag *fh;

	if (strchr(src, ':')) {
		frame_eth(f, ETH_P_IPV6);
		frame_ipv6(f, src, IPPROTO_FRAGMENT)->payload_len = htons((__u16)(sizeof(*fh) + n));
		fh = frame_put(f, NULL, sizeof(*fh));
		fh->nexthdr = proto;
		fh->frag_off = htons((__u16)(off | (more ? 1 : 0)));
		fh->identification = htonl(id);
	} else {
		frame_eth(f, ETH_P_IP);
		ip = frame_ipv4(f, src, 5);
		ip->protocol = proto;
		ip->id = htons((__u16)id);
		ip->frag_off = htons((__u16)(off / 8 | (more ? IPV4_MF : 0)));
		ip->tot_len = htons((__u16)(sizeof(*ip) + n));
	}
	u = frame_put(f, NULL, n);
	if (!off) {
		u->source = htons(4000);
		u->dest = htons(dport);
		u->len = htons(DGRAM);
	}
}

/* Datagrams ids id0.. (count of them) from src to dport, their later
 * fragments saying later_proto; returns the fragments that passed, *whole
 * the datagrams all of whose fragments passed. */
static __u64 send_train(const char *src, __u32 id0, unsigned int count, __u16 dport,
			__u8 later_proto, __u64 *whole)
{
	struct frame f;
	__u64 passed = 0;

	*whole = 0;
	for (unsigned int d = 0; d < count; d++) {
		__u64 got = 0, frags = 0;

		for (__u32 off = 0; off < DGRAM; off += PER, frags++) {
			__u32 n = DGRAM - off < PER ? DGRAM - off : PER;

			frame_frag(&f, src, id0 + d, off ? later_proto : IPPROTO_UDP, off,
				   off + n < DGRAM, n, dport);
			got += send_n_frames(&fx, &f, 1);
		}
		passed += got;
		*whole += got == frags;
	}
	return passed;
}

static __u64 delta(const struct sluice_counter *a, const struct sluice_counter *b, __u32 r)
{
	return b[r].packets - a[r].packets;
}

static __u64 delta_bytes(const struct sluice_counter *a, const struct sluice_counter *b, __u32 r)
{
	return b[r].bytes - a[r].bytes;
}

/* A --dport --bytes rule holds for whole IPv4 datagrams: 4 of 608 bytes fit
 * a 3,000-byte burst as 3 x 234 + 42 frame bytes, and no fragment of the
 * rest. OLD: every later fragment passed by the default. */
static void v4_train_bytes(void)
{
	struct sluice_counter c0[SLUICE_R_MAX], c1[SLUICE_R_MAX];
	const __u64 dgram = 3 * V4_FRAME(PER) + V4_FRAME(DGRAM - 3 * PER);
	__u64 passed, whole;

	CHECK(setup("limit set 198.18.0.0/24 --proto udp --dport 9999 --bytes 100/h --burst 3000")
	      == 0, "setup");
	counters_now(&fx, c0);
	passed = send_train("198.18.0.7", 100, 10, 9999, IPPROTO_UDP, &whole);
	counters_now(&fx, c1);
	CHECK(passed == 16 && whole == 4, "%llu fragments passed, %llu datagrams whole, want 16 4",
	      (unsigned long long)passed, (unsigned long long)whole);
	CHECK(delta(c0, c1, SLUICE_R_WITHIN_LIMIT) == 16 &&
	      delta_bytes(c0, c1, SLUICE_R_WITHIN_LIMIT) == 4 * dgram &&
	      delta(c0, c1, SLUICE_R_RATE_LIMITED) == 24,
	      "within_limit %llu (%llu B) rate_limited %llu, want 16 (%llu B) 24",
	      (unsigned long long)delta(c0, c1, SLUICE_R_WITHIN_LIMIT),
	      (unsigned long long)delta_bytes(c0, c1, SLUICE_R_WITHIN_LIMIT),
	      (unsigned long long)delta(c0, c1, SLUICE_R_RATE_LIMITED), (unsigned long long)(4 * dgram));
	/* another port's datagrams, same source: the default's, whole */
	passed = send_train("198.18.0.7", 200, 3, 53, IPPROTO_UDP, &whole);
	CHECK(passed == 12 && whole == 3, "udp/53 datagrams: %llu passed, %llu whole, want 12 3",
	      (unsigned long long)passed, (unsigned long long)whole);
	/* --per /24: one bucket for the /24's sources, fragments included */
	CHECK(setup("limit set 198.18.0.0/24 --proto udp --dport 9999 --bytes 100/h --burst 3000 "
		    "--per /24") == 0, "setup");
	passed = send_train("198.18.0.7", 100, 2, 9999, IPPROTO_UDP, &whole);
	passed += send_train("198.18.0.8", 100, 3, 9999, IPPROTO_UDP, &whole);
	CHECK(passed == 16, "--per /24: %llu fragments passed, want 16", (unsigned long long)passed);
}

/* IPv6 with a TCP port rule beside the UDP one (more specific, so the
 * source's lead). OLD: every later fragment went to the TCP rule and
 * passed. Later fragments saying TCP join their UDP datagram all the same. */
static void v6_train_beside_tcp_rule(void)
{
	struct sluice_counter c0[SLUICE_R_MAX], c1[SLUICE_R_MAX];
	const __u64 dgram = 3 * V6_FRAME(PER) + V6_FRAME(DGRAM - 3 * PER);
	__u64 passed, whole;

	CHECK(setup("limit set 2001:2::/48 --proto tcp --dport 443 --rate 1000/s --burst 1000;"
		    "limit set 2001:2::/48 --proto udp --bytes 100/h --burst 3460") == 0, "setup");
	counters_now(&fx, c0);
	passed = send_train("2001:2::7", 100, 10, 9999, IPPROTO_UDP, &whole);
	counters_now(&fx, c1);
	/* 4 datagrams of 3 x 262 + 70 frame bytes fit 3,460, no fragment more */
	CHECK(passed == 16 && whole == 4, "%llu fragments passed, %llu datagrams whole, want 16 4",
	      (unsigned long long)passed, (unsigned long long)whole);
	CHECK(delta_bytes(c0, c1, SLUICE_R_WITHIN_LIMIT) == 4 * dgram,
	      "%llu bytes within limit, want %llu",
	      (unsigned long long)delta_bytes(c0, c1, SLUICE_R_WITHIN_LIMIT),
	      (unsigned long long)(4 * dgram));
	CHECK(setup("limit set 2001:2::/48 --proto tcp --dport 443 --rate 1000/s --burst 1000;"
		    "limit set 2001:2::/48 --proto udp --bytes 100/h --burst 3460") == 0, "setup");
	passed = send_train("2001:2::7", 100, 10, 9999, IPPROTO_TCP, &whole);
	CHECK(passed == 16 && whole == 4, "later fragments saying TCP: %llu passed, %llu whole, "
	      "want 16 4", (unsigned long long)passed, (unsigned long long)whole);
}

/* A deny --dport rule drops every fragment of its datagrams, and only of
 * them. OLD: the later fragments passed. */
static void deny_dport_drops_later(void)
{
	__u64 passed, whole;

	CHECK(setup("deny 198.18.0.0/24 --proto udp --dport 9999;"
		    "deny 2001:2::/48 --proto udp --dport 9999") == 0, "setup");
	passed = send_train("198.18.0.9", 1, 3, 9999, IPPROTO_UDP, &whole);
	CHECK(passed == 0, "IPv4: %llu fragments of denied datagrams passed",
	      (unsigned long long)passed);
	passed = send_train("2001:2::9", 1, 3, 9999, IPPROTO_UDP, &whole);
	CHECK(passed == 0, "IPv6: %llu fragments of denied datagrams passed",
	      (unsigned long long)passed);
	passed = send_train("198.18.0.9", 10, 2, 80, IPPROTO_UDP, &whole);
	passed += send_train("2001:2::9", 10, 2, 80, IPPROTO_UDP, &whole);
	CHECK(passed == 16, "udp/80: %llu of 16 fragments passed", (unsigned long long)passed);
}

/* A --syn rule: a fragmented SYN's later fragments are the SYN's. */
static void syn_rule_holds_for_fragments(void)
{
	struct tcphdr *t;
	struct frame f;
	__u64 passed = 0;

	CHECK(setup("limit set 198.18.0.0/24 --syn --rate 1/h --burst 2") == 0, "setup");
	for (__u32 id = 1; id <= 3; id++) {
		frame_frag(&f, "198.18.0.11", id, IPPROTO_TCP, 0, 1, 200, 0);
		t = (struct tcphdr *)(f.buf + sizeof(struct ethhdr) + sizeof(struct iphdr));
		memset(t, 0, sizeof(*t));
		t->dest = htons(80);
		t->doff = sizeof(*t) / 4;
		t->syn = 1;
		passed += send_n_frames(&fx, &f, 1);
		frame_frag(&f, "198.18.0.11", id, IPPROTO_TCP, 200, 0, 64, 0);
		passed += send_n_frames(&fx, &f, 1);
	}
	CHECK(passed == 2, "fragmented SYNs: %llu of 6 fragments passed, want the burst's 2",
	      (unsigned long long)passed);
}

/*
 * A later fragment whose first was never seen: dropped as frag_orphan,
 * counted on the rule that might have decided it, where such a rule covers
 * its source; judged as any packet where none can: a source with no L4
 * rule, or an IPv4 protocol no L4 rule of the source names.
 */
static void orphans(void)
{
	struct sluice_counter c0[SLUICE_R_MAX], c1[SLUICE_R_MAX];
	struct sluice_policy_counter pc;
	struct frame f;

	CHECK(setup("limit set 198.18.0.0/24 --proto udp --dport 9999 --bytes 100/h --burst 3000;"
		    "limit set 2001:2::/48 --proto tcp --dport 443 --rate 1000/s --burst 1000;"
		    "limit set 2001:2::/48 --proto udp --bytes 100/h --burst 3000;"
		    "limit set 198.18.1.0/24 --rate 1/h --burst 2") == 0, "setup");
	counters_now(&fx, c0);
	frame_frag(&f, "198.18.0.7", 999, IPPROTO_UDP, 400, 0, 64, 0);
	CHECK(send_n_frames(&fx, &f, 3) == 0, "an IPv4 orphan passed");
	frame_frag(&f, "2001:2::7", 999, IPPROTO_UDP, 400, 0, 64, 0);
	CHECK(send_n_frames(&fx, &f, 2) == 0, "an IPv6 orphan passed");
	counters_now(&fx, c1);
	CHECK(delta(c0, c1, SLUICE_R_FRAG_ORPHAN) == 5, "%llu frag_orphan, want 5",
	      (unsigned long long)delta(c0, c1, SLUICE_R_FRAG_ORPHAN));
	/* counted on the rule that might have decided each: the --dport rule
	 * (index 1), and the IPv6 source's lead, the tcp/443 rule (index 2) */
	CHECK(read_policy_counter(&fx.m, 1, &pc) == 0 && pc.drop_packets == 3,
	      "the udp/9999 rule counted %llu drops, want 3", (unsigned long long)pc.drop_packets);
	CHECK(read_policy_counter(&fx.m, 2, &pc) == 0 && pc.drop_packets == 2,
	      "the tcp/443 rule counted %llu drops, want 2", (unsigned long long)pc.drop_packets);
	/* no L4 rule covers the source: judged as its every packet */
	frame_frag(&f, "198.18.1.5", 999, IPPROTO_UDP, 400, 0, 64, 0);
	CHECK(send_n_frames(&fx, &f, 3) == 2, "an orphan of a plain rule's source: not its burst");
	frame_frag(&f, "198.18.2.5", 999, IPPROTO_UDP, 400, 0, 64, 0);
	CHECK(send_n_frames(&fx, &f, 3) == 3, "an orphan no rule covers was dropped");
	/* IPv4 says its protocol: a TCP orphan is none of a UDP rule's */
	frame_frag(&f, "198.18.0.7", 999, IPPROTO_TCP, 400, 0, 64, 0);
	CHECK(send_n_frames(&fx, &f, 3) == 3, "an IPv4 TCP orphan was held by a UDP rule");
	counters_now(&fx, c0);
	CHECK(delta(c1, c0, SLUICE_R_FRAG_ORPHAN) == 0, "%llu more frag_orphan, want 0",
	      (unsigned long long)delta(c1, c0, SLUICE_R_FRAG_ORPHAN));
	/* its first seen afterwards: the datagram's later fragments follow it */
	frame_frag(&f, "198.18.0.7", 999, IPPROTO_UDP, 0, 1, 200, 9999);
	CHECK(send_n_frames(&fx, &f, 1) == 1, "the first fragment");
	frame_frag(&f, "198.18.0.7", 999, IPPROTO_UDP, 400, 0, 64, 0);
	CHECK(send_n_frames(&fx, &f, 1) == 1, "a later fragment of a first now seen");
}

int main(void)
{
	int err = fixture_main_open(&fx);

	if (err)
		return err;
	RUN(v4_train_bytes);
	RUN(v6_train_beside_tcp_rule);
	RUN(deny_dport_drops_later);
	RUN(syn_rule_holds_for_fragments);
	RUN(orphans);
	fixture_close(&fx);
	return check_summary();
}
