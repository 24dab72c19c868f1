// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice-flood: a bounded UDP or TCP traffic generator over an AF_PACKET socket,
 * for the end-to-end tests and the demo. It only sends from and to the
 * benchmarking ranges (198.18.0.0/15, 2001:2::/48), only from inside a
 * namespace made by `ip netns add` (never the host's), and always stops
 * after --count packets or --seconds, whichever comes first. With --xdp it
 * hands the frames to the interface's driver as XDP frames instead, through
 * BPF_PROG_TEST_RUN's live-frames mode, as a NIC's receive path would see
 * them on the peer of a veth. With --random it sends from a different
 * source of a CIDR each frame, in an order that looks random and uses every
 * address of the CIDR once per cycle (tools/flood_src.h). With --timestamps
 * it writes each packet's send time, the trace `sluice simulate --trace`
 * reads, so a test can compare what sluice admitted with a prediction. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "flood_src.h"		/* before the skeleton, which uses its struct */
#include "flood_xdp.skel.h"

#define PROG			"sluice-flood"
#define EXIT_RUNTIME		1
#define EXIT_USAGE		2

#define COUNT_MAX		100000000ULL	/* 1e8 packets */
#define PPS_MAX			100000000ULL
#define SECONDS_DEFAULT		10.0
#define SECONDS_MAX		120.0
#define ALIGN_MAX		60.0		/* --align's period, s */
#define SOURCES_MAX		16777216ULL
#define RANDOM_BITS_MAX		17		/* 198.18.0.0/15 holds 2^17 */
#define BATCH			32		/* frames per sendmmsg */
#define FRAME_MAX		9014		/* Ethernet without FCS, MTU 9000 */
#define FRAME_MIN		60		/* shorter frames get padded anyway */
#define FRAME_SLOT		9024		/* per buffer, a multiple of 8 */
#define FRAME_ALIGN		2		/* so the IP header is 4-byte aligned */
#define SPORT			40000
#define TCP_SEQ			1000000		/* any: nothing tracks these flows */
#define TCP_ACK_SEQ		2000000
#define TCP_WINDOW		65535
#define DPORT_DEFAULT		9		/* discard */
#define NS_PER_SEC		1000000000ULL
#define ENOBUFS_BACKOFF_NS	50000		/* 50 us, when the device is full */
#define XDP_CHUNK_MAX		262144		/* frames per live-frames run; --seconds is checked between runs */
#define XDP_BATCH		64		/* frames the kernel sends at once */
#define XDP_PACED_RUN		256		/* with --pps: one veth ring of frames per run */

static const char usage[] =
	"Usage: " PROG " --iface IF --count N [--dst-mac MAC] [--src ADDR] [--sources S]\n"
	"       [--src-step K] [--dst ADDR] [--proto udp|tcp] [--tcp-flags FLAGS]\n"
	"       [--dport PORT] [--pps RATE] [--seconds T] [--size BYTES] [--xdp]\n"
	"       [--random CIDR [--skip CIDR] [--seed N]] [--timestamps FILE]\n"
	"       [--align PERIOD[+OFFSET]]\n"
	"  Sends N UDP (or TCP) frames on IF (raw, no ARP/ND) from the S sources\n"
	"  ADDR, ADDR+K, ... ADDR+(S-1)K in turn (S and K default to 1), at RATE\n"
	"  packets/s (0 = as fast as possible), for at most T seconds (default 10,\n"
	"  max 120).\n"
	"  Addresses must lie in 198.18.0.0/15 or 2001:2::/48, or be\n"
	"  ::ffff:198.18.x.y as an IPv6 source (defaults 198.18.0.1 -> 198.18.0.2,\n"
	"  or 2001:2::1 -> 2001:2::2); so must every source, the last included.\n"
	"  --dst-mac defaults to broadcast; --dport to 9; --proto to udp. With\n"
	"  --proto tcp each frame is one TCP segment (source port 40000, no\n"
	"  options) with FLAGS set: a comma-separated list of fin, syn, rst, psh,\n"
	"  ack, urg, or synack for syn,ack (default syn).\n"
	"  --size is the Ethernet frame length without FCS (default 60 for IPv4,\n"
	"  74 for TCP/IPv6, 64 for UDP/IPv6); the payload is zeros.\n"
	"  --xdp sends through BPF_PROG_TEST_RUN's live-frames mode (XDP_TX on IF):\n"
	"  the peer of a veth gets XDP frames, as from a NIC, at millions per second\n"
	"  (with --pps, in runs of 256 frames on that schedule: a veth ring holds\n"
	"  256, so a slower receiver loses fewer); --sources works for UDP with\n"
	"  K = 1 only (over IPv4 the frames then carry no UDP checksum; over IPv6\n"
	"  it is adjusted for each source).\n"
	"  --random CIDR (IPv4, inside 198.18.0.0/15; instead of --src, --sources\n"
	"  and --src-step) sends each frame from another address of CIDR, in a\n"
	"  shuffled order (seeded by --seed N, default from the clock) that uses\n"
	"  every address once per 2^(32-LEN) frames; with --xdp, UDP only.\n"
	"  --skip CIDR, inside the --random one and smaller, is never a source:\n"
	"  its draws go to the other half of the --random CIDR instead.\n"
	"  --timestamps FILE writes the CLOCK_MONOTONIC send time of every packet\n"
	"  sent, one a line, in seconds with 9 decimals (12345.000125000): the\n"
	"  trace format of 'sluice simulate --trace'. Frames go out in batches of\n"
	"  up to 32 (one sendmmsg); every frame of a batch gets the time read just\n"
	"  before that call. FILE has exactly \"sent\" lines. Not with --xdp.\n"
	"  --align PERIOD[+OFFSET] (seconds, PERIOD up to 60, OFFSET below it)\n"
	"  first waits until CLOCK_MONOTONIC is OFFSET past a multiple of PERIOD:\n"
	"  a test can start a flood at a known point of sluice's windows (which\n"
	"  align to that clock); -T then counts from there.\n"
	"  Run it inside a test namespace: ip netns exec NS " PROG " ...\n"
	"  Prints {\"sent\": N, \"seconds\": X, \"pps\": Y, \"distinct_sources\": D};\n"
	"  seconds runs from the first packet sent to the last, D counts the\n"
	"  different source addresses of the frames sent.\n";

struct addr {
	int family;		/* AF_INET or AF_INET6 */
	uint8_t a[16];		/* network order; IPv4 in the first 4 bytes */
};

struct flood_opts {
	const char *iface;
	uint8_t dst_mac[ETH_ALEN];
	struct addr src, dst;
	uint64_t sources, src_step, count, pps;
	double seconds;
	unsigned int dport, size;
	uint8_t proto;		/* IPPROTO_UDP or IPPROTO_TCP */
	uint8_t tcp_flags;	/* TH_*, with IPPROTO_TCP */
	bool xdp;
	bool random;		/* sources from rnd (--random) */
	struct flood_random rnd;
	const char *timestamps;	/* --timestamps FILE, or NULL */
	uint64_t align_ns, align_off_ns;	/* --align, 0 for none */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_err(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_USAGE;
}

#define runtime_err(...) (usage_err(__VA_ARGS__), EXIT_RUNTIME)

static bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static bool parse_addr(const char *s, struct addr *out)
{
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, s, out->a) == 1) {
		out->family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, s, out->a) == 1) {
		out->family = AF_INET6;
		return true;
	}
	return false;
}

