// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Helpers for the fault-injection tests (tests/fault/):
 *
 *   fault_tool probe DIR N SPEC...
 *     Runs probe frames through the program pinned at DIR/prog with
 *     BPF_PROG_TEST_RUN: the datapath's own verdicts. SPEC is
 *     ADDR[,udp|tcp[,DPORT]]; the frame's source is ADDR + N (the last 32
 *     bits of the address), so that a test gets a source never seen before
 *     each time it passes a new N. Each frame runs three times and prints
 *     three letters, P (XDP_PASS) or D (XDP_DROP) or ? (anything else):
 *     PPP for an allowed source, DDD for a denied one, PPD for a limit with
 *     burst 2. The words are separated by spaces; the line ends with the
 *     config word: " gen=G writing=0|1 slot=S".
 *   fault_tool kill DELAY_US CMD ARGS...
 *     Runs CMD (its stdout to /dev/null), sends it SIGKILL DELAY_US microseconds after the fork
 *     (unless it is done by then) and prints "exit N" or "killed", and the
 *     microseconds CMD lived when it exited by itself.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "sluice/sluice.h"

static int usage(void)
{
	fprintf(stderr, "usage: fault_tool probe DIR N ADDR[,udp|tcp[,DPORT]]...\n"
			"       fault_tool kill DELAY_US CMD [ARGS...]\n");
	return 2;
}

static int die(const char *what)
{
	fprintf(stderr, "fault_tool: %s: %s\n", what, strerror(errno));
	return 1;
}

/* Ethernet + IPv4 or IPv6 + UDP or TCP (SYN) from src + n to dport. */
static int build_frame(const char *spec, unsigned long n, __u8 *buf, __u32 *len)
{
	char addr[64], proto[8] = "udp";
	unsigned int dport = 9;
	struct ethhdr *eth = (struct ethhdr *)buf;
	__u8 *l4;
	__u8 ipproto;
	__u32 l4len;
	const char *c1 = strchr(spec, ','), *c2;
	size_t alen = c1 ? (size_t)(c1 - spec) : strlen(spec);

	if (alen >= sizeof(addr))
		return -1;
	memcpy(addr, spec, alen);
	addr[alen] = 0;
	if (c1) {
		c2 = strchr(c1 + 1, ',');
		snprintf(proto, sizeof(proto), "%.*s", c2 ? (int)(c2 - c1 - 1) : 7, c1 + 1);
		if (c2)
			dport = (unsigned int)strtoul(c2 + 1, NULL, 10);
	}
	ipproto = !strcmp(proto, "tcp") ? IPPROTO_TCP : IPPROTO_UDP;
	l4len = ipproto == IPPROTO_TCP ? sizeof(struct tcphdr) : sizeof(struct udphdr);
	memset(buf, 0, 256);
	memcpy(eth->h_dest, "\x02\0\0\0\0\x02", ETH_ALEN);
	memcpy(eth->h_source, "\x02\0\0\0\0\x01", ETH_ALEN);
	if (strchr(addr, ':')) {
		struct ipv6hdr *ip6 = (struct ipv6hdr *)(eth + 1);
		__u32 last;

		eth->h_proto = htons(ETH_P_IPV6);
		ip6->version = 6;
		ip6->nexthdr = ipproto;
		ip6->hop_limit = 64;
		ip6->payload_len = htons((__u16)l4len);
		if (inet_pton(AF_INET6, addr, &ip6->saddr) != 1 ||
		    inet_pton(AF_INET6, "2001:2::2", &ip6->daddr) != 1)
			return -1;
		memcpy(&last, &ip6->saddr.s6_addr[12], 4);
		last = htonl(ntohl(last) + (__u32)n);
		memcpy(&ip6->saddr.s6_addr[12], &last, 4);
		l4 = (__u8 *)(ip6 + 1);
	} else {
		struct iphdr *ip = (struct iphdr *)(eth + 1);

		eth->h_proto = htons(ETH_P_IP);
		ip->version = 4;
		ip->ihl = 5;
		ip->ttl = 64;
		ip->protocol = ipproto;
		ip->tot_len = htons((__u16)(sizeof(*ip) + l4len));
		if (inet_pton(AF_INET, addr, &ip->saddr) != 1 ||
		    inet_pton(AF_INET, "198.18.0.2", &ip->daddr) != 1)
			return -1;
		ip->saddr = htonl(ntohl(ip->saddr) + (__u32)n);
		l4 = (__u8 *)(ip + 1);
	}
	if (ipproto == IPPROTO_TCP) {
		struct tcphdr *t = (struct tcphdr *)l4;

		t->source = htons(40000);
		t->dest = htons((__u16)dport);
		t->doff = sizeof(*t) / 4;
		t->syn = 1;
	} else {
		struct udphdr *u = (struct udphdr *)l4;

		u->source = htons(4000);
		u->dest = htons((__u16)dport);
		u->len = htons(sizeof(*u));
	}
	*len = (__u32)(l4 + l4len - buf);
	if (*len < 60)
		*len = 60;
	return 0;
}

