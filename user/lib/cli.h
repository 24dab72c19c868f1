/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One grammar for the whole command line: command tables (bpftool's cmds[])
 * whose entries carry their option tables (xdp-tools' DEFINE_OPTION), from
 * which parsing, the usage lines and --help all come. */
#ifndef SLUICE_CLI_H
#define SLUICE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CLI_OPTS_MAX	24	/* entries of one option table */
#define CLI_POS_MAX	4	/* positional words of one command */

/* One option: --name [ARG], or -s [ARG]. */
struct cli_opt {
	const char *name;	/* long name without "--", or NULL for a short-only one */
	const char *arg;	/* the value's metavariable ("N[/s|/m|/h]"), NULL for a flag */
	const char *help;	/* one line */
	const char *later;	/* set: refused as not supported yet, this says why */
	unsigned int only;	/* bits of the commands (cli_cmd.on) that take it; 0 = all */
	char short_name;	/* 'n' for -n, or 0 */
};
/* One table entry, in the order the words are written; CLI_OPT_END ends a
 * table. */
#define CLI_OPT(long_name, short_opt, arg_name, help_text, only_on, later_why)	\
	{ .name = (long_name), .arg = (arg_name), .help = (help_text),		\
	  .later = (later_why), .only = (only_on), .short_name = (short_opt) }
#define CLI_OPT_END	{ .name = NULL }

/* What one command line said, by the option table's positions. */
struct cli_args {
	const char *val[CLI_OPTS_MAX];	/* the value, "" for a flag; NULL when absent */
	char *pos[CLI_POS_MAX];		/* positional words, in order */
	int npos;
};

struct cli_cmd;
typedef int (*cli_run_fn)(const struct cli_cmd *c, struct cli_args *a);

/* One command or object. An object has sub, a command run. */
struct cli_cmd {
	const char *name;		/* the word that selects it */
	const char *path;		/* every word from the object on: "limit set" */
	const char *args;		/* positional synopsis: "CIDR", or NULL */
	int min_pos, max_pos;		/* how many positional words */
	const struct cli_opt *opts;	/* NULL-terminated (name and short_name 0), or NULL */
	unsigned int on;		/* bit picking opts' entries (their only), 0 = all */
	bool json;			/* -j changes its output */
	const char *help;		/* what it does: lines without indent, '\n' between */
	cli_run_fn run;
	const struct cli_cmd *const *sub;	/* NULL-terminated, or NULL */
	int id;				/* the run function's own use */
};

/* -h, --help. */
bool cli_is_help(const char *arg);
/* Parse argv (the words after the command's own) against c's options and
 * positional counts. 0, or -1 with the one-line reason in why. */
int cli_parse(const struct cli_cmd *c, int argc, char **argv, struct cli_args *a,
	      char *why, size_t len);
/* Index of option name in c->opts, -1 if not there (a programming error). */
int cli_opt_index(const struct cli_cmd *c, const char *name);
/* "sluice PATH ARGS [--opt ARG]...": the one-line usage from the table. */
void cli_usage_line(FILE *f, const struct cli_cmd *c);
/* The whole --help of a command or an object. */
void cli_help(FILE *f, const struct cli_cmd *c);
/* Select and run the command argv[0] of the table in obj (argv[0] is the
 * object's own word). Prints the error and returns its exit code. */
int cli_dispatch(const struct cli_cmd *obj, int argc, char **argv);
/* The subcommand of obj named word, or NULL. */
const struct cli_cmd *cli_find(const struct cli_cmd *obj, const char *word);

#endif /* SLUICE_CLI_H */