static bool parse_mac(const char *s, uint8_t mac[ETH_ALEN])
{
	unsigned int b[ETH_ALEN];
	char tail;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4],
		   &b[5], &tail) != ETH_ALEN)
		return false;
	for (int i = 0; i < ETH_ALEN; i++)
		mac[i] = (uint8_t)b[i];
	return true;
}

/* An IPv4 CIDR as a host order network and prefix length; false when it
 * is malformed or has host bits set. */
static bool parse_cidr4(const char *s, uint32_t *net, uint32_t *len)
{
	char buf[INET_ADDRSTRLEN], *slash = strchr(s, '/');
	struct in_addr a;
	uint64_t v;

	if (!slash || (size_t)(slash - s) >= sizeof(buf))
		return false;
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	if (inet_pton(AF_INET, buf, &a) != 1 || !parse_u64(slash + 1, 0, 32, &v))
		return false;
	*net = ntohl(a.s_addr);
	*len = (uint32_t)v;
	return !(*net & flood_host_mask(32 - *len));
}

/* a + n, within the address's family (carry across all of its bytes). */
static void addr_add(const struct addr *a, uint64_t n, struct addr *out)
{
	int len = a->family == AF_INET ? 4 : 16;

	*out = *a;
	for (int i = len - 1; i >= 0 && n; i--) {
		uint64_t v = out->a[i] + (n & 0xff);

		out->a[i] = (uint8_t)v;
		n = (n >> 8) + (v >> 8);
	}
}

/* 198.18.0.0/15 or 2001:2::/48, the ranges reserved for benchmarking, and
 * 198.18.0.0/15 written IPv4-mapped (::ffff:198.18.0.0/111), which tests
 * send as an IPv6 source to show it is judged as one. */
static bool addr_is_bench(const struct addr *a)
{
	static const uint8_t v6[6] = { 0x20, 0x01, 0x00, 0x02, 0x00, 0x00 };
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (a->family == AF_INET)
		return a->a[0] == 198 && (a->a[1] & 0xfe) == 18;
	if (!memcmp(a->a, mapped, sizeof(mapped)))
		return a->a[12] == 198 && (a->a[13] & 0xfe) == 18;
	return !memcmp(a->a, v6, sizeof(v6));
}

