/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* fuzz_check's reading of what the check server sent back: the answers
 * of one connection split into status, headers and body, a header's
 * value, the RateLimit fields, a /metrics series' value; and an address
 * as the server must read it. Every malformed answer fails the input. */
#ifndef SLUICE_FUZZ_CHECK_ANSWERS_H
#define SLUICE_FUZZ_CHECK_ANSWERS_H

#include "fuzz.h"
#include <arpa/inet.h>
#include <strings.h>
#include "httpd.h"
#include "sluice/algo.h"
#include "check.h"	/* ADDRESS_MAX */

#define FZ_CALLS_MAX		512U	/* handler calls of one input (4 KB of requests) */
#define FZ_ANSWERS_MAX		(FZ_CALLS_MAX + 16)
#define FIELD_MAX		128

/* An address as the check server must read it: IPv4 text, or IPv4-mapped
 * IPv6 text (::ffff:a.b.c.d), is an IPv4 source (v4-mapped), any other
 * IPv6 text an IPv6 one. */
struct fz_addr {
	__u8 family;
	__u8 a[16];
};

/* An answer as read back. */
struct fz_answer {
	int status;
	const char *head, *head_end;	/* status line .. the blank line */
	const char *body;		/* NULL: none sent (HEAD) */
	size_t body_len;
};

/* An address as the server takes it: blanks (spaces, tabs) around it
 * are not part of it. */
static inline bool model_addr(const char *in, struct fz_addr *out)
{
	char s[ADDRESS_MAX];
	struct in_addr v4;
	size_t n;

	memset(out, 0, sizeof(*out));
	while (*in == ' ' || *in == '\t')
		in++;
	n = strlen(in);
	while (n && (in[n - 1] == ' ' || in[n - 1] == '\t'))
		n--;
	if (n >= sizeof(s))
		return false;
	memcpy(s, in, n);
	s[n] = '\0';
	if (strchr(s, ':')) {
		static const __u8 mapped[12] = { [10] = 0xff, [11] = 0xff };

		if (inet_pton(AF_INET6, s, out->a) != 1)
			return false;
		out->family = memcmp(out->a, mapped, sizeof(mapped)) ? SLUICE_FAMILY_V6
								      : SLUICE_FAMILY_V4;
		return true;
	}
	if (inet_pton(AF_INET, s, &v4) != 1)
		return false;
	out->family = SLUICE_FAMILY_V4;
	out->a[10] = out->a[11] = 0xff;
	memcpy(&out->a[12], &v4, 4);
	return true;
}

static bool bits_equal(const __u8 *a, const __u8 *b, __u32 bits)
{
	for (__u32 i = 0; i < bits; i++)
		if ((a[i / 8] ^ b[i / 8]) & (0x80 >> (i % 8)))
			return false;
	return true;
}

/* The answers in r: each "HTTP/1.x NNN", header lines "Name: value", a
 * blank line and as many bytes of body as Content-Length says (none after
 * a HEAD: then the end, or the next answer). */
static inline unsigned int parse_answers(const char *r, size_t len, struct fz_answer *out)
{
	unsigned int n = 0;
	size_t at = 0;

	while (at < len) {
		const char *p = r + at, *end = strstr(p, "\r\n\r\n"), *line;
		struct fz_answer *a = &out[n];
		unsigned long body = 0;

		FUZZ_CHECK(n < FZ_ANSWERS_MAX, "more than %u answers", FZ_ANSWERS_MAX);
		FUZZ_CHECK(!strncmp(p, "HTTP/1.1 ", 9) || !strncmp(p, "HTTP/1.0 ", 9),
			   "answer %u does not start with a status line: '%.60s'", n, p);
		FUZZ_CHECK(sscanf(p + 9, "%3d", &a->status) == 1 && p[12] == ' ',
			   "answer %u: no status", n);
		FUZZ_CHECK(end, "answer %u: headers without their end", n);
		a->head = p;
		a->head_end = end + 2;
		for (line = strstr(p, "\r\n") + 2; line < a->head_end; line = strstr(line, "\r\n") + 2) {
			const char *colon = memchr(line, ':', (size_t)(strstr(line, "\r\n") - line));
			char name[64];
			size_t nl;

			FUZZ_CHECK(colon && colon > line && colon[1] == ' ',
				   "answer %u: header line '%.60s'", n, line);
			nl = (size_t)(colon - line);
			FUZZ_CHECK(nl < sizeof(name), "answer %u: header name '%.60s'", n, line);
			memcpy(name, line, nl);
			name[nl] = '\0';
			FUZZ_CHECK(httpd_is_token(name), "answer %u: header name '%s'", n, name);
			if (!strcasecmp(name, "Content-Length"))
				body = strtoul(colon + 2, NULL, 10);
		}
		at = (size_t)(end + 4 - r);
		a->body = NULL;
		a->body_len = 0;
		if (at < len && strncmp(r + at, "HTTP/1.", 7) != 0) {
			a->body = r + at;
			a->body_len = body;
			at += body;
		}
		FUZZ_CHECK(at <= len, "answer %u: %lu bytes of body promised, %zu sent", n, body,
			   len - (size_t)(end + 4 - r));
		n++;
	}
	return n;
}

