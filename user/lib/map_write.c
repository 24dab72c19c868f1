// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The map writes of every command, in one place (a test build links
 * tests/fault/map_write.c instead, which fails a chosen one). */
#include <errno.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include "map_write.h"

int map_update(int fd, const void *key, const void *value, __u64 flags)
{
	return bpf_map_update_elem(fd, key, value, flags);
}

/* The kernel's ENOTSUPP (not in userspace's errno.h): what an operation a
 * map type lacks may return. */
#define KERNEL_ENOTSUPP	524

int map_update_batch(int fd, const void *keys, size_t key_size, const void *values,
		     size_t value_size, __u32 count)
{
	__u32 done = count;

	if (!bpf_map_update_batch(fd, keys, values, &done, NULL))
		return 0;
	if (errno != EINVAL && errno != EOPNOTSUPP && errno != KERNEL_ENOTSUPP)
		return -errno;
	/* A kernel without batches for this map type: one update per key. */
	for (__u32 i = 0; i < count; i++)
		if (bpf_map_update_elem(fd, (const char *)keys + i * key_size,
					(const char *)values + i * value_size, BPF_ANY))
			return -errno;
	return 0;
}

int map_delete(int fd, const void *key)
{
	return bpf_map_delete_elem(fd, key);
}

int map_take(int fd, const void *key, void *value)
{
	return bpf_map_lookup_and_delete_elem(fd, key, value);
}

void *map_mmap(int fd, size_t len)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
}