/* The last of n sources step apart, or false if the range wraps. Both
 * bounds are at most 2^24, so (n - 1) * step cannot overflow. */
static bool addr_last(const struct addr *a, uint64_t n, uint64_t step, struct addr *last)
{
	addr_add(a, (n - 1) * step, last);
	return memcmp(last->a, a->a, sizeof(a->a)) >= 0;
}

/* --tcp-flags: a comma-separated list of flag names, "synack" for both. */
static bool parse_tcp_flags(const char *s, uint8_t *out)
{
	static const struct {
		const char *name;
		uint8_t flags;
	} names[] = {
		{ "fin", TH_FIN }, { "syn", TH_SYN }, { "rst", TH_RST }, { "psh", TH_PUSH },
		{ "ack", TH_ACK }, { "urg", TH_URG }, { "synack", TH_SYN | TH_ACK },
	};
	uint8_t flags = 0;

	while (*s) {
		size_t len = strcspn(s, ",");
		bool known = false;

		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
			if (strlen(names[i].name) == len && !strncmp(s, names[i].name, len)) {
				flags |= names[i].flags;
				known = true;
			}
		}
		if (!known)
			return false;
		s += len;
		if (*s == ',' && !*++s)
			return false;	/* trailing comma */
	}
	*out = flags;
	return flags != 0;
}

/* True when this process runs in a namespace made by `ip netns add` (one
 * bound under /run/netns) and not in PID 1's, i.e. not on the host's links. */
static bool in_named_netns(void)
{
	struct stat self, st;
	struct dirent *e;
	char path[PATH_MAX];
	bool found = false;
	DIR *d;

	if (stat("/proc/self/ns/net", &self))
		return false;
	if (!stat("/proc/1/ns/net", &st) && st.st_ino == self.st_ino && st.st_dev == self.st_dev)
		return false;
	d = opendir("/run/netns");
	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/run/netns/%s", e->d_name);
		found = !stat(path, &st) && st.st_ino == self.st_ino && st.st_dev == self.st_dev;
	}
	closedir(d);
	return found;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / NS_PER_SEC),
			       .tv_nsec = (long)(t % NS_PER_SEC) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !stop)
		;
}

