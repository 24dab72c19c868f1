/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The error funnel and the one JSON writer (output.c). */
#ifndef SLUICE_OUTPUT_H
#define SLUICE_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

#define EXIT_RUNTIME		1
#define EXIT_USAGE		2

/* Errors: one line on stderr, "sluice: what went wrong: what to do". */
void err_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints and returns EXIT_USAGE / EXIT_RUNTIME, for `return usage_err(...)`. */
int usage_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int runtime_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Appends to the string in buf[len] (len 0: nothing), cut short to fit. */
void str_append(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* One JSON writer, for -j. */
struct json {
	FILE *f;
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

#endif /* SLUICE_OUTPUT_H */
