// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Tracked-source counts: the live slots of the source table, home and
 * keyed buckets alike. */
#include <errno.h>
#include "sources.h"
#include "maps.h"
#include "srctab.h"

long table_sources(const struct sluice_maps *m)
{
	struct srctab t;
	long n;
	int err = srctab_open(m, &t);

	if (err)
		return err;
	n = srctab_live(&t);
	srctab_close(&t);
	return n;
}

long count_sources(const struct sluice_maps *m)
{
	return table_sources(m);
}