/* One's complement sum of 16-bit big-endian words, not yet folded. */
static uint32_t csum_add(uint32_t sum, const void *data, size_t len)
{
	const uint8_t *p = data;

	for (; len > 1; p += 2, len -= 2)
		sum += (uint32_t)p[0] << 8 | p[1];
	if (len)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Header sizes and offsets of the frame for a family. */
static size_t l3_len(int family)
{
	return family == AF_INET ? sizeof(struct iphdr) : sizeof(struct ip6_hdr);
}

static size_t l4_len(uint8_t proto)
{
	return proto == IPPROTO_TCP ? sizeof(struct tcphdr) : sizeof(struct udphdr);
}

static size_t headers_len(int family, uint8_t proto)
{
	return sizeof(struct ether_header) + l3_len(family) + l4_len(proto);
}

/* The L4 header for build_frame: UDP with its length, or TCP with the
 * flags asked for; checksums are left zero for the caller to fill in. */
static void build_l4(uint8_t *l4, const struct flood_opts *o, size_t len)
{
	if (o->proto == IPPROTO_TCP) {
		struct tcphdr *tcp = (struct tcphdr *)l4;

		memset(tcp, 0, sizeof(*tcp));
		tcp->th_sport = htons(SPORT);
		tcp->th_dport = htons((uint16_t)o->dport);
		tcp->th_seq = htonl(TCP_SEQ);
		if (o->tcp_flags & TH_ACK)
			tcp->th_ack = htonl(TCP_ACK_SEQ);
		tcp->th_off = sizeof(*tcp) / 4;
		tcp->th_flags = o->tcp_flags;
		tcp->th_win = htons(TCP_WINDOW);
	} else {
		struct udphdr *udp = (struct udphdr *)l4;

		udp->source = htons(SPORT);
		udp->dest = htons((uint16_t)o->dport);
		udp->len = htons((uint16_t)len);
		udp->check = 0;
	}
}

static void set_l4_csum(uint8_t *l4, uint8_t proto, uint16_t csum)
{
	uint16_t *check = proto == IPPROTO_TCP ? &((struct tcphdr *)l4)->th_sum :
						 &((struct udphdr *)l4)->check;

	/* For UDP 0 means "no checksum" (and is illegal for v6): send all ones. */
	*check = htons(!csum && proto == IPPROTO_UDP ? 0xffff : csum);
}

/* Write the whole frame for source src into f (payload stays as it is:
 * zero, so it adds nothing to the L4 checksum). */
static void build_frame(uint8_t *f, const struct flood_opts *o, const uint8_t *src_mac,
			const struct addr *src)
{
	struct ether_header *eth = (struct ether_header *)f;
	uint8_t *l3 = f + sizeof(*eth);
	uint8_t *l4 = l3 + l3_len(o->dst.family);
	size_t seg_len = o->size - sizeof(*eth) - l3_len(o->dst.family);
	uint32_t sum;

	memcpy(eth->ether_dhost, o->dst_mac, ETH_ALEN);
	memcpy(eth->ether_shost, src_mac, ETH_ALEN);
	build_l4(l4, o, seg_len);

	if (o->dst.family == AF_INET) {
		struct iphdr *ip = (struct iphdr *)l3;

		eth->ether_type = htons(ETHERTYPE_IP);
		memset(ip, 0, sizeof(*ip));
		ip->version = 4;
		ip->ihl = 5;
		ip->tot_len = htons((uint16_t)(o->size - sizeof(*eth)));
		ip->frag_off = htons(IP_DF);
		ip->ttl = 64;
		ip->protocol = o->proto;
		memcpy(&ip->saddr, src->a, 4);
		memcpy(&ip->daddr, o->dst.a, 4);
		ip->check = htons(csum_fold(csum_add(0, ip, sizeof(*ip))));
		/* pseudo header: addresses, protocol, L4 length */
		sum = csum_add(0, &ip->saddr, 8);
	} else {
		struct ip6_hdr *ip6 = (struct ip6_hdr *)l3;

		eth->ether_type = htons(ETHERTYPE_IPV6);
		memset(ip6, 0, sizeof(*ip6));
		ip6->ip6_flow = htonl(6U << 28);
		ip6->ip6_plen = htons((uint16_t)seg_len);
		ip6->ip6_nxt = o->proto;
		ip6->ip6_hlim = 64;
		memcpy(&ip6->ip6_src, src->a, 16);
		memcpy(&ip6->ip6_dst, o->dst.a, 16);
		sum = csum_add(0, &ip6->ip6_src, 32);
	}
	sum += o->proto + (uint32_t)seg_len;
	sum = csum_add(sum, l4, seg_len);
	set_l4_csum(l4, o->proto, csum_fold(sum));
}

/* --align PERIOD[+OFFSET], seconds. */
static bool parse_align(const char *s, struct flood_opts *o)
{
	double period, off = 0;
	char *end;

	errno = 0;
	period = strtod(s, &end);
	if (errno || end == s || !(period > 0) || period > ALIGN_MAX)
		return false;
	if (*end == '+') {
		s = end + 1;
		off = strtod(s, &end);
		if (errno || end == s || !(off >= 0) || off >= period)
			return false;
	}
	if (*end)
		return false;
	o->align_ns = (uint64_t)(period * NS_PER_SEC + 0.5);
	o->align_off_ns = (uint64_t)(off * NS_PER_SEC + 0.5);
	return o->align_ns > 0 && o->align_off_ns < o->align_ns;
}

static int parse_opts(int argc, char **argv, struct flood_opts *o)
{
	static const struct option longopts[] = {
		{ "iface", required_argument, NULL, 'i' },
		{ "dst-mac", required_argument, NULL, 'm' },
		{ "src", required_argument, NULL, 's' },
		{ "sources", required_argument, NULL, 'n' },
		{ "src-step", required_argument, NULL, 'k' },
		{ "proto", required_argument, NULL, 'P' },
		{ "tcp-flags", required_argument, NULL, 'f' },
		{ "dst", required_argument, NULL, 'd' },
		{ "dport", required_argument, NULL, 'p' },
		{ "count", required_argument, NULL, 'c' },
		{ "pps", required_argument, NULL, 'r' },
		{ "seconds", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 'z' },
		{ "xdp", no_argument, NULL, 'x' },
		{ "random", required_argument, NULL, 'R' },
		{ "skip", required_argument, NULL, 'S' },
		{ "seed", required_argument, NULL, 'e' },
		{ "timestamps", required_argument, NULL, 'T' },
		{ "align", required_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_src = false, have_dst = false, have_size = false, have_flags = false;
	bool have_walk = false, have_skip = false, have_seed = false;
	uint32_t rnd_len = 0, skip_len = 0, net_be;
	struct addr last;
	uint64_t v;
	size_t hdrs;
	char *end;
	int c;

	memset(o, 0, sizeof(*o));
	memset(o->dst_mac, 0xff, sizeof(o->dst_mac));	/* broadcast */
	o->sources = 1;
	o->src_step = 1;
	o->proto = IPPROTO_UDP;
	o->tcp_flags = TH_SYN;
	o->seconds = SECONDS_DEFAULT;
	o->dport = DPORT_DEFAULT;

	opterr = 0;	/* one line of our own instead of getopt's */
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (!*optarg || strlen(optarg) >= IF_NAMESIZE)
				return usage_err("bad --iface '%s'", optarg);
			o->iface = optarg;
			break;
		case 'm':
			if (!parse_mac(optarg, o->dst_mac))
				return usage_err("bad --dst-mac '%s': give aa:bb:cc:dd:ee:ff", optarg);
			break;
		case 's':
			if (!parse_addr(optarg, &o->src))
				return usage_err("bad --src '%s': give an IPv4 or IPv6 address", optarg);
			have_src = true;
			have_walk = true;
			break;
		case 'd':
			if (!parse_addr(optarg, &o->dst))
				return usage_err("bad --dst '%s': give an IPv4 or IPv6 address", optarg);
			have_dst = true;
			break;
		case 'n':
			have_walk = true;
			if (!parse_u64(optarg, 1, SOURCES_MAX, &o->sources))
				return usage_err("bad --sources '%s': give 1..%llu", optarg,
						 (unsigned long long)SOURCES_MAX);
			break;
		case 'k':
			have_walk = true;
			if (!parse_u64(optarg, 1, SOURCES_MAX, &o->src_step))
				return usage_err("bad --src-step '%s': give 1..%llu", optarg,
						 (unsigned long long)SOURCES_MAX);
			break;
		case 'P':
			if (!strcmp(optarg, "udp"))
				o->proto = IPPROTO_UDP;
			else if (!strcmp(optarg, "tcp"))
				o->proto = IPPROTO_TCP;
			else
				return usage_err("bad --proto '%s': give udp or tcp", optarg);
			break;
		case 'f':
			if (!parse_tcp_flags(optarg, &o->tcp_flags))
				return usage_err("bad --tcp-flags '%s': give a comma-separated list "
						 "of fin, syn, rst, psh, ack, urg, synack", optarg);
			have_flags = true;
			break;
		case 'p':
			if (!parse_u64(optarg, 1, 65535, &v))
				return usage_err("bad --dport '%s': give 1..65535", optarg);
			o->dport = (unsigned int)v;
			break;
		case 'c':
			if (!parse_u64(optarg, 1, COUNT_MAX, &o->count))
				return usage_err("bad --count '%s': give 1..%llu packets", optarg,
						 (unsigned long long)COUNT_MAX);
			break;
		case 'r':
			if (!parse_u64(optarg, 0, PPS_MAX, &o->pps))
				return usage_err("bad --pps '%s': give 0 (as fast as possible)..%llu",
						 optarg, (unsigned long long)PPS_MAX);
			break;
		case 't':
			errno = 0;
			o->seconds = strtod(optarg, &end);
			if (errno || !*optarg || *end || !(o->seconds > 0) ||
			    o->seconds > SECONDS_MAX)
				return usage_err("bad --seconds '%s': give a time in (0, %.0f]",
						 optarg, SECONDS_MAX);
			break;
		case 'z':
			if (!parse_u64(optarg, 1, FRAME_MAX, &v))
				return usage_err("bad --size '%s': give a frame length up to %d",
						 optarg, FRAME_MAX);
			o->size = (unsigned int)v;
			have_size = true;
			break;
		case 'x':
			o->xdp = true;
			break;
		case 'R':
			if (!parse_cidr4(optarg, &o->rnd.net, &rnd_len) ||
			    32 - rnd_len > RANDOM_BITS_MAX)
				return usage_err("bad --random '%s': give an IPv4 network (no host "
						 "bits) within 198.18.0.0/15, e.g. 198.18.0.0/15",
						 optarg);
			o->random = true;
			break;
		case 'S':
			if (!parse_cidr4(optarg, &o->rnd.skip_net, &skip_len))
				return usage_err("bad --skip '%s': give an IPv4 CIDR, "
						 "e.g. 198.19.255.0/24", optarg);
			have_skip = true;
			break;
		case 'e':
			if (!parse_u64(optarg, 0, UINT32_MAX, &v))
				return usage_err("bad --seed '%s': give 0..%u", optarg, UINT32_MAX);
			o->rnd.seed = (uint32_t)v;
			have_seed = true;
			break;
		case 'T':
			if (!*optarg)
				return usage_err("bad --timestamps '': give a file to write");
			o->timestamps = optarg;
			break;
		case 'A':
			if (!parse_align(optarg, o))
				return usage_err("bad --align '%s': give PERIOD[+OFFSET] in seconds, "
						 "0 < PERIOD <= %.0f, 0 <= OFFSET < PERIOD (e.g. 1+0.7)",
						 optarg, ALIGN_MAX);
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			return usage_err("bad option or missing value in '%s': see '" PROG
					 " --help'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_err("unexpected argument '%s': see '" PROG " --help'", argv[optind]);
	if (!o->iface)
		return usage_err("--iface is required: see '" PROG " --help'");
	if (!o->count)
		return usage_err("--count is required: see '" PROG " --help'");
	if (o->xdp && o->timestamps)
		return usage_err("--timestamps times the frames of the packet socket: "
				 "leave out --xdp");
	if (have_flags && o->proto != IPPROTO_TCP)
		return usage_err("--tcp-flags needs --proto tcp");
	if (o->random && have_walk)
		return usage_err("--random picks the sources itself: leave out --src, "
				 "--sources and --src-step");
	if ((have_skip || have_seed) && !o->random)
		return usage_err("--%s goes with --random CIDR", have_skip ? "skip" : "seed");
	if (o->random && o->xdp && o->proto != IPPROTO_UDP)
		return usage_err("--xdp with --random sends UDP only: leave out --proto tcp, "
				 "or --xdp");
	if (o->xdp && o->sources > 1 && (o->proto != IPPROTO_UDP || o->src_step != 1))
		return usage_err("--xdp with --sources sends UDP from consecutive sources only: "
				 "leave out --proto tcp and --src-step, or --xdp");

	if (o->random) {
		o->rnd.bits = 32 - rnd_len;
		o->sources = (uint64_t)1 << o->rnd.bits;
		if (have_skip && (skip_len <= rnd_len ||
				  (o->rnd.skip_net & ~flood_host_mask(o->rnd.bits)) != o->rnd.net))
			return usage_err("--skip must be a smaller range inside the --random one");
		if (have_skip)
			o->rnd.skip_mask = ~flood_host_mask(32 - skip_len);
		if (!have_seed)
			o->rnd.seed = (uint32_t)now_ns() ^ (uint32_t)getpid();
		/* as a walk over the CIDR, for the range checks below */
		net_be = htonl(o->rnd.net);
		o->src.family = AF_INET;
		memcpy(o->src.a, &net_be, sizeof(net_be));
		o->src_step = 1;
		have_src = true;
	}
	/* Defaults follow the family of whichever address was given. */
	if (!have_src)
		parse_addr(have_dst && o->dst.family == AF_INET6 ? "2001:2::1" : "198.18.0.1",
			   &o->src);
	if (!have_dst)
		parse_addr(o->src.family == AF_INET6 ? "2001:2::2" : "198.18.0.2", &o->dst);
	if (o->src.family != o->dst.family)
		return usage_err("--src and --dst must both be IPv4 or both IPv6");
	if (!addr_is_bench(&o->dst))
		return usage_err("refusing destination outside 198.18.0.0/15 and 2001:2::/48");
	if (!addr_last(&o->src, o->sources, o->src_step, &last) || !addr_is_bench(&o->src) ||
	    !addr_is_bench(&last))
		return usage_err("refusing source%s outside 198.18.0.0/15 and 2001:2::/48",
				 o->sources > 1 ? "s" : "");

	hdrs = headers_len(o->dst.family, o->proto);
	if (!have_size) {
		o->size = FRAME_MIN + (o->dst.family == AF_INET6 ? 4 : 0);
		if (o->size < hdrs)
			o->size = (unsigned int)hdrs;
	}
	if (o->size < hdrs || o->size < FRAME_MIN)
		return usage_err("bad --size %u: a %s/IPv%d frame needs at least %zu bytes",
				 o->size, o->proto == IPPROTO_TCP ? "TCP" : "UDP",
				 o->dst.family == AF_INET ? 4 : 6,
				 hdrs > FRAME_MIN ? hdrs : (size_t)FRAME_MIN);
	return 0;
}

static int open_socket(const char *iface, int *ifindex, uint8_t mac[ETH_ALEN])
{
	struct sockaddr_ll ll = { .sll_family = AF_PACKET };
	struct ifreq ifr = {};
	int fd, one = 1;

	fd = socket(AF_PACKET, SOCK_RAW, 0);	/* protocol 0: send only */
	if (fd < 0)
		return -runtime_err("cannot open a packet socket: %s (run as root)",
				    strerror(errno));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	if (ioctl(fd, SIOCGIFINDEX, &ifr)) {
		close(fd);
		return -usage_err("no interface '%s' in this namespace", iface);
	}
	*ifindex = ifr.ifr_ifindex;
	if (ioctl(fd, SIOCGIFHWADDR, &ifr)) {
		close(fd);
		return -runtime_err("cannot read the MAC of %s: %s", iface, strerror(errno));
	}
	memcpy(mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	/* Straight to the driver: no qdisc, and no copy back to local taps. */
	setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	ll.sll_ifindex = *ifindex;
	if (bind(fd, (struct sockaddr *)&ll, sizeof(ll))) {
		close(fd);
		return -runtime_err("cannot bind to %s: %s", iface, strerror(errno));
	}
	return fd;
}

/*
 * Live-frames mode: tools/flood_xdp.bpf.c, run by BPF_PROG_TEST_RUN with
 * BPF_F_TEST_XDP_LIVE_FRAMES on IF, transmits each frame through IF's
 * driver (XDP_TX), moving IPv4 frames through the sources as it goes; a
 * veth hands them to its peer as XDP frames. The time bound is checked
 * between runs of up to XDP_CHUNK_MAX frames.
 */
static int send_xdp(const struct flood_opts *o, int ifindex, const uint8_t *src_mac,
		    uint64_t *sent, uint64_t *first, uint64_t *last, uint64_t *frames_run)
{
	static uint8_t buf[FRAME_SLOT] __attribute__((aligned(8)));
	uint64_t start = now_ns(), deadline = start + (uint64_t)(o->seconds * NS_PER_SEC);
	struct flood_xdp_bpf *skel;
	uint32_t first_src;
	int prog, err = 0;

	skel = flood_xdp_bpf__open();
	if (!skel)
		return runtime_err("cannot open the XDP_TX program: %s", strerror(errno));
	memcpy(&first_src, o->src.a, sizeof(first_src));
	skel->rodata->src_first = ntohl(first_src);
	skel->rodata->src_count = (uint32_t)o->sources;
	skel->rodata->random_on = o->random;
	memcpy((void *)&skel->rodata->rnd, &o->rnd, sizeof(o->rnd));
	if (o->src.family == AF_INET6) {
		uint64_t hi = 0, lo = 0;

		for (int i = 0; i < 8; i++) {
			hi = hi << 8 | o->src.a[i];
			lo = lo << 8 | o->src.a[8 + i];
		}
		skel->rodata->src6_hi = hi;
		skel->rodata->src6_lo = lo;
	}
	if (flood_xdp_bpf__load(skel)) {
		flood_xdp_bpf__destroy(skel);
		return runtime_err("cannot load the XDP_TX program: %s (root? BPF enabled?)",
				   strerror(errno));
	}
	prog = bpf_program__fd(skel->progs.flood_xdp_tx);
	build_frame(buf, o, src_mac, &o->src);
	while (*sent < o->count && !stop && now_ns() < deadline) {
		uint64_t chunk = o->pps ? XDP_PACED_RUN : XDP_CHUNK_MAX;
		uint64_t n = o->count - *sent < chunk ? o->count - *sent : chunk;
		struct xdp_md ctx = { .data_end = o->size, .ingress_ifindex = (uint32_t)ifindex };
		struct bpf_test_run_opts run = {
			.sz = sizeof(run),
			.data_in = buf,
			.data_size_in = o->size,
			.ctx_in = &ctx,
			.ctx_size_in = sizeof(ctx),
			.repeat = (uint32_t)n,
			.flags = BPF_F_TEST_XDP_LIVE_FRAMES,
			.batch_size = XDP_BATCH,
		};
		uint64_t t;

		/* paced: frame k is due at start + k/pps */
		if (o->pps) {
			uint64_t at = start + (uint64_t)((double)*sent * NS_PER_SEC / (double)o->pps);

			if (at > deadline)
				break;
			if (at > now_ns())
				sleep_until(at);
		}
		t = now_ns();
		if (bpf_prog_test_run_opts(prog, &run)) {
			if (errno == EINTR && stop)
				break;	/* SIGINT/SIGTERM: a stop, not an error */
			err = runtime_err("cannot send XDP frames on %s: %s", o->iface,
					  strerror(errno));
			break;
		}
		if (!*sent)
			*first = t;
		*last = now_ns();
		*sent += n;
	}
	/* the program's own count of the frames it moved to a new source */
	*frames_run = skel->bss->next_src;
	flood_xdp_bpf__destroy(skel);
	return err;
}

/* How many different sources the first n frames used: frames walk the
 * sources (or --random's order) from the first, wrapping after a cycle. */
static uint64_t distinct_sources(const struct flood_opts *o, uint64_t n)
{
	static uint8_t seen[((uint64_t)1 << RANDOM_BITS_MAX) / 8];
	uint64_t count = 0;

	if (!o->random)
		return n < o->sources ? n : o->sources;
	if (n >= o->sources)	/* a whole cycle: all but the skipped range */
		return o->sources - (o->rnd.skip_mask ? (uint64_t)~o->rnd.skip_mask + 1 : 0);
	memset(seen, 0, sizeof(seen));
	for (uint64_t i = 0; i < n; i++) {
		uint32_t h = flood_random_src(&o->rnd, (uint32_t)i) - o->rnd.net;

		count += !(seen[h / 8] & (1U << (h % 8)));
		seen[h / 8] |= (uint8_t)(1U << (h % 8));
	}
	return count;
}

/* n lines of t (ns) as seconds with 9 decimals: one batch's send times. */
static void write_times(FILE *f, uint64_t t, uint64_t n)
{
	char line[32];
	int len = snprintf(line, sizeof(line), "%llu.%09llu\n",
			   (unsigned long long)(t / NS_PER_SEC),
			   (unsigned long long)(t % NS_PER_SEC));

	while (n--)
		fwrite(line, 1, (size_t)len, f);
}

int main(int argc, char **argv)
{
	static uint8_t bufs[BATCH][FRAME_SLOT] __attribute__((aligned(8)));
	uint8_t *frames[BATCH];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	uint8_t src_mac[ETH_ALEN];
	struct flood_opts o;
	uint64_t sent = 0, next_src = 0, start, deadline, first = 0, last = 0, frames_run = 0;
	int fd, ifindex = 0, err = 0;
	FILE *times = NULL;
	double secs;

	err = parse_opts(argc, argv, &o);
	if (err)
		return err;
	if (!in_named_netns())
		return usage_err("refusing to send outside a test namespace: "
				 "run it with 'ip netns exec NS'");
	fd = open_socket(o.iface, &ifindex, src_mac);
	if (fd < 0)
		return -fd;
	if (o.timestamps) {
		times = fopen(o.timestamps, "w");
		if (!times) {
			close(fd);
			return runtime_err("cannot write --timestamps %s: %s", o.timestamps,
					   strerror(errno));
		}
	}

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	memset(msgs, 0, sizeof(msgs));
	for (int i = 0; i < BATCH; i++) {
		frames[i] = bufs[i] + FRAME_ALIGN;
		iov[i].iov_base = frames[i];
		iov[i].iov_len = o.size;
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
		if (o.sources == 1)
			build_frame(frames[i], &o, src_mac, &o.src);
	}

	if (o.align_ns) {
		/* the next moment OFFSET past a multiple of PERIOD */
		start = now_ns() + o.align_ns - o.align_off_ns;
		sleep_until(start - start % o.align_ns + o.align_off_ns);
	}
	start = now_ns();
	deadline = start + (uint64_t)(o.seconds * NS_PER_SEC);
	if (o.xdp)
		err = send_xdp(&o, ifindex, src_mac, &sent, &first, &last, &frames_run);
	while (!o.xdp && sent < o.count && !stop) {
		uint64_t now = now_ns(), due, n, t_send;
		int r;

		if (now >= deadline)
			break;
		/* Pace by schedule (packet k is due at start + k/pps), so a late
		 * wake-up catches up in one batch instead of drifting. */
		if (o.pps) {
			due = (uint64_t)((double)(now - start) * (double)o.pps / NS_PER_SEC) + 1;
			if (due > o.count)
				due = o.count;
			if (due <= sent) {
				uint64_t at = start + (uint64_t)((double)sent * NS_PER_SEC /
								 (double)o.pps);

				sleep_until(at < deadline ? at : deadline);
				continue;
			}
			n = due - sent;
		} else {
			n = o.count - sent;
		}
		if (n > BATCH)
			n = BATCH;
		if (o.sources > 1)
			for (uint64_t i = 0; i < n; i++) {
				struct addr src = o.src;
				uint32_t a;

				if (o.random) {
					a = htonl(flood_random_src(&o.rnd, (uint32_t)next_src));
					memcpy(src.a, &a, sizeof(a));
				} else {
					addr_add(&o.src, next_src * o.src_step, &src);
				}
				build_frame(frames[i], &o, src_mac, &src);
				next_src = next_src + 1 == o.sources ? 0 : next_src + 1;
			}
		t_send = now_ns();
		r = sendmmsg(fd, msgs, (unsigned int)n, 0);
		if (r < 0) {
			if (errno == ENOBUFS || errno == EAGAIN || errno == EINTR) {
				/* Device queue full: back off, nothing was sent. */
				if (o.sources > 1)
					next_src = (next_src + o.sources - n % o.sources) % o.sources;
				sleep_until(now_ns() + ENOBUFS_BACKOFF_NS);
				continue;
			}
			err = runtime_err("cannot send on %s: %s", o.iface, strerror(errno));
			break;
		}
		if (o.sources > 1 && (uint64_t)r < n)	/* rewind unsent sources */
			next_src = (next_src + o.sources - (n - (uint64_t)r) % o.sources) % o.sources;
		if (r > 0) {
			last = now_ns();
			if (!sent)
				first = now;
			sent += (uint64_t)r;
			if (times)
				write_times(times, t_send, (uint64_t)r);
		}
	}
	close(fd);
	if (times && (ferror(times) | fclose(times)) && !err)
		err = runtime_err("cannot write --timestamps %s: %s", o.timestamps,
				  strerror(errno ? errno : EIO));
	secs = sent ? (double)(last - first) / NS_PER_SEC : 0.0;
	printf("{\"sent\": %llu, \"seconds\": %.6f, \"pps\": %.1f, \"distinct_sources\": %llu}\n",
	       (unsigned long long)sent, secs, secs > 0 ? (double)sent / secs : 0.0,
	       (unsigned long long)distinct_sources(&o, o.xdp && o.random ? frames_run : sent));
	return err;
}
