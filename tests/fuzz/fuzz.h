/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the parser fuzz targets share: the CLI's global options, the input
 * as a C string, output captured from stdout/stderr, and a property check
 * that aborts (a libFuzzer crash, saved as crash-*) with what broke. */
#ifndef SLUICE_FUZZ_H
#define SLUICE_FUZZ_H

#define _GNU_SOURCE
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sluice.h"

struct options opts;

/* A property that must hold: on failure say which and abort. Written to
 * fd 2 itself: stderr may be captured (below). */
#define FUZZ_CHECK(cond, ...)							\
	do {									\
		if (!(cond)) {							\
			dprintf(2, "fuzz: %s:%d: property failed: %s: ",	\
				__FILE__, __LINE__, #cond);			\
			dprintf(2, __VA_ARGS__);				\
			dprintf(2, "\n");					\
			abort();						\
		}								\
	} while (0)

/* data[0..size) as a NUL-terminated copy (cut at its first NUL); free it. */
static inline char *fuzz_str(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* What sluice's code printed while captured: the FILE *s stdout and
 * stderr point to (what printf and err_msg use) are swapped for memory
 * streams. The descriptors stay, so sanitizer reports still reach fd 2. */
struct fuzz_capture {
	FILE *out, *err, *saved_out, *saved_err;
	char *out_buf, *err_buf;
	size_t out_len, err_len;
};

static inline void capture_begin(struct fuzz_capture *c)
{
	memset(c, 0, sizeof(*c));
	c->out = open_memstream(&c->out_buf, &c->out_len);
	c->err = open_memstream(&c->err_buf, &c->err_len);
	if (!c->out || !c->err)
		abort();
	fflush(stdout);
	fflush(stderr);
	c->saved_out = stdout;
	c->saved_err = stderr;
	stdout = c->out;
	stderr = c->err;
}

/* Ends the capture; out_buf and err_buf hold the text until capture_free. */
static inline void capture_end(struct fuzz_capture *c)
{
	stdout = c->saved_out;
	stderr = c->saved_err;
	fclose(c->out);
	fclose(c->err);
}

static inline void capture_free(struct fuzz_capture *c)
{
	free(c->out_buf);
	free(c->err_buf);
}

/* Lines in text (a last line without '\n' counts). */
static inline size_t count_lines(const char *text, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		if (text[i] == '\n' || i + 1 == len)
			n++;
	return n;
}

#endif /* SLUICE_FUZZ_H */
