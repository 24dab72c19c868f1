/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The names userspace prints for the datapath's values: reasons (from the
 * SLUICE_REASONS list) and XDP attach modes. */
#ifndef SLUICE_NAMES_H
#define SLUICE_NAMES_H

#include <linux/types.h>

/* A reason's name (stats, `stats -j`, the exporter's reason label), or
 * "unknown". */
const char *reason_name(__u32 reason);
/* What a reason means, as doc/metrics.md says, or "" when unknown. */
const char *reason_help(__u32 reason);
/* An XDP attach mode (enum xdp_attach_mode): native, skb, hw or unknown. */
const char *mode_name(__u32 xdp_mode);

#endif /* SLUICE_NAMES_H */