static int probe(int argc, char **argv)
{
	char path[512];
	unsigned long n;
	struct sluice_config cfg;
	__u32 zero = 0;
	int prog, config;

	if (argc < 4)
		return usage();
	n = strtoul(argv[2], NULL, 10);
	snprintf(path, sizeof(path), "%s/prog", argv[1]);
	prog = bpf_obj_get(path);
	if (prog < 0)
		return die(path);
	snprintf(path, sizeof(path), "%s/config", argv[1]);
	config = bpf_obj_get(path);
	if (config < 0)
		return die(path);
	for (int i = 3; i < argc; i++) {
		__u8 buf[256], out[256];
		__u32 len;

		if (build_frame(argv[i], n, buf, &len)) {
			fprintf(stderr, "fault_tool: bad probe '%s'\n", argv[i]);
			return 2;
		}
		for (int k = 0; k < 3; k++) {
			LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = buf, .data_size_in = len,
				    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

			if (bpf_prog_test_run_opts(prog, &o))
				return die("BPF_PROG_TEST_RUN");
			putchar(o.retval == 2 ? 'P' : o.retval == 1 ? 'D' : '?');
		}
		putchar(i + 1 < argc ? ' ' : '\n');
	}
	if (bpf_map_lookup_elem(config, &zero, &cfg))
		return die("config map");
	printf("gen=%llu writing=%d slot=%u\n", (unsigned long long)SLUICE_GEN(cfg.gen_slot),
	       !!(cfg.gen_slot & SLUICE_GEN_WRITING), SLUICE_GEN_SLOT(cfg.gen_slot));
	return 0;
}

static long long us_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000000LL + (t.tv_nsec - t0->tv_nsec) / 1000;
}

static int kill_after(int argc, char **argv)
{
	struct timespec t0, until;
	long long delay;
	int status;
	pid_t pid;

	if (argc < 3)
		return usage();
	delay = strtoll(argv[1], NULL, 10);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid < 0)
		return die("fork");
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execvp(argv[2], argv + 2);
		_exit(127);
	}
	until.tv_sec = t0.tv_sec + delay / 1000000;
	until.tv_nsec = t0.tv_nsec + (delay % 1000000) * 1000;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	/* Reap early if it is done before the deadline, to know how long it ran. */
	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid) {
			printf("exit %d %lld\n", WIFEXITED(status) ? WEXITSTATUS(status) :
			       128 + WTERMSIG(status), us_since(&t0));
			return 0;
		}
		if (us_since(&t0) >= delay)
			break;
		{
			struct timespec step = { 0, 50000 };	/* 50 us */

			nanosleep(&step, NULL);
		}
	}
	kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		return die("waitpid");
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		printf("killed %lld\n", delay);
	else
		printf("exit %d %lld\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
		       us_since(&t0));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[1], "probe"))
		return probe(argc - 1, argv + 1);
	if (!strcmp(argv[1], "kill"))
		return kill_after(argc - 1, argv + 1);
	return usage();
}
