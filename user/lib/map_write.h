/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Every write to a map that a command makes goes through these
 * (map_write.c): one place, which a test build replaces with one that
 * fails a chosen write. Each returns what the call it wraps returns. */
#ifndef SLUICE_MAP_WRITE_H
#define SLUICE_MAP_WRITE_H

#include <stddef.h>
#include <linux/types.h>

int map_update(int fd, const void *key, const void *value, __u64 flags);
/* count entries at once (BPF_ANY); one syscall where the kernel has batches. */
int map_update_batch(int fd, const void *keys, size_t key_size, const void *values,
		     size_t value_size, __u32 count);
int map_delete(int fd, const void *key);
/* Deletes key and gives the value it held at that moment (one atomic step). */
int map_take(int fd, const void *key, void *value);
/* The map mmap()ed shared and writable: the address, or MAP_FAILED. */
void *map_mmap(int fd, size_t len);

#endif /* SLUICE_MAP_WRITE_H */
