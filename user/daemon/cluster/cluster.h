/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The cluster agent's state as `cluster status` and the exporter read it. */
#ifndef SLUICE_CLUSTER_H
#define SLUICE_CLUSTER_H

#include <stdbool.h>
#include "core.h"

/* "none", "up", "fallback", "stopped". */
const char *cluster_mode_name(__u32 mode);
/* Seconds s spent in fallback, the current period included (up to the
 * agent's last loop when it is no longer alive). */
double cluster_fallback_seconds(const struct sluice_cluster_state *s, bool alive, __u64 now_ns);

/* `sluice cluster join|status|leave` (commands.c). */
struct cli_cmd;
extern const struct cli_cmd cluster_obj;

#endif /* SLUICE_CLUSTER_H */
