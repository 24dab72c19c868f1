// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Tracked-source counts without walking the source tables: an iter/bpf_map
 * program that prints "MAP_ID COUNT\n" for every sluice source table, COUNT
 * being the per-CPU element counter the kernel keeps for hash maps (6.6+). */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/* Just the kernel fields read here; CO-RE finds them in the vmlinux BTF. */
struct seq_file;

struct bpf_iter_meta {
	struct seq_file *seq;
} __attribute__((preserve_access_index));

struct bpf_map {
	enum bpf_map_type map_type;
	__u32 id;
	char name[BPF_OBJ_NAME_LEN];
} __attribute__((preserve_access_index));

struct bpf_iter__bpf_map {
	struct bpf_iter_meta *meta;
	struct bpf_map *map;
} __attribute__((preserve_access_index));

extern __s64 bpf_map_sum_elem_count(const struct bpf_map *map) __ksym;

/* What libbpf names the datapath's source table (bpf/sluice.bpf.c). */
static const char src_map_name[] = "src_buckets";
static const char line_fmt[] = "%u %lld\n";

static __always_inline int is_source_table(const struct bpf_map *map)
{
	int i;

	if (map->map_type != BPF_MAP_TYPE_LRU_HASH)
		return 0;
	for (i = 0; i < (int)sizeof(src_map_name); i++)
		if (map->name[i] != src_map_name[i])
			return 0;
	return 1;
}

SEC("iter/bpf_map")
int dump_source_counts(struct bpf_iter__bpf_map *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct bpf_map *map = ctx->map;
	__u64 args[2];

	if (!map || !is_source_table(map))
		return 0;
	args[0] = map->id;
	args[1] = (__u64)bpf_map_sum_elem_count(map);
	bpf_seq_printf(seq, line_fmt, sizeof(line_fmt), args, sizeof(args));
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
