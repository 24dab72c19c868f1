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

#include "flood.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
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

uint64_t now_ns(void)
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

size_t headers_len(int family, uint8_t proto)
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

/* The next n frames from the sources from next_src on, in turn; returns
 * the source after them. */
static uint64_t build_sources(const struct flood_opts *o, uint8_t *const *frames, uint64_t n,
			      const uint8_t *src_mac, uint64_t next_src)
{
	for (uint64_t i = 0; i < n; i++) {
		struct addr src = o->src;
		uint32_t a;

		if (o->random) {
			a = htonl(flood_random_src(&o->rnd, (uint32_t)next_src));
			memcpy(src.a, &a, sizeof(a));
		} else {
			addr_add(&o->src, next_src * o->src_step, &src);
		}
		build_frame(frames[i], o, src_mac, &src);
		next_src = next_src + 1 == o->sources ? 0 : next_src + 1;
	}
	return next_src;
}

/*
 * The packet socket's sends: batches of up to BATCH frames, paced by
 * --pps, until --count, --seconds or a signal; *sent, *first and *last
 * as main prints them. Returns 0 or the exit status.
 */
static int send_socket(const struct flood_opts *op, int fd, uint8_t *const *frames,
		       struct mmsghdr *msgs, const uint8_t *src_mac, FILE *times,
		       uint64_t *sent_out, uint64_t *first_out, uint64_t *last_out)
{
	const struct flood_opts o = *op;
	uint64_t sent = 0, next_src = 0, first = 0, last = 0;
	uint64_t start = now_ns(), deadline = start + (uint64_t)(o.seconds * NS_PER_SEC);
	int err = 0;

	while (sent < o.count && !stop) {
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
			next_src = build_sources(&o, frames, n, src_mac, next_src);
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
	*sent_out = sent;
	*first_out = first;
	*last_out = last;
	return err;
}

int main(int argc, char **argv)
{
	static uint8_t bufs[BATCH][FRAME_SLOT] __attribute__((aligned(8)));
	uint8_t *frames[BATCH];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	uint8_t src_mac[ETH_ALEN];
	struct flood_opts o;
	uint64_t sent = 0, start, first = 0, last = 0, frames_run = 0;
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
	if (o.xdp)
		err = send_xdp(&o, ifindex, src_mac, &sent, &first, &last, &frames_run);
	else
		err = send_socket(&o, fd, frames, msgs, src_mac, times, &sent, &first, &last);
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
