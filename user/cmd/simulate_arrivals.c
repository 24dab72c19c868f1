// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* simulate's arrivals: a trace file of arrival times, or a named pattern
 * (steady, bursty, boundary, ramp) made from the rate and window. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "core.h"
#include "simulate_arrivals.h"

/* A trace or pattern holds at most this many arrivals: about 17 bytes each
 * (the times, the leaky queue's departures, a bit per algorithm). */
#define SIM_ARRIVALS_MAX	10000000ULL
/* Times from 2^58 ns (9.1 years) on saturate the token bucket's clock
 * (gcra_now), so a trace stays below. */
#define SIM_TIME_NS_END		(1ULL << 58)
/* The boundary pattern's bursts each take this fraction of a window. */
#define SIM_BOUNDARY_SPAN_DIV	50
#define SIM_FRAC_DIGITS		9

const char *const pattern_names[P_MAX + 1] = {
	[P_STEADY] = "steady", [P_BURSTY] = "bursty", [P_BOUNDARY] = "boundary", [P_RAMP] = "ramp",
	[P_MAX] = NULL,
};

/* Appends an arrival; -1 past SIM_ARRIVALS_MAX, or out of memory (*oom). */
static int push(struct sim *s, __u64 t, bool *oom)
{
	__u64 *nt;
	size_t cap;

	*oom = false;
	if (s->n >= SIM_ARRIVALS_MAX)
		return -1;
	if (s->n == s->cap) {
		cap = s->cap ? s->cap * 2 : 4096;
		if (cap > SIM_ARRIVALS_MAX)
			cap = SIM_ARRIVALS_MAX;
		nt = realloc(s->t, cap * sizeof(*nt));
		if (!nt) {
			*oom = true;
			return -1;
		}
		s->t = nt;
		s->cap = cap;
	}
	s->t[s->n++] = t;
	return 0;
}

/* --- the arrivals: a trace ------------------------------------------------ */

/* "SECONDS[.FRACTION]" to ns, exactly: 0, or -1 with the reason in why. */
static int parse_time(const char *s, __u64 *out, char *why, size_t len)
{
	__u64 sec = 0, frac = 0;
	int digits = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		goto bad;
	for (; isdigit((unsigned char)*p); p++) {
		if (sec > SIM_TIME_NS_END / SLUICE_NS_PER_SEC)
			goto big;
		sec = sec * 10 + (__u64)(*p - '0');
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			goto bad;
		for (; isdigit((unsigned char)*p); p++) {
			if (++digits > SIM_FRAC_DIGITS) {
				snprintf(why, len, "time '%.40s' has more than %d fraction digits: "
					 "give at most nanoseconds", s, SIM_FRAC_DIGITS);
				return -1;
			}
			frac = frac * 10 + (__u64)(*p - '0');
		}
	}
	if (*p)
		goto bad;
	for (; digits < SIM_FRAC_DIGITS; digits++)
		frac *= 10;
	if (sec > SIM_TIME_NS_END / SLUICE_NS_PER_SEC ||
	    sec * SLUICE_NS_PER_SEC + frac >= SIM_TIME_NS_END)
		goto big;
	*out = sec * SLUICE_NS_PER_SEC + frac;
	return 0;
bad:
	snprintf(why, len, "bad time '%.40s': give seconds as a decimal, e.g. 12345.000125000 "
		 "(one arrival a line, '#' comments)", s);
	return -1;
big:
	snprintf(why, len, "time '%.40s' is past %llu s: the token bucket's clock ends at 2^58 ns",
		 s, SIM_TIME_NS_END / SLUICE_NS_PER_SEC);
	return -1;
}

int read_trace(struct sim *s, const char *path)
{
	char why[256], *line = NULL, *p, *end;
	size_t lcap = 0, lineno = 0;
	ssize_t got;
	__u64 t, last = 0;
	FILE *f;
	bool oom;
	int rc = 0;

	f = fopen(path, "r");
	if (!f)
		return usage_err("cannot read the trace %s: %s: give a file of arrival times",
				 path, strerror(errno));
	while ((got = getline(&line, &lcap, f)) >= 0) {
		lineno++;
		if (strlen(line) != (size_t)got) {
			rc = usage_err("%s:%zu: a NUL byte: this is not a trace of arrival times",
				       path, lineno);
			goto out;
		}
		p = line;
		while (isspace((unsigned char)*p))
			p++;
		end = p;
		while (*end && *end != '#' && !isspace((unsigned char)*end))
			end++;
		if (end == p && (!*end || *end == '#'))
			continue;		/* blank, or a comment */
		for (char *q = end; *q && *q != '#'; q++)
			if (!isspace((unsigned char)*q)) {
				/* quote the line without its comment and newline */
				q = p + strcspn(p, "#\r\n");
				while (q > p && isspace((unsigned char)q[-1]))
					q--;
				*q = '\0';
				rc = usage_err("%s:%zu: one time a line, got '%.40s'", path, lineno,
					       p);
				goto out;
			}
		*end = '\0';
		if (parse_time(p, &t, why, sizeof(why))) {
			rc = usage_err("%s:%zu: %s", path, lineno, why);
			goto out;
		}
		if (s->n && t < last) {
			rc = usage_err("%s:%zu: time %s is before the line above: the times must not "
				       "decrease", path, lineno, p);
			goto out;
		}
		if (push(s, t, &oom)) {
			rc = oom ? runtime_err("out of memory reading %s", path) :
				   usage_err("%s:%zu: more than %llu arrivals: simulate a shorter trace",
					     path, lineno, SIM_ARRIVALS_MAX);
			goto out;
		}
		last = t;
	}
	if (ferror(f)) {
		rc = runtime_err("cannot read the trace %s: %s", path, strerror(errno));
		goto out;
	}
	if (!s->n)
		rc = usage_err("%s: no arrivals: give one time in seconds a line", path);
out:
	free(line);
	fclose(f);
	return rc;
}

