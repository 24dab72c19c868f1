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
#include "core.h"

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
 * stderr point to (what printf and err_msg use) are swapped for two
 * unbuffered streams into memory, opened once (a stream a run would
 * allocate kilobytes each time, and ASan's quarantine make that slow).
 * The descriptors stay, so sanitizer reports still reach fd 2. Captures do
 * not nest; out_buf and err_buf hold the text until the next capture. */
#define FUZZ_SINK_MAX	(64 * 1024)
struct fuzz_sink {
	FILE *f;
	size_t len;
	char buf[FUZZ_SINK_MAX + 1];
};

static ssize_t fuzz_sink_write(void *cookie, const char *data, size_t n)
{
	struct fuzz_sink *s = cookie;
	size_t room = FUZZ_SINK_MAX - s->len, k = n < room ? n : room;

	memcpy(s->buf + s->len, data, k);
	s->len += k;
	s->buf[s->len] = '\0';
	return (ssize_t)n;
}

static struct fuzz_sink fuzz_out, fuzz_err;
static bool fuzz_capturing;

struct fuzz_capture {
	FILE *saved_out, *saved_err;
	const char *out_buf, *err_buf;
	size_t out_len, err_len;
};

static inline void fuzz_sink_reset(struct fuzz_sink *s)
{
	static const cookie_io_functions_t io = { .write = fuzz_sink_write };

	if (!s->f) {
		s->f = fopencookie(s, "w", io);
		if (!s->f || setvbuf(s->f, NULL, _IONBF, 0))
			abort();
	}
	s->len = 0;
	s->buf[0] = '\0';
}

static inline void capture_begin(struct fuzz_capture *c)
{
	if (fuzz_capturing)
		abort();	/* nested */
	fuzz_capturing = true;
	memset(c, 0, sizeof(*c));
	fuzz_sink_reset(&fuzz_out);
	fuzz_sink_reset(&fuzz_err);
	fflush(stdout);
	fflush(stderr);
	c->saved_out = stdout;
	c->saved_err = stderr;
	stdout = fuzz_out.f;
	stderr = fuzz_err.f;
	c->out_buf = fuzz_out.buf;
	c->err_buf = fuzz_err.buf;
}

static inline void capture_end(struct fuzz_capture *c)
{
	stdout = c->saved_out;
	stderr = c->saved_err;
	c->out_len = fuzz_out.len;
	c->err_len = fuzz_err.len;
	FUZZ_CHECK(fuzz_out.len < FUZZ_SINK_MAX && fuzz_err.len < FUZZ_SINK_MAX,
		   "more than %d bytes of output", FUZZ_SINK_MAX);
	fuzz_capturing = false;
}

static inline void capture_free(struct fuzz_capture *c)
{
	(void)c;
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
