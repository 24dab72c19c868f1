/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The error funnel and the log lines (output.c, output_log.c), and the one
 * JSON writer (output.c). */
#ifndef SLUICE_OUTPUT_H
#define SLUICE_OUTPUT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <syslog.h>
#include <linux/types.h>

#define EXIT_RUNTIME		1
#define EXIT_USAGE		2

/* Errors: one line on stderr, "sluice: what went wrong: what to do"
 * ("<3>sluice: ..." when stderr is the journal, as log_event's lines). */
void err_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints and returns EXIT_USAGE / EXIT_RUNTIME, for `return usage_err(...)`. */
int usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int runtime_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* While buf is set (len 0: no more), the first error line of usage_err()
 * and runtime_err() is kept in buf[len] instead of written: for a command
 * that reports one part's failure inside its output (status -j). */
void err_capture(char *buf, size_t len);
/* Appends to the string in buf[len] (len 0: nothing), cut short to fit. */
void str_append(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* One event, one line on stderr: "sluice: ...", or "sluice: warning: ..."
 * for LOG_WARNING. When stderr is the journal (JOURNAL_STREAM names it) the
 * line starts with its priority as sd-daemon(3) says, "<5>sluice: ...", so
 * journald keeps it. prio is one of syslog.h's LOG_ERR .. LOG_DEBUG; a line
 * above LOG_NOTICE + opts.verbose (-v: info, -vv: debug) is not written. */
void log_event(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A library's text (libbpf's, libxdp's) as log_event lines, one a line
 * of it. */
void log_lines(int prio, const char *fmt, va_list ap);
/* Whether log_event(prio, ...) writes anything: to skip the work of a line
 * that would not be written. */
bool log_enabled(int prio);
/* Whether stderr is the journal's stream (JOURNAL_STREAM is its
 * device:inode): then lines carry their priority. */
bool log_to_journal(void);
/* The line as it is written: the prefix, "sluice: " and text; for the
 * error funnel, which has its text already. */
void log_line(int prio, const char *text);

/* One JSON writer, for -j. A document for stdout is held in memory until
 * json_end writes it whole: an error reported while it is open (the error
 * funnel's JSON object) replaces it, rather than landing inside it. */
struct json {
	FILE *f;		/* where the values go: the document's buffer, or out */
	FILE *out;		/* where json_end writes the document */
	char *buf;		/* the buffered document (open_memstream) */
	size_t len;
	bool dropped;		/* an error replaced it: json_end writes nothing */
	int depth;
	bool need_comma[16];
};
void json_begin(struct json *j, FILE *f);
void json_obj_open(struct json *j, const char *key);
void json_obj_close(struct json *j);
void json_arr_open(struct json *j, const char *key);
void json_arr_close(struct json *j);
void json_str(struct json *j, const char *key, const char *val);
void json_u64(struct json *j, const char *key, __u64 val);
void json_double(struct json *j, const char *key, double val);
void json_bool(struct json *j, const char *key, bool val);
void json_null(struct json *j, const char *key);
void json_end(struct json *j);
/* An error line as the fields "error" (what went wrong) and "hint" (what to
 * do, or null) of the object open in j. */
void json_error_fields(struct json *j, const char *line);

#endif /* SLUICE_OUTPUT_H */