/* --- the arrivals: a pattern --------------------------------------------- */

/* floor(a * b / c), exact (a * b < 2^127); c is never 0 (rate, budget >= 1). */
static __u64 muldiv(__u64 a, __u64 b, __u64 c)
{
	return c ? (__u64)((unsigned __int128)a * b / c) : 0;
}

/* floor(sqrt(v)), by Newton's method from above (v < 2^126). */
static __u64 isqrt(unsigned __int128 v)
{
	unsigned __int128 x = v, y;

	if (v < 2)
		return (__u64)v;
	y = (x + 1) / 2;
	while (y < x) {
		x = y;
		y = (x + v / x) / 2;
	}
	return (__u64)x;
}

/* When a ramp from 0 to 4R over duration sends its k-th arrival: the
 * arrivals so far are 2R t^2 / D, so t = sqrt(k D / 2R). */
static __u64 ramp_at(__u64 k, __u64 duration, __u64 per_ns, __u64 rate)
{
	return rate ? isqrt((unsigned __int128)k * duration * per_ns / rate / 2) : duration;
}

/* The pattern's arrivals from t = 0 for duration ns. The sizes follow the
 * rate R (per second), the window W and its budget N; see --help. */
int make_pattern(struct sim *s, enum sim_pattern p, __u64 duration)
{
	__u64 per_ns = (__u64)s->r.period * SLUICE_NS_PER_SEC, w = s->window_ns, n = s->budget;
	__u64 rate = s->r.rate, k, t, start, span;
	bool oom = false;
	char at[24];

	switch (p) {
	case P_STEADY:	/* 2R, evenly: arrival k at k * period / (2 rate) */
		for (k = 0; (t = muldiv(k, per_ns, 2 * rate)) < duration; k++)
			if (push(s, t, &oom))
				goto full;
		break;
	case P_BURSTY:	/* 4R for half a window, in the middle of every other window */
		for (start = w / 4; start < duration; start += 2 * w)
			for (k = 0; k < 2 * n; k++) {
				t = start + muldiv(k, w / 2, 2 * n);
				if (t >= duration)
					break;
				if (push(s, t, &oom))
					goto full;
			}
		break;
	case P_BOUNDARY:	/* N in the last 1/50 of a window, N in the first 1/50 of the next */
		span = w / SIM_BOUNDARY_SPAN_DIV;
		for (start = w - span; start < duration; start += 2 * w)
			for (k = 0; k < 2 * n; k++) {
				t = start + (k < n ? muldiv(k, span, n) : span + muldiv(k - n, span, n));
				if (t >= duration)
					break;
				if (push(s, t, &oom))
					goto full;
			}
		break;
	case P_RAMP:	/* rate 4R * t / D: arrival k at sqrt(k * D / (2R)) */
		for (k = 1; (t = ramp_at(k, duration, per_ns, rate)) < duration; k++)
			if (push(s, t, &oom))
				goto full;
		break;
	default:
		break;
	}
	if (!s->n) {
		/* where it would have begun: steady begins at 0, always in */
		t = p == P_BURSTY ? w / 4 : p == P_BOUNDARY ? w - w / SIM_BOUNDARY_SPAN_DIV :
		    ramp_at(1, duration, per_ns, rate);
		ns_words(t, at, sizeof(at));
		return usage_err("--pattern %s makes no arrival in --duration: its first comes at "
				 "%s; lengthen --duration", pattern_names[p], at);
	}
	return 0;
full:
	if (oom)
		return runtime_err("out of memory making --pattern %s", pattern_names[p]);
	return usage_err("--pattern %s makes more than %llu arrivals at this --rate and "
			 "--duration: lower one of them", pattern_names[p], SIM_ARRIVALS_MAX);
}
