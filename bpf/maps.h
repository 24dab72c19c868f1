/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Every map of the XDP program, in one place; their keys and values are
 * the ABI of include/sluice/sluice.h. Included by sluice.bpf.c. */
#ifndef SLUICE_BPF_MAPS_H
#define SLUICE_BPF_MAPS_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "sluice/sluice.h"
#include "sluice/srctab.h"

/* The source table (include/sluice/srctab.h, bpf/srctab.h): every bucket,
 * home or keyed, in slots the program manages itself; mmapable, so its values are
 * page-aligned and userspace reads it in place. Sized by attach. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);		/* srctab_buckets(--max-sources), by attach */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_slot_bucket);
} src_table SEC(".maps");

/* Each slot's passed and dropped, one entry per bucket of src_table. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);		/* as src_table */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_slot_counts);
} src_counts SEC(".maps");

/* The stripe locks of inserts into src_table (0 free, 1 held). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_SRC_LOCKS);
	__type(key, __u32);
	__type(value, __u64);
} src_locks SEC(".maps");

/* The seed of the source table's hash (struct sluice_src_seed): root's
 * alone, not mmapable. Made with the table. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_src_seed);
} src_seed SEC(".maps");

/* The source table's occupancy (enum sluice_src_stat), per CPU: deltas
 * whose sum over the CPUs is the count. Made with the table. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_SRC_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} src_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, SLUICE_POLICY_SLOTS * SLUICE_MAX_POLICIES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sluice_lpm_key);
	__type(value, struct sluice_lpm_val);
} policy_lpm SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_POLICY_SLOTS * SLUICE_MAX_POLICIES);
	__type(key, __u32);
	__type(value, struct sluice_policy);
} policy_table SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);	/* words stored whole, see maps.c */
	__type(key, __u32);
	__type(value, struct sluice_config);
} config SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_R_MAX);
	__type(key, __u32);
	__type(value, struct sluice_counter);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_MAX_POLICIES);
	__type(key, __u32);
	__type(value, struct sluice_policy_counter);
} policy_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_meta);
} meta SEC(".maps");

/* The live policy's text (sluice/policy.h): for userspace only. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_policy_text);
} policy_text SEC(".maps");

/* Sources banned by the check server's escalation (sluice.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, SLUICE_MAX_ESCALATION_BANS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct sluice_src_key);
	__type(value, struct sluice_ban);
} bans SEC(".maps");

/* The fragment table (sluice/frag.h): a first fragment's L4 facts, for its
 * later fragments (bpf/frag.h). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, SLUICE_FRAG_ENTRIES);
	__type(key, struct sluice_frag_key);
	__type(value, struct sluice_frag_l4);
} frag_l4 SEC(".maps");

/* Whether bans holds entries (struct sluice_ban_state); mmapable, so the
 * check server sets and clears the bit by CAS. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sluice_ban_state);
} ban_state SEC(".maps");

/* The prefix ban table (sluice/bans.h): slot 0 holds the live trie, or
 * nothing while no prefix is banned. The inner trie's size is set at
 * attach (--max-bans). */
struct ban_trie_inner {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, SLUICE_MAX_BANS_DEFAULT);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(key_size, sizeof(struct sluice_ban_key));
	__uint(value_size, sizeof(struct sluice_pfx_ban));
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct ban_trie_inner);
} ban_trie SEC(".maps");

/* The lists of prefix bans, by index (sluice_ban_list), and what each
 * dropped, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLUICE_BAN_LISTS);
	__type(key, __u32);
	__type(value, struct sluice_ban_list);
} ban_lists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_BAN_LISTS);
	__type(key, __u32);
	__type(value, struct sluice_counter);
} ban_drops SEC(".maps");

/* Cluster-wide limits (sluice.h): leases the agent writes (through
 * bpf/cluster.bpf.c) and leased rules spend, notices of the buckets that
 * want one, and the agent's state. */
#include "leases_map.h"

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, SLUICE_CLUSTER_HOT_MAX);
	__type(value, struct sluice_hot);
} cluster_hot SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sluice_cluster_state);
} cluster_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SLUICE_EV_MAX);
	__type(key, __u32);
	__type(value, __u64);
} events SEC(".maps");

#endif /* SLUICE_BPF_MAPS_H */
