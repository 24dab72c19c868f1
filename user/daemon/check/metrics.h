/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The check server's /metrics page: one sample of its counters in,
 * Prometheus text out through prom.h's writer. Pure, so that
 * tests/unit/test_check_prom.c checks it byte for byte. */
#ifndef SLUICE_CHECK_METRICS_H
#define SLUICE_CHECK_METRICS_H

#include <stdio.h>
#include <linux/types.h>

/* How a check was answered: the outcome label of sluice_check_answers_total. */
enum outcome {
	OUT_OK,			/* 200: within a request rule */
	OUT_LIMITED,		/* 429 (403): over it */
	OUT_UNLIMITED,		/* 200: no request rule covers the client */
	OUT_MONITORED,		/* 200: over a --monitor rule */
	OUT_BANNED,		/* 429 (403): banned in XDP by the escalation */
	OUT_BAD_REQUEST,	/* 400: no usable address header */
	OUT_UNTRUSTED,		/* 403: the peer is not in --trust */
	OUT_TABLE_FULL,		/* 429 (403): no room to track a new source */
	OUT_REPEAT,		/* a repeated X-Request-ID, answered as before */
	OUT_MAX,
};
extern const char *const outcome_names[OUT_MAX];

/* Why a new client found no room in the source table: the reason label of
 * sluice_check_table_refusals_total (its answer is OUT_TABLE_FULL). */
enum refusal {
	REFUSE_FULL,		/* full, no entry idle */
	REFUSE_PREFIX,		/* its prefix holds its share, none of it idle */
	REFUSE_MAX,
};
extern const char *const refusal_names[REFUSE_MAX];

/* One request rule's counters, by its name (the CIDR). */
struct check_prom_rule {
	const char *name;
	__u64 pass, limited, bans;
};

/* One scrape of the check server. */
struct check_prom {
	const char *version;		/* sluice_build_info */
	const char *iface;
	__u64 answers[OUT_MAX];
	const struct check_prom_rule *rules;	/* longest prefix first */
	unsigned int nrules;
	__u64 ban_failures;
	__u32 tracked, capacity;	/* the source table */
	__u64 refused[REFUSE_MAX];	/* new sources it had no room for */
};

/* Writes the exposition text of p to f; 0, or -1 if f reports an error. */
int check_prom_write(FILE *f, const struct check_prom *p);

#endif /* SLUICE_CHECK_METRICS_H */
