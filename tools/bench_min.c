// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* bench-min: loads the minimal XDP token bucket (tools/bench_min.bpf.c)
 * onto an interface in native mode for tools/bench-napi.sh, with its
 * source tables sized like sluice's (--max-sources) and its limit set, and
 * removes it again. The program stays attached after this exits (the
 * netlink attachment holds it), until `bench-min detach`. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bench_min.skel.h"

#define PROG			"bench-min"
#define EXIT_RUNTIME		1
#define EXIT_USAGE		2
#define NS_PER_SEC		1000000000ULL
#define MAX_SOURCES_MIN		1U
#define MAX_SOURCES_MAX		16777216U
#define RATE_MAX		1000000000ULL	/* per unit */
#define BURST_MAX		1000000000ULL

static const char usage[] =
	"Usage: " PROG " attach IFACE --max-sources N [--rate N[/s|/m|/h]] [--burst B]\n"
	"       " PROG " detach IFACE\n"
	"       " PROG " verified IFACE\n"
	"  attach loads the minimal XDP token bucket (one LRU hash per family keyed\n"
	"  by the source, one 8-byte TAT, GCRA with a CAS) on IFACE in native mode\n"
	"  (xdpdrv), both tables of N entries (1..16777216), limit N per second\n"
	"  (bare N), minute or hour (default 1/s) with burst B (default 1), and prints\n"
	"  {\"prog_id\": P, \"map_ids\": [V4, V6]}. detach removes it (any XDP\n"
	"  program attached in native mode on IFACE). verified prints the\n"
	"  instructions the verifier processed for the XDP program attached in\n"
	"  native mode on IFACE, whichever it is (bpftool 7.1 does not show them).\n";

static int err_line(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int err_line(int code, const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

static bool parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* --rate N[/s|/m|/h]: the emission interval, 1 unit / N, in ns. */
static bool parse_rate(const char *s, uint64_t *interval_ns)
{
	static const struct {
		const char *suffix;
		uint64_t ns;
	} units[] = { { "", NS_PER_SEC }, { "/s", NS_PER_SEC }, { "/m", 60 * NS_PER_SEC },
		      { "/h", 3600 * NS_PER_SEC } };
	char num[24];
	size_t len = strcspn(s, "/");
	uint64_t n;

	if (len >= sizeof(num))
		return false;
	memcpy(num, s, len);
	num[len] = '\0';
	if (!parse_u64(num, 1, RATE_MAX, &n))
		return false;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(s + len, units[i].suffix)) {
			*interval_ns = units[i].ns / n;
			return true;
		}
	return false;
}

static int map_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? -1 : (int)info.id;
}

static int do_attach(int ifindex, const char *iface, uint64_t max_sources, uint64_t interval,
		     uint64_t burst)
{
	struct bench_min_bpf *skel;
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int prog, err;

	libbpf_set_print(NULL);
	skel = bench_min_bpf__open();
	if (!skel)
		return err_line(EXIT_RUNTIME, "cannot open the program: %s", strerror(errno));
	skel->rodata->interval_ns = interval;
	skel->rodata->tolerance_ns = burst * interval;
	if (bpf_map__set_max_entries(skel->maps.min_tat4, (__u32)max_sources) ||
	    bpf_map__set_max_entries(skel->maps.min_tat6, (__u32)max_sources) ||
	    bench_min_bpf__load(skel)) {
		err = errno;
		bench_min_bpf__destroy(skel);
		return err_line(EXIT_RUNTIME, "cannot load the program: %s (root? BPF enabled?)",
				strerror(err));
	}
	prog = bpf_program__fd(skel->progs.bench_min);
	if (bpf_xdp_attach(ifindex, prog, XDP_FLAGS_DRV_MODE | XDP_FLAGS_UPDATE_IF_NOEXIST,
			   NULL)) {
		err = errno;
		bench_min_bpf__destroy(skel);
		return err_line(EXIT_RUNTIME, "cannot attach to %s in native mode: %s (another "
				"XDP program there? '" PROG " detach %s' first)", iface,
				strerror(err), iface);
	}
	bpf_obj_get_info_by_fd(prog, &info, &len);
	printf("{\"prog_id\": %u, \"map_ids\": [%d, %d]}\n", info.id,
	       map_id(bpf_map__fd(skel->maps.min_tat4)), map_id(bpf_map__fd(skel->maps.min_tat6)));
	/* The attachment keeps the program and its maps; our fds can go. */
	bench_min_bpf__destroy(skel);
	return fflush(stdout) ? err_line(EXIT_RUNTIME, "cannot write to stdout") : 0;
}

