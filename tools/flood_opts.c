// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice-flood's command line: the usage text, the parsers of its values
 * and the checks that keep it to the benchmarking ranges. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "flood.h"

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

int usage_err(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return EXIT_USAGE;
}

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
void addr_add(const struct addr *a, uint64_t n, struct addr *out)
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

/* What the command line gave, for the checks after it. */
struct opts_seen {
	bool src, dst, size, flags, walk, skip, seed;
	uint32_t rnd_len, skip_len;
};

/* The options of what is sent, from where to where: 0 when c was one of
 * them, 1 when it is not, else the exit status. */
static int opt_traffic(int c, struct flood_opts *o, struct opts_seen *h)
{
	uint64_t v;

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
		h->src = true;
		h->walk = true;
		break;
	case 'd':
		if (!parse_addr(optarg, &o->dst))
			return usage_err("bad --dst '%s': give an IPv4 or IPv6 address", optarg);
		h->dst = true;
		break;
	case 'n':
		h->walk = true;
		if (!parse_u64(optarg, 1, SOURCES_MAX, &o->sources))
			return usage_err("bad --sources '%s': give 1..%llu", optarg,
					 (unsigned long long)SOURCES_MAX);
		break;
	case 'k':
		h->walk = true;
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
		h->flags = true;
		break;
	case 'p':
		if (!parse_u64(optarg, 1, 65535, &v))
			return usage_err("bad --dport '%s': give 1..65535", optarg);
		o->dport = (unsigned int)v;
		break;
	default:
		return 1;
	}
	return 0;
}

/* The options of how much, how fast and how: 0 or the exit status. */
static int opt_sending(int c, char **argv, struct flood_opts *o, struct opts_seen *h)
{
	uint64_t v;
	char *end;

	switch (c) {
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
		h->size = true;
		break;
	case 'x':
		o->xdp = true;
		break;
	case 'R':
		if (!parse_cidr4(optarg, &o->rnd.net, &h->rnd_len) ||
		    32 - h->rnd_len > RANDOM_BITS_MAX)
			return usage_err("bad --random '%s': give an IPv4 network (no host "
					 "bits) within 198.18.0.0/15, e.g. 198.18.0.0/15",
					 optarg);
		o->random = true;
		break;
	case 'S':
		if (!parse_cidr4(optarg, &o->rnd.skip_net, &h->skip_len))
			return usage_err("bad --skip '%s': give an IPv4 CIDR, "
					 "e.g. 198.19.255.0/24", optarg);
		h->skip = true;
		break;
	case 'e':
		if (!parse_u64(optarg, 0, UINT32_MAX, &v))
			return usage_err("bad --seed '%s': give 0..%u", optarg, UINT32_MAX);
		o->rnd.seed = (uint32_t)v;
		h->seed = true;
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
	return 0;
}

/* Options that do not go together. */
static int check_combos(int argc, char **argv, const struct flood_opts *o,
			const struct opts_seen *h)
{
	if (optind < argc)
		return usage_err("unexpected argument '%s': see '" PROG " --help'", argv[optind]);
	if (!o->iface)
		return usage_err("--iface is required: see '" PROG " --help'");
	if (!o->count)
		return usage_err("--count is required: see '" PROG " --help'");
	if (o->xdp && o->timestamps)
		return usage_err("--timestamps times the frames of the packet socket: "
				 "leave out --xdp");
	if (h->flags && o->proto != IPPROTO_TCP)
		return usage_err("--tcp-flags needs --proto tcp");
	if (o->random && h->walk)
		return usage_err("--random picks the sources itself: leave out --src, "
				 "--sources and --src-step");
	if ((h->skip || h->seed) && !o->random)
		return usage_err("--%s goes with --random CIDR", h->skip ? "skip" : "seed");
	if (o->random && o->xdp && o->proto != IPPROTO_UDP)
		return usage_err("--xdp with --random sends UDP only: leave out --proto tcp, "
				 "or --xdp");
	if (o->xdp && o->sources > 1 && (o->proto != IPPROTO_UDP || o->src_step != 1))
		return usage_err("--xdp with --sources sends UDP from consecutive sources only: "
				 "leave out --proto tcp and --src-step, or --xdp");

	return 0;
}

/* The sources and destination, defaults filled in, inside the benchmarking
 * ranges. */
static int settle_addrs(struct flood_opts *o, struct opts_seen *h)
{
	uint32_t net_be;
	struct addr last;

	if (o->random) {
		o->rnd.bits = 32 - h->rnd_len;
		o->sources = (uint64_t)1 << o->rnd.bits;
		if (h->skip && (h->skip_len <= h->rnd_len ||
				  (o->rnd.skip_net & ~flood_host_mask(o->rnd.bits)) != o->rnd.net))
			return usage_err("--skip must be a smaller range inside the --random one");
		if (h->skip)
			o->rnd.skip_mask = ~flood_host_mask(32 - h->skip_len);
		if (!h->seed)
			o->rnd.seed = (uint32_t)now_ns() ^ (uint32_t)getpid();
		/* as a walk over the CIDR, for the range checks below */
		net_be = htonl(o->rnd.net);
		o->src.family = AF_INET;
		memcpy(o->src.a, &net_be, sizeof(net_be));
		o->src_step = 1;
		h->src = true;
	}
	/* Defaults follow the family of whichever address was given. */
	if (!h->src)
		parse_addr(h->dst && o->dst.family == AF_INET6 ? "2001:2::1" : "198.18.0.1",
			   &o->src);
	if (!h->dst)
		parse_addr(o->src.family == AF_INET6 ? "2001:2::2" : "198.18.0.2", &o->dst);
	if (o->src.family != o->dst.family)
		return usage_err("--src and --dst must both be IPv4 or both IPv6");
	if (!addr_is_bench(&o->dst))
		return usage_err("refusing destination outside 198.18.0.0/15 and 2001:2::/48");
	if (!addr_last(&o->src, o->sources, o->src_step, &last) || !addr_is_bench(&o->src) ||
	    !addr_is_bench(&last))
		return usage_err("refusing source%s outside 198.18.0.0/15 and 2001:2::/48",
				 o->sources > 1 ? "s" : "");

	return 0;
}

int parse_opts(int argc, char **argv, struct flood_opts *o)
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
	struct opts_seen h = { 0 };
	size_t hdrs;
	int c, err;

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
		err = opt_traffic(c, o, &h);
		if (err == 1)
			err = opt_sending(c, argv, o, &h);
		if (err)
			return err;
	}
	err = check_combos(argc, argv, o, &h);
	if (!err)
		err = settle_addrs(o, &h);
	if (err)
		return err;
	hdrs = headers_len(o->dst.family, o->proto);
	if (!h.size) {
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
