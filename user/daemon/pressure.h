/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The source tables of the attached interfaces under pressure, said as
 * they come under it and as it eases: for the exporter's main loop. */
#ifndef SLUICE_PRESSURE_H
#define SLUICE_PRESSURE_H

#include <stdbool.h>
#include <net/if.h>
#include <linux/types.h>

/* A table this full (percent of its slots) is near full; it eases under
 * PRESSURE_EASED_PCT, so that one at the edge is not said again and again. */
#define PRESSURE_FULL_PCT	90
#define PRESSURE_EASED_PCT	80
#define PRESSURE_IFACES		64	/* interfaces followed, in the order first seen */

struct pressure_iface {
	char name[IF_NAMESIZE];
	bool under;		/* said to be under pressure */
	bool seen;		/* at this look */
	__u64 refused;		/* new sources refused, at the last look */
};

struct pressure {
	struct pressure_iface ifs[PRESSURE_IFACES];
	unsigned int n;
};

/* Looks at every attached interface (only `only`, when not NULL): a
 * warning when its source table is PRESSURE_FULL_PCT full or refused new
 * sources since the last look, a notice when that has eased. */
void pressure_look(struct pressure *p, const char *only);

#endif /* SLUICE_PRESSURE_H */
