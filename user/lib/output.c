// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Error lines (as JSON on stdout under -j, else through log_line) and the
 * one JSON writer every -j output goes through. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "opts.h"
#include "output.h"

/* Where "what went wrong" ends and "what to do" begins: the last ": "
 * outside the quotes around words from the input (an apostrophe between
 * letters, as in "libbpf's", quotes nothing). NULL when none. */
static char *hint_split(char *line)
{
	char *split = NULL;
	bool quoted = false;

	for (char *p = line; *p; p++) {
		if (*p == '\'' && !(p > line && isalpha((unsigned char)p[-1]) &&
				    isalpha((unsigned char)p[1])))
			quoted = !quoted;
		else if (!quoted && p[0] == ':' && p[1] == ' ')
			split = p;
	}
	return split;
}

/* The document for stdout being written (json_begin to json_end), if any. */
static struct json *json_open_doc;

void json_error_fields(struct json *j, const char *line)
{
	char what[1024];
	char *split;

	snprintf(what, sizeof(what), "%s", line);
	split = hint_split(what);
	if (split)
		*split = 0;
	json_str(j, "error", what);
	if (split)
		json_str(j, "hint", split + 2);
	else
		json_null(j, "hint");
}

/* With -j: the error as one JSON object on stdout, {"error": what went
 * wrong, "hint": what to do or null}, in place of any document the command
 * had begun. false when stdout cannot take it. */
static bool json_error(const char *line)
{
	struct json j;

	if (ferror(stdout))
		return false;
	if (json_open_doc) {
		json_open_doc->dropped = true;
		json_open_doc = NULL;
	}
	json_begin(&j, stdout);
	json_obj_open(&j, NULL);
	json_error_fields(&j, line);
	json_obj_close(&j);
	json_end(&j);
	return !ferror(stdout);
}

/* err_capture's buffer: the first error line goes there, not out. */
static char *capture;
static size_t capture_len;

void err_capture(char *buf, size_t len)
{
	capture = len ? buf : NULL;
	capture_len = len;
	if (capture)
		capture[0] = '\0';
}

/* One line, always: control characters quoted from input become '?'. An
 * error of a command run with -j goes to stdout as JSON (json_error) when
 * stdout takes it; anything else, to stderr. */
static void verr(bool is_error, const char *fmt, va_list ap)
{
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized): callers va_start */
	for (char *p = line; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	if (is_error && capture) {
		if (!capture[0])
			snprintf(capture, capture_len, "%s", line);
		return;
	}
	if (is_error && opts.json && json_error(line))
		return;
	log_line(LOG_ERR, line);
}

void err_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(false, fmt, ap);
	va_end(ap);
}

int usage_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(true, fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

int runtime_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(true, fmt, ap);
	va_end(ap);
	return EXIT_RUNTIME;
}

#define JSON_MAX_DEPTH (int)(sizeof(((struct json *)0)->need_comma))

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

/* Comma and key before a value at the current depth. */
static void json_lead(struct json *j, const char *key)
{
	if (j->depth > 0 && j->need_comma[j->depth])
		fputc(',', j->f);
	if (j->depth > 0)
		j->need_comma[j->depth] = true;
	if (key) {
		json_string(j->f, key);
		fputc(':', j->f);
	}
}

void json_begin(struct json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->out = f;
	if (f != stdout)
		return;
	/* Without a buffer (no memory) the document goes out as it is written. */
	j->f = open_memstream(&j->buf, &j->len);
	if (!j->f) {
		j->f = f;
		return;
	}
	json_open_doc = j;
}

static void json_open(struct json *j, const char *key, char ch)
{
	json_lead(j, key);
	fputc(ch, j->f);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void json_close(struct json *j, char ch)
{
	fputc(ch, j->f);
	if (j->depth > 0)
		j->depth--;
}

void json_obj_open(struct json *j, const char *key) { json_open(j, key, '{'); }
void json_obj_close(struct json *j) { json_close(j, '}'); }
void json_arr_open(struct json *j, const char *key) { json_open(j, key, '['); }
void json_arr_close(struct json *j) { json_close(j, ']'); }

void json_str(struct json *j, const char *key, const char *val)
{
	json_lead(j, key);
	json_string(j->f, val);
}

void json_u64(struct json *j, const char *key, __u64 val)
{
	json_lead(j, key);
	fprintf(j->f, "%llu", (unsigned long long)val);
}

void json_double(struct json *j, const char *key, double val)
{
	json_lead(j, key);
	fprintf(j->f, "%.9g", val);
}

void json_bool(struct json *j, const char *key, bool val)
{
	json_lead(j, key);
	fputs(val ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	json_lead(j, key);
	fputs("null", j->f);
}

void json_end(struct json *j)
{
	fputc('\n', j->f);
	if (j->f != j->out) {
		fclose(j->f);	/* j->buf and j->len now hold the whole document */
		if (!j->dropped && j->buf)
			fwrite(j->buf, 1, j->len, j->out);
		free(j->buf);
		j->buf = NULL;
		j->f = j->out;
	}
	if (json_open_doc == j)
		json_open_doc = NULL;
	fflush(j->out);
}

void str_append(char *buf, size_t len, const char *fmt, ...)
{
	size_t used = len ? strlen(buf) : 0;
	va_list ap;

	if (used + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, len - used, fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized): va_start above */
	va_end(ap);
}
