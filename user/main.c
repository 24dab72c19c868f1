// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice: `sluice [-j] [-v] [-i IFACE] OBJECT COMMAND ...`, dispatched from the
 * command tables (cli.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "cli.h"
#include "cluster.h"
#include "commands.h"
#include "rule.h"
#include "simulate.h"

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.0.0"
#endif

struct options opts;

/* The options every command takes, wherever they stand on the line. */
enum { G_JSON, G_VERBOSE, G_IFACE, G_BPFFS };
static const struct cli_opt global_opts[] = {
	[G_JSON] = CLI_OPT("json", 'j', NULL, "print JSON", 0, NULL),
	[G_VERBOSE] = CLI_OPT("verbose", 'v', NULL, "log info lines on stderr too (-vv: debug)", 0,
			      NULL),
	[G_IFACE] = CLI_OPT("interface", 'i', "IFACE", "the interface (needed when more than one is attached)",
		      0, NULL),
	[G_BPFFS] = CLI_OPT("bpffs", 0, "DIR", "the bpffs holding the pins (default: the host's)", 0, NULL),
	CLI_OPT_END,
};

static int version_run(const struct cli_cmd *c, struct cli_args *a)
{
	struct json j;

	(void)c;
	(void)a;
	if (!opts.json) {
		printf("sluice %s\n", SLUICE_VERSION);
		return 0;
	}
	json_begin(&j, stdout);
	json_obj_open(&j, NULL);
	json_str(&j, "version", SLUICE_VERSION);
	json_obj_close(&j);
	json_end(&j);
	return 0;
}

static const struct cli_cmd version_cmd = {
	.name = "version", .path = "version", .json = true, .run = version_run,
	.help = "Prints the version of sluice.",
};

static int help_run(const struct cli_cmd *c, struct cli_args *a);

static const struct cli_cmd help_cmd = {
	.name = "help", .path = "help", .run = help_run, .no_json = "it prints the usage lines",
	.help = "Prints this list; 'sluice COMMAND --help' tells about one command.",
};

static const struct cli_cmd *const top_cmds[] = {
	&attach_cmd, &detach_cmd, &status_cmd, &limit_obj, &rule_cmd_allow, &rule_cmd_deny,
	&policy_obj, &ban_obj, &stats_cmd, &top_cmd, &query_cmd, &exporter_cmd, &check_cmd,
	&cluster_obj, &simulate_cmd, &version_cmd,
	&help_cmd, NULL,
};

static const struct cli_cmd root = {
	.name = "sluice", .path = "", .sub = top_cmds,
};

/* Every command's usage line, objects' commands each on its own. */
static void root_help(FILE *f)
{
	char label[32];

	fprintf(f, "Usage: sluice [-j] [-v] [-i IFACE] OBJECT COMMAND\n");
	for (const struct cli_cmd *const *c = top_cmds; *c; c++) {
		const struct cli_cmd *const *s = (*c)->sub;

		for (; s && *s; s++) {
			fputs("       ", f);
			cli_usage_line(f, *s);
			fputc('\n', f);
		}
		if ((*c)->sub)
			continue;
		fputs("       ", f);
		cli_usage_line(f, *c);
		fputc('\n', f);
	}
	fputs("Options:\n", f);
	for (const struct cli_opt *o = global_opts; o->name; o++) {
		snprintf(label, sizeof(label), "-%c, --%s%s%s", o->short_name ? o->short_name : '-',
			 o->name, o->arg ? " " : "", o->arg ? o->arg : "");
		if (!o->short_name)
			snprintf(label, sizeof(label), "--%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		fprintf(f, "  %-30s %s\n", label, o->help);
	}
	fputs("See sluice(8) for the whole manual; 'sluice COMMAND --help' for one command.\n", f);
}

static int help_run(const struct cli_cmd *c, struct cli_args *a)
{
	(void)c;
	(void)a;
	root_help(stdout);
	return 0;
}

/* -v, -vv, -vvv...: how many v's; 0 for any other word. */
static int verbose_word(const char *w)
{
	int n = 0;

	if (w[0] != '-')
		return 0;
	while (w[1 + n] == 'v')
		n++;
	return w[1 + n] ? 0 : n;
}

/* Take the global options out of argv wherever they are, so that both
 * `sluice -j stats` and `sluice stats -j` work; -v counts each time it is
 * given. Returns the new argc. */
static int strip_global_opts(int argc, char **argv, int *bad)
{
	const char *val[G_BPFFS + 1] = { NULL };
	int out = 1;

	*bad = 0;
	for (int i = 1; i < argc; i++) {
		const char *w = argv[i], *v = NULL;
		int k = -1;

		if (!strcmp(w, "--")) {
			while (i < argc)
				argv[out++] = argv[i++];
			break;
		}
		for (int g = 0; g <= G_BPFFS && k < 0; g++) {
			const struct cli_opt *o = &global_opts[g];
			size_t n = strlen(o->name);

			if (o->short_name && w[0] == '-' && w[1] == o->short_name && !w[2])
				k = g;
			else if (!strncmp(w, "--", 2) && !strncmp(w + 2, o->name, n) &&
				 (!w[2 + n] || (o->arg && w[2 + n] == '=')))
				k = g, v = w[2 + n] ? w + 3 + n : NULL;
		}
		if (k == G_VERBOSE || verbose_word(w)) {
			opts.verbose += k == G_VERBOSE ? 1 : verbose_word(w);
			continue;
		}
		if (k < 0) {
			argv[out++] = argv[i];
			continue;
		}
		if (k == G_JSON)
			opts.json = true;	/* now: an error from here on is JSON too */
		if (global_opts[k].arg && !v) {
			if (i + 1 >= argc) {
				*bad = usage_err("%s needs %s: %s", w,
						 k == G_IFACE ? "an interface name" :
						 "a directory: where bpffs is mounted",
						 global_opts[k].help);
				return 0;
			}
			v = argv[++i];
		}
		val[k] = global_opts[k].arg ? v : "";
	}
	argv[out] = NULL;
	if (val[G_JSON])
		opts.json = true;
	if (val[G_IFACE])
		opts.iface = val[G_IFACE];
	if (val[G_BPFFS])
		opts.bpffs = val[G_BPFFS];
	return out;
}

int main(int argc, char **argv)
{
	int bad, rc;

	argc = strip_global_opts(argc, argv, &bad);
	if (bad)
		return bad;
	/* The debug switch of old: libbpf's and libxdp's messages, and the rest. */
	if (getenv("SLUICE_DEBUG") && opts.verbose < 2)
		opts.verbose = 2;
	if (opts.iface && validate_ifname(opts.iface))
		return EXIT_USAGE;
	/* Found now, while privileged: the exporter walks to it after
	 * dropping privileges, and libxdp reads where it is from the
	 * environment. */
	pin_root();
	if (argc < 2) {
		root_help(stderr);
		return EXIT_USAGE;
	}
	if (cli_is_help(argv[1]))
		rc = help_run(&help_cmd, NULL);
	else if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))
		rc = version_run(&version_cmd, NULL);
	else
		rc = cli_dispatch(&root, argc, argv);
	/* Output that did not reach its reader is a failure, not success. */
	if ((fflush(stdout) || ferror(stdout)) && rc == 0)
		return runtime_err("cannot write the output: %s", strerror(errno));
	return rc;
}
