// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice: `sluice [-j] [-i IFACE] OBJECT COMMAND ...`, dispatched from a table. */
#include <errno.h>
#include <string.h>
#include "sluice.h"

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.0.0"
#endif

struct options opts;

static int cmd_help(int argc, char **argv);

static int cmd_version(int argc, char **argv)
{
	if (argc > 1 && is_help(argv[1])) {
		printf("Usage: sluice version\n  Prints the version of sluice.\n");
		return 0;
	}
	if (argc > 1)
		return usage_err("unexpected argument '%s': usage: sluice version", argv[1]);
	printf("sluice %s\n", SLUICE_VERSION);
	return 0;
}

static const struct cmd top_cmds[] = {
	{ "attach",   cmd_attach,
	  "attach IFACE [--mode native|skb|auto] [--max-sources N] [--group NAME]" },
	{ "detach",   cmd_detach,   "detach IFACE [--force]" },
	{ "status",   cmd_status,   "status [-j]" },
	{ "limit",    cmd_limit,    "limit default|set|del|list ...   (sluice limit --help)" },
	{ "allow",    cmd_allow,    "allow CIDR" },
	{ "deny",     cmd_deny,     "deny CIDR" },
	{ "policy",   cmd_policy,   "policy apply|check FILE | policy show" },
	{ "stats",    cmd_stats,    "stats [-j] [--watch SECONDS]" },
	{ "top",      cmd_top,      "top [-n N] [-j]" },
	{ "query",    cmd_query,    "query ADDR [-j]" },
	{ "exporter", cmd_exporter, "exporter [--listen ADDR:PORT] [--user USER] [--group GROUP]" },
	{ "version",  cmd_version,  "version" },
	{ "help",     cmd_help,     "help" },
	{ NULL, NULL, NULL },
};

int print_usage(FILE *f, const char *object, const struct cmd *cmds)
{
	fprintf(f, "Usage: sluice [-j] [-i IFACE] %s\n", object);
	for (const struct cmd *c = cmds; c->name; c++)
		fprintf(f, "       sluice %s\n", c->usage);
	fprintf(f, "Options: -j, --json  print JSON; -i, --interface IFACE  pick the interface;\n"
		   "         --bpffs DIR  the bpffs holding the pins (default: the host's)\n"
		   "See sluice(8) for the whole manual.\n");
	return 0;
}

static int cmd_help(int argc, char **argv)
{
	if (argc > 1 && !is_help(argv[1]))
		return usage_err("unexpected argument '%s': usage: sluice help", argv[1]);
	return print_usage(stdout, "OBJECT COMMAND", top_cmds);
}

int dispatch(const char *object, const struct cmd *cmds, int argc, char **argv)
{
	for (const struct cmd *c = cmds; c->name; c++)
		if (!strcmp(c->name, object))
			return c->fn(argc, argv);
	return usage_err("unknown command '%s': see 'sluice help'", object);
}

/* Take the global options out of argv wherever they are, so that both
 * `sluice -j stats` and `sluice stats -j` work. Returns the new argc. */
static int strip_global_opts(int argc, char **argv, int *bad)
{
	int out = 1;

	*bad = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			while (i < argc)
				argv[out++] = argv[i++];
			break;
		}
		if (!strcmp(a, "-j") || !strcmp(a, "--json")) {
			opts.json = true;
		} else if (!strcmp(a, "-i") || !strcmp(a, "--interface")) {
			if (i + 1 >= argc) {
				*bad = usage_err("%s needs an interface name", a);
				return 0;
			}
			opts.iface = argv[++i];
		} else if (!strncmp(a, "--interface=", 12)) {
			opts.iface = a + 12;
		} else if (!strcmp(a, "--bpffs")) {
			if (i + 1 >= argc) {
				*bad = usage_err("%s needs a directory: where bpffs is mounted", a);
				return 0;
			}
			opts.bpffs = argv[++i];
		} else if (!strncmp(a, "--bpffs=", 8)) {
			opts.bpffs = a + 8;
		} else {
			argv[out++] = argv[i];
		}
	}
	argv[out] = NULL;
	return out;
}

int main(int argc, char **argv)
{
	int bad, rc;

	argc = strip_global_opts(argc, argv, &bad);
	if (bad)
		return bad;
	if (opts.iface && check_ifname(opts.iface))
		return EXIT_USAGE;
	/* Found now, while privileged: the exporter walks to it after
	 * dropping privileges, and libxdp reads where it is from the
	 * environment. */
	pin_root();
	if (argc < 2) {
		print_usage(stderr, "OBJECT COMMAND", top_cmds);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return cmd_help(1, argv + 1);
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))
		return cmd_version(1, argv + 1);
	if (argv[1][0] == '-')
		return usage_err("unknown option '%s': see 'sluice help'", argv[1]);
	rc = dispatch(argv[1], top_cmds, argc - 1, argv + 1);
	/* Output that did not reach its reader is a failure, not success. */
	if ((fflush(stdout) || ferror(stdout)) && rc == 0)
		return runtime_err("cannot write the output: %s", strerror(errno));
	return rc;
}