/* verified_insns of the native-mode XDP program on ifindex, on stdout. */
static int do_verified(int ifindex, const char *iface)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), id = 0;
	int fd, err;

	if (bpf_xdp_query_id(ifindex, XDP_FLAGS_DRV_MODE, &id) || !id)
		return err_line(EXIT_RUNTIME, "no XDP program in native mode on %s", iface);
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return err_line(EXIT_RUNTIME, "cannot open program %u: %s", id, strerror(errno));
	err = bpf_obj_get_info_by_fd(fd, &info, &len);
	close(fd);
	if (err)
		return err_line(EXIT_RUNTIME, "cannot read program %u: %s", id, strerror(errno));
	if (printf("%u\n", info.verified_insns) < 0 || fflush(stdout))
		return err_line(EXIT_RUNTIME, "cannot write to stdout: %s", strerror(errno));
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "max-sources", required_argument, NULL, 'n' },
		{ "rate", required_argument, NULL, 'r' },
		{ "burst", required_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t max_sources = 0, interval = NS_PER_SEC, burst = 1;
	const char *cmd, *iface;
	bool have_opts = false;
	unsigned int ifindex;
	int c;

	opterr = 0;	/* one line of our own instead of getopt's */
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!parse_u64(optarg, MAX_SOURCES_MIN, MAX_SOURCES_MAX, &max_sources))
				return err_line(EXIT_USAGE, "bad --max-sources '%s': give %u..%u",
						optarg, MAX_SOURCES_MIN, MAX_SOURCES_MAX);
			have_opts = true;
			break;
		case 'r':
			if (!parse_rate(optarg, &interval))
				return err_line(EXIT_USAGE, "bad --rate '%s': give N[/s|/m|/h], "
						"N 1..%llu", optarg, RATE_MAX);
			have_opts = true;
			break;
		case 'b':
			if (!parse_u64(optarg, 1, BURST_MAX, &burst))
				return err_line(EXIT_USAGE, "bad --burst '%s': give 1..%llu", optarg,
						BURST_MAX);
			have_opts = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			return err_line(EXIT_USAGE, "bad option or missing value in '%s': see '"
					PROG " --help'", argv[optind - 1]);
		}
	}
	/* GNU getopt moved the command and the interface to the end */
	if (argc - optind != 2)
		return err_line(EXIT_USAGE, "give a command and one interface: see '" PROG
				" --help'");
	cmd = argv[optind];
	iface = argv[optind + 1];
	if (strcmp(cmd, "attach") != 0 && strcmp(cmd, "detach") != 0 &&
	    strcmp(cmd, "verified") != 0)
		return err_line(EXIT_USAGE, "unknown command '%s': give attach, detach or verified",
				cmd);
	ifindex = if_nametoindex(iface);
	if (!ifindex)
		return err_line(EXIT_USAGE, "no interface '%s' in this namespace", iface);
	if (!strcmp(cmd, "attach")) {
		if (!max_sources)
			return err_line(EXIT_USAGE, "attach needs --max-sources N: see '" PROG
					" --help'");
		if (burst > UINT64_MAX / 4 / interval)
			return err_line(EXIT_USAGE, "--burst %llu is too long at that rate: give "
					"a burst under a century", (unsigned long long)burst);
		return do_attach((int)ifindex, iface, max_sources, interval, burst);
	}
	if (have_opts)
		return err_line(EXIT_USAGE, "%s takes no options: see '" PROG " --help'", cmd);
	if (!strcmp(cmd, "verified"))
		return do_verified((int)ifindex, iface);
	if (bpf_xdp_detach((int)ifindex, XDP_FLAGS_DRV_MODE, NULL))
		return err_line(EXIT_RUNTIME, "cannot detach from %s: %s", iface, strerror(errno));
	return 0;
}
