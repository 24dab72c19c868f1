/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Counting tracked sources: the live slots of the source table. */
#ifndef SLUICE_SOURCES_H
#define SLUICE_SOURCES_H

#include <linux/types.h>
#include "maps.h"

/* Live slots of m's source table: a scan of its ctl words in place. */
long table_sources(const struct sluice_maps *m);
/* Every bucket of m, home or keyed: table_sources. */
long count_sources(const struct sluice_maps *m);

#endif /* SLUICE_SOURCES_H */
