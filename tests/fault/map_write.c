// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The map writes of user/lib/map_write.c for build/tests/sluice-fault:
 * SLUICE_TEST_FAULT=map_update:N makes the Nth write to a map of this
 * command (map_update, map_update_batch, map_delete, map_take, map_mmap)
 * fail with ENOMEM, so tests can check that a failed write is reported and
 * leaves nothing half-written. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include "map_write.h"

/* Whether this write is the one SLUICE_TEST_FAULT names (errno set). */
static bool test_fault(void)
{
	static unsigned long writes;	/* this command's map writes */
	const char *f = getenv("SLUICE_TEST_FAULT");
	static const char site[] = "map_update:";

	if (!f || strncmp(f, site, sizeof(site) - 1) != 0)
		return false;
	if (++writes != strtoul(f + sizeof(site) - 1, NULL, 10))
		return false;
	errno = ENOMEM;
	return true;
}

int map_update(int fd, const void *key, const void *value, __u64 flags)
{
	return test_fault() ? -ENOMEM : bpf_map_update_elem(fd, key, value, flags);
}

/* The kernel's ENOTSUPP (not in userspace's errno.h): what an operation a
 * map type lacks may return. */
#define KERNEL_ENOTSUPP	524

int map_update_batch(int fd, const void *keys, size_t key_size, const void *values,
		     size_t value_size, __u32 count)
{
	__u32 done = count;

	if (test_fault())
		return -ENOMEM;
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
	return test_fault() ? -ENOMEM : bpf_map_delete_elem(fd, key);
}

int map_take(int fd, const void *key, void *value)
{
	return test_fault() ? -ENOMEM : bpf_map_lookup_and_delete_elem(fd, key, value);
}

void *map_mmap(int fd, size_t len)
{
	return test_fault() ? MAP_FAILED : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
}
