/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The leases map of --cluster rules (sluice.h), defined once for the XDP
 * program, which spends leases, and the agent's lease writer
 * (cluster.bpf.c), which is pointed at the pinned map before it loads. */
#ifndef SLUICE_LEASES_MAP_H
#define SLUICE_LEASES_MAP_H

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SLUICE_MAX_LEASES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sluice_src_key);
	__type(value, struct sluice_lease);
} leases SEC(".maps");

#endif /* SLUICE_LEASES_MAP_H */
