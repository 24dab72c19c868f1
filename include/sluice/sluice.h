/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Shared between the XDP program and the CLI: limits, map keys and values,
 * counter layouts. Every struct here is part of the pinned-map ABI. */
#ifndef SLUICE_SLUICE_H
#define SLUICE_SLUICE_H

/* The ABI by concern, one header each: bounds.h (limits of the CLI, the
 * datapath and the cluster agent), reasons.h (why a packet passed or
 * dropped), addr.h (addresses and families), policy.h (rules, the policy
 * table, the config map), sources.h (source keys, buckets, slots), bans.h
 * (the escalation ban table, the prefix ban trie), frag.h (the fragment
 * table), cluster.h (leases, hot notices, grants, the agent's state),
 * counters.h (counters, events, attach's record). Includers take this
 * umbrella. */
#include "sluice/bounds.h"
#include "sluice/reasons.h"
#include "sluice/addr.h"
#include "sluice/policy.h"
#include "sluice/sources.h"
#include "sluice/bans.h"
#include "sluice/frag.h"
#include "sluice/cluster.h"
#include "sluice/counters.h"

#endif /* SLUICE_SLUICE_H */
