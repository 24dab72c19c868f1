// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The ban table of request rules (the check server's escalation): a hash
 * of sources the check server bans in XDP, and the ban_state word that
 * tells the datapath whether to look (bantab.h). Written by ban_put from
 * the check server's threads, swept by one of them. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "bantab.h"
#include "clock.h"
#include "map_write.h"
#include "output.h"

/* The ban table's entries in batches. */
#define BAN_BATCH 256

int ban_writer_open(const struct sluice_maps *m, struct ban_writer *w)
{
	w->len = (size_t)sysconf(_SC_PAGESIZE);
	/* Close-on-exec as every descriptor here: nothing the server runs
	 * inherits a writable ban table. */
	w->fd = fcntl(m->bans, F_DUPFD_CLOEXEC, 0);
	if (w->fd < 0)
		return runtime_err("cannot use the ban table of %s: %s", m->iface, strerror(errno));
	w->state = map_mmap(m->ban_state, w->len);
	if (w->state == MAP_FAILED) {
		close(w->fd);
		w->fd = -1;
		w->state = NULL;
		return runtime_err("cannot map the ban state of %s: %s", m->iface, strerror(errno));
	}
	return 0;
}

void ban_writer_close(struct ban_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	if (w->state && w->state != MAP_FAILED)
		munmap(w->state, w->len);
	w->fd = -1;
	w->state = NULL;
}

/* The entry first, then the word: a sweeper that read the word before this
 * CAS cannot clear it (its CAS fails), and one that read it after finds
 * the entry. */
int ban_put(struct ban_writer *w, const struct sluice_src_key *src, __u32 idx, __u64 until_ns)
{
	struct sluice_ban v = { .until_ns = until_ns, .policy = idx };
	__u64 *word = &w->state->bans, old;

	if (map_update(w->fd, src, &v, BPF_ANY))
		return -errno;
	old = __atomic_load_n(word, __ATOMIC_ACQUIRE);
	while (!__atomic_compare_exchange_n(word, &old,
					    (old + SLUICE_BANS_WRITE) | SLUICE_BANS_LIVE, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	return 0;
}

int ban_walk(int fd, ban_fn fn, void *ctx)
{
	struct sluice_src_key keys[BAN_BATCH], next, *cursor = NULL;
	struct sluice_ban vals[BAN_BATCH];
	__u32 n;
	int err, r;

	do {
		n = BAN_BATCH;
		err = bpf_map_lookup_batch(fd, cursor, &next, keys, vals, &n, NULL);
		if (err && errno != ENOENT)
			return -errno;
		for (__u32 i = 0; i < n; i++) {
			r = fn(&keys[i], &vals[i], ctx);
			if (r)
				return r;
		}
		cursor = &next;
	} while (!err);
	return 0;
}

struct sweep {
	int fd;
	__u64 now;
	int live;
};

/* An entry read as expired may have been written again since (a check
 * server thread banning the same source anew), and a delete by key would
 * remove that fresh ban. So the entry is taken out with the value it holds
 * at that moment, one atomic step (lookup-and-delete, under the same bucket
 * lock as a writer's update), and a value that is not expired is put back:
 * unless a writer has written the key again meanwhile (BPF_NOEXIST fails),
 * and then the writer's entry, newer still, stands. A ban is missing from
 * the table only between the two calls, never lost. */
static int sweep_one(const struct sluice_src_key *key, const struct sluice_ban *v, void *ctx)
{
	struct sweep *sw = ctx;
	struct sluice_ban got;

	if (v->until_ns > sw->now) {
		sw->live++;
		return 0;
	}
	if (ban_sweep_window)
		ban_sweep_window(key);
	if (map_take(sw->fd, key, &got))
		return errno == ENOENT ? 0 : -errno;
	if (got.until_ns <= sw->now)
		return 0;
	sw->live++;
	if (map_update(sw->fd, key, &got, BPF_NOEXIST) && errno != EEXIST)
		return -errno;
	return 0;
}

int ban_sweep(struct ban_writer *w)
{
	__u64 *word = &w->state->bans, seen = __atomic_load_n(word, __ATOMIC_ACQUIRE);
	struct sweep sw = { .fd = w->fd, .now = mono_now_ns() };
	int err = ban_walk(w->fd, sweep_one, &sw);

	if (err)
		return err;
	if (!sw.live && (seen & SLUICE_BANS_LIVE))
		__atomic_compare_exchange_n(word, &seen, seen & ~SLUICE_BANS_LIVE, false,
					    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return sw.live;
}
