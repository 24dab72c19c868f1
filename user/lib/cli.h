/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* One grammar for the whole command line: command tables (bpftool's cmds[])
 * whose entries carry their option tables (xdp-tools' DEFINE_OPTION), from
 * which parsing, the usage lines and --help all come. */
#ifndef SLUICE_CLI_H
#define SLUICE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>

#define CLI_OPTS_MAX	24	/* entries of one option table */
#define CLI_POS_MAX	4	/* positional words of one command */
#define CLI_OBJ_MAX	128	/* bytes of one command's options struct */

/* What a typed option converts its value to. CLI_T_NONE: untyped, the run
 * function reads the string from cli_args.val itself. */
enum cli_type {
	CLI_T_NONE,
	CLI_T_FLAG,	/* bool: true when given */
	CLI_T_STR,	/* const char *: the word as given */
	CLI_T_U32,	/* __u32 in min..max */
	CLI_T_U64,	/* __u64 in min..max */
	CLI_T_ENUM,	/* int: the index of the word in words[] */
};

/* One option: --name [ARG], or -s [ARG]. */
struct cli_opt {
	const char *name;	/* long name without "--", or NULL for a short-only one */
	const char *arg;	/* the value's metavariable ("N[/s|/m|/h]"), NULL for a flag */
	const char *help;	/* one line */
	const char *later;	/* set: refused as not supported yet, this says why */
	const char *refuse;	/* set: refused by the commands of only, this says why;
				 * not shown (another entry of the name may take it) */
	unsigned int only;	/* bits of the commands (cli_cmd.on) that take it; 0 = all */
	unsigned int need;	/* bits of the commands that require it (CLI_ALL: all that
				 * take it); of a group: one of the group is required */
	unsigned char group;	/* 1..: one of the entries sharing it may be given, not two */
	char short_name;	/* 'n' for -n, or 0 */
	/* Typed options only: where the value goes and what it may be. */
	enum cli_type type;
	size_t off;		/* offsetof() the field in the command's options struct */
	__u64 min, max;		/* CLI_T_U32, CLI_T_U64: the bounds */
	const char *unit;	/* CLI_T_U32, CLI_T_U64: what is counted ("sources") */
	const char *const *words;	/* CLI_T_ENUM: NULL-terminated */
};
#define CLI_ALL	(~0u)	/* .need: every command that takes the option */
/* One table entry, in the order the words are written; CLI_OPT_END ends a
 * table. Every entry macro takes more designators after its own arguments:
 * ".need = CLI_ALL", ".group = 1". */
#define CLI_OPT(long_name, short_opt, arg_name, help_text, only_on, later_why, ...)                \
	{                                                                                          \
		.name = (long_name), .arg = (arg_name), .help = (help_text), .later = (later_why), \
		.only = (only_on), .short_name = (short_opt), __VA_ARGS__                          \
	}
#define CLI_OPT_END	{ .name = NULL }

/* Typed entries: each fills FIELD of the options struct TYPE (whose size
 * the compiler checks against the option's type) before the run function
 * is called; the defaults come from the command's defaults constant. */
#define CLI_FIELD_(stype, field, ctype)						\
	(offsetof(stype, field) +						\
	 0 * sizeof(struct { _Static_assert(sizeof(((stype *)0)->field) ==	\
					    sizeof(ctype), #field); char c_; }))
#define CLI_FLAG(long_name, short_opt, help_text, stype, field, ...)                   \
	{                                                                              \
		.name = (long_name), .help = (help_text), .short_name = (short_opt),   \
		.type = CLI_T_FLAG, .off = CLI_FIELD_(stype, field, bool), __VA_ARGS__ \
	}
#define CLI_STR(long_name, short_opt, arg_name, help_text, stype, field, ...) \
	{                                                                     \
		.name = (long_name), .arg = (arg_name), .help = (help_text),  \
		.short_name = (short_opt), .type = CLI_T_STR,                 \
		.off = CLI_FIELD_(stype, field, const char *), __VA_ARGS__    \
	}
/* A number of ctype (type: CLI_T_U32 or CLI_T_U64), lo to hi, what it counts. */
#define CLI_NUM_(ntype, ctype, long_name, short_opt, arg_name, help_text, stype, field, lo, hi,	\
		 what, ...)									\
	{											\
		.name = (long_name), .arg = (arg_name), .help = (help_text),			\
		.short_name = (short_opt), .type = (ntype),					\
		.off = CLI_FIELD_(stype, field, ctype), .min = (lo), .max = (hi), .unit = (what),	\
		__VA_ARGS__									\
	}
#define CLI_U32(...)	CLI_NUM_(CLI_T_U32, __u32, __VA_ARGS__)
#define CLI_U64(...)	CLI_NUM_(CLI_T_U64, __u64, __VA_ARGS__)
#define CLI_ENUM(long_name, short_opt, arg_name, help_text, stype, field, word_list, ...) \
	{                                                                                 \
		.name = (long_name), .arg = (arg_name), .help = (help_text),              \
		.short_name = (short_opt), .type = CLI_T_ENUM,                            \
		.off = CLI_FIELD_(stype, field, int), .words = (word_list), __VA_ARGS__   \
	}

/* What one command line said, by the option table's positions. */
struct cli_args {
	const char *val[CLI_OPTS_MAX];	/* the value, "" for a flag; NULL when absent */
	char *pos[CLI_POS_MAX];		/* positional words, in order */
	int npos;
	/* The command's options struct: its defaults, then the typed
	 * options given (see CLI_OPTIONS). */
	_Alignas(max_align_t) unsigned char obj[CLI_OBJ_MAX];
};

/* The options struct TYPE that the typed entries filled. */
#define CLI_OPTIONS(args, type)							\
	((const type *)(const void *)(args)->obj +				\
	 0 * sizeof(struct { _Static_assert(sizeof(type) <= CLI_OBJ_MAX, #type); char c_; }))

struct cli_cmd;
typedef int (*cli_run_fn)(const struct cli_cmd *c, struct cli_args *a);

/* One command or object. An object has sub, a command run. */
struct cli_cmd {
	const char *name;		/* the word that selects it */
	const char *path;		/* every word from the object on: "limit set" */
	const char *args;		/* positional synopsis: "CIDR", or NULL */
	unsigned char args_group;	/* set: the positionals are one choice of this
					 * group of opts, one of which is required (the
					 * run function checks it: usage shows it) */
	int min_pos, max_pos;		/* how many positional words */
	const struct cli_opt *opts;	/* NULL-terminated (name and short_name 0), or NULL */
	unsigned int on;		/* bit picking opts' entries (their only), 0 = all */
	/* -j: every command honours it or refuses it (exit 2, one line). */
	bool json;			/* -j: it prints JSON */
	bool json_quiet;		/* -j: it prints nothing on success (errors as JSON) */
	const char *no_json;		/* refused: where to look instead ("see 'limit list -j'") */
	const char *help;		/* what it does: lines without indent, '\n' between */
	cli_run_fn run;
	const struct cli_cmd *const *sub;	/* NULL-terminated, or NULL */
	int id;				/* the run function's own use */
	const void *defaults;		/* typed options: the options struct's defaults */
	size_t defaults_size;		/* its size */
};
/* .defaults and .defaults_size of a command from its defaults constant. */
#define CLI_DEFAULTS(constant)							\
	.defaults = &(constant),						\
	.defaults_size = sizeof(constant) +					\
		0 * sizeof(struct { _Static_assert(sizeof(constant) <= CLI_OBJ_MAX,	\
						   #constant); char c_; })

/* -h, --help. */
bool cli_is_help(const char *arg);
/* Parse argv (the words after the command's own) against c's options and
 * positional counts. 0, or -1 with the one-line reason in why. */
int cli_parse(const struct cli_cmd *c, int argc, char **argv, struct cli_args *a,
	      char *why, size_t len);
/* Seed a's options struct from c's defaults and convert every typed option
 * given. 0, or -1 with the one-line reason in why ("bad --NAME 'VALUE':
 * give MIN..MAX UNIT"). */
int cli_fill(const struct cli_cmd *c, struct cli_args *a, char *why, size_t len);
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
