/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shared between the XDP program and the CLI: limits, map keys and values,
 * counter layouts. Every struct here is part of the pinned-map ABI. */
#ifndef SLUICE_SLUICE_H
#define SLUICE_SLUICE_H

/* The ABI by concern: bounds.h (limits of the CLI, the datapath and the
 * cluster agent), reasons.h (why a packet passed or dropped), abi.h (map
 * keys and values, enums and flags). Includers take this umbrella. */
#include "sluice/bounds.h"
#include "sluice/reasons.h"
#include "sluice/abi.h"

#endif /* SLUICE_SLUICE_H */
