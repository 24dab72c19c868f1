/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The CLI's shared core, for the commands and daemons: the headers of the
 * core modules of user/lib/ in layer order (tests/lint/layers.sh; rule.h,
 * cli.h, prom.h, hash.h and steps.h are included by name where used), and
 * nothing else. Files of user/lib/ include only the headers they use,
 * never this one. */
#ifndef SLUICE_CORE_H
#define SLUICE_CORE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <net/if.h>
#include <netinet/in.h>
#include "sluice/sluice.h"
#include "opts.h"
#include "output.h"
#include "clock.h"
#include "parse.h"
#include "map_write.h"
#include "pins.h"
#include "maps.h"
#include "names.h"
#include "srctab.h"
#include "sources.h"
#include "cluster_state.h"
#include "policy.h"
#include "store.h"
#include "bantab.h"
#include "live.h"

#endif /* SLUICE_CORE_H */
