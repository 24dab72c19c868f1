// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Error lines and the one JSON writer every -j output goes through. */
#include <stdarg.h>
#include <string.h>
#include "output.h"

/* One line, always: control characters quoted from input become '?'. */
static void verr(const char *fmt, va_list ap)
{
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized): callers va_start */
	for (char *p = line; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	fprintf(stderr, "sluice: %s\n", line);
}

void err_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(fmt, ap);
	va_end(ap);
}

int usage_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(fmt, ap);
	va_end(ap);
	return EXIT_USAGE;
}

int runtime_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	verr(fmt, ap);
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
	fflush(j->f);
}