/* The value of the answer's header name into buf ("" when absent); a
 * header given twice fails. */
static inline const char *answer_header(const struct fz_answer *a, const char *name, char *buf)
{
	size_t nl = strlen(name);
	unsigned int seen_n = 0;

	buf[0] = '\0';
	for (const char *line = strstr(a->head, "\r\n") + 2; line < a->head_end;
	     line = strstr(line, "\r\n") + 2) {
		const char *eol = strstr(line, "\r\n");
		size_t vl;

		if (strncasecmp(line, name, nl) || line[nl] != ':')
			continue;
		vl = (size_t)(eol - line) - nl - 2;
		FUZZ_CHECK(vl < FIELD_MAX, "%s: too long", name);
		memcpy(buf, line + nl + 2, vl);
		buf[vl] = '\0';
		seen_n++;
	}
	FUZZ_CHECK(seen_n <= 1, "%s given %u times", name, seen_n);
	return buf;
}

/* A whole decimal number at *p (no sign, no space), past it. */
static inline bool take_u64(const char **p, __u64 *v)
{
	const char *s = *p;

	if (*s < '0' || *s > '9')
		return false;
	*v = 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		FUZZ_CHECK(*v <= (SLUICE_U64_MAX - 9) / 10, "a number past 2^64: '%s'", *p);
		*v = *v * 10 + (__u64)(*s - '0');
	}
	*p = s;
	return true;
}

/* "NAME";K1=N;K2=N exactly (the draft's item with two parameters). */
static inline bool parse_field(const char *v, const char *k1, const char *k2, char *name, __u64 *a,
			__u64 *b)
{
	const char *q;

	if (*v++ != '"' || !(q = strchr(v, '"')) || q == v || (size_t)(q - v) >= FIELD_MAX)
		return false;
	memcpy(name, v, (size_t)(q - v));
	name[q - v] = '\0';
	v = q + 1;
	if (strncmp(v, ";", 1) || strncmp(v + 1, k1, 2) || !(v += 3, take_u64(&v, a)))
		return false;
	if (strncmp(v, ";", 1) || strncmp(v + 1, k2, 2) || !(v += 3, take_u64(&v, b)))
		return false;
	return !*v;
}

static inline bool has_body(const struct fz_answer *a, const char *text)
{
	return a->body && a->body_len == strlen(text) && !memcmp(a->body, text, a->body_len);
}

static inline bool body_has(const struct fz_answer *a, const char *text)
{
	return a->body && memmem(a->body, a->body_len, text, strlen(text));
}

/* One /metrics series' value on the page (which must hold it), by the
 * whole line up to the value. */
static inline __u64 page_value(const struct fz_answer *a, const char *series)
{
	const char *p = a->body, *end = a->body + a->body_len;
	size_t sl = strlen(series);
	__u64 v;

	for (; p < end; p = (const char *)memchr(p, '\n', (size_t)(end - p)) + 1) {
		if ((size_t)(end - p) > sl + 1 && !memcmp(p, series, sl) && p[sl] == ' ') {
			p += sl + 1;
			FUZZ_CHECK(take_u64(&p, &v) && *p == '\n', "/metrics: '%s' has no value",
				   series);
			return v;
		}
	}
	FUZZ_CHECK(false, "/metrics has no '%s'", series);
	return 0;
}

#endif /* SLUICE_FUZZ_CHECK_ANSWERS_H */
