/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The options main() parses before dispatch. */
#ifndef SLUICE_OPTS_H
#define SLUICE_OPTS_H

#include <stdbool.h>

/* Options parsed before dispatch; the only global state. */
struct options {
	bool json;
	int verbose;		/* -v: 1 (info lines too), -vv: 2 (debug too) */
	const char *iface;	/* -i IFACE, or NULL */
	const char *bpffs;	/* --bpffs DIR, or NULL (then $SLUICE_BPFFS, or found) */
};
extern struct options opts;

/* This build's version: the Makefile defines it from VERSION; static
 * analysis, which does not, reads this. */
#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.0.0"
#endif

#endif /* SLUICE_OPTS_H */
