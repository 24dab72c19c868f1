// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The source table in userspace: sized and seeded at attach, read in place
 * through an mmap of the pinned array, and written by the same CAS
 * protocol as the XDP program (include/sluice/srctab.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "srctab.h"
#include "map_write.h"
#include "output.h"
#include "sluice/srctab.h"

#define READ_ONCE(x) (*(volatile typeof(x) *)&(x))
#define SRCTAB_BATCH 4096	/* buckets per bpf_map_lookup_batch call */
#define WALK_TICK (1U << 16)	/* slots between two looks at the clock */
#define WALK_QUIET_NS 1000000000ULL	/* a walk says nothing for its first second */

/* A long read of the table (a walk, a copy): a line on stderr once a
 * second, after its first, so a table of millions is not taken for a hang. */
struct walk_progress {
	struct timespec start;
	__u64 said_ns;		/* since start, when last said */
};

static __u64 since_ns(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (__u64)(t.tv_sec - t0->tv_sec) * 1000000000ULL + (__u64)t.tv_nsec -
	       (__u64)t0->tv_nsec;
}

static void walk_begin(struct walk_progress *p)
{
	clock_gettime(CLOCK_MONOTONIC, &p->start);
	p->said_ns = 0;
}

static void walk_tick(struct walk_progress *p, const char *what, __u64 done, __u64 total)
{
	__u64 t = since_ns(&p->start);

	if (t < WALK_QUIET_NS || t - p->said_ns < WALK_QUIET_NS || !total)
		return;
	p->said_ns = t;
	log_event(LOG_NOTICE, "%s the source table: %llu of %llu slots (%llu%%), %.1f s so far",
		  what, (unsigned long long)done, (unsigned long long)total,
		  (unsigned long long)(done * 100 / total), (double)t / 1e9);
}

int srctab_size(struct bpf_map *table, struct bpf_map *counts, __u64 max_sources)
{
	__u32 nb = srctab_buckets(max_sources);

	if (bpf_map__set_max_entries(table, nb) || bpf_map__set_max_entries(counts, nb))
		return -EINVAL;
	return 0;
}

int srctab_seed(const struct sluice_maps *m, __u64 *seed)
{
	struct sluice_src_seed v;
	__u32 zero = 0;

	if (m->src_seed < 0)
		return -EACCES;	/* root's alone: a reader of the group cannot open it */
	if (bpf_map_lookup_elem(m->src_seed, &zero, &v))
		return -errno;
	*seed = v.seed;
	return 0;
}

int srctab_seed_new(int fd)
{
	struct sluice_src_seed v = { 0 };
	__u32 zero = 0;

	while (!v.seed)
		if (getrandom(&v.seed, sizeof(v.seed), 0) != sizeof(v.seed))
			return -errno;
	return map_update(fd, &zero, &v, BPF_ANY) ? -errno : 0;
}

int srctab_init(const struct sluice_maps *m, __u64 max_sources)
{
	struct sluice_config cfg;
	__u32 zero = 0;
	__u64 seed = 0;
	int err;

	if (bpf_map_lookup_elem(m->config, &zero, &cfg))
		return -errno;
	err = srctab_seed(m, &seed);
	if (err)
		return err;
	if (seed && cfg.src_buckets)
		return 0;	/* kept across attaches, with its sources */
	/* A table with no seed is new (a first attach; an upgrade draws its
	 * new table's before the program loads): the seed first, so the
	 * program places no source by any other. */
	if (!seed) {
		err = srctab_seed_new(m->src_seed);
		if (err)
			return err;
	}
	cfg.src_buckets = map_capacity(m->src_table);
	if (!cfg.src_capacity)
		cfg.src_capacity = (__u32)max_sources;
	/* Before the program runs and before any policy: nothing else
	 * writes the config meanwhile. */
	return map_update(m->config, &zero, &cfg, BPF_ANY) ? -errno : 0;
}

int srctab_set_idle(const struct sluice_maps *m, __u64 idle_ns)
{
	struct sluice_config cfg;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->config, &zero, &cfg))
		return -errno;
	if (!idle_ns)
		idle_ns = cfg.src_idle_ns ? cfg.src_idle_ns : SLUICE_EST_IDLE_NS_DEFAULT;
	if (cfg.src_idle_ns == idle_ns)
		return 0;
	cfg.src_idle_ns = idle_ns;
	return map_update(m->config, &zero, &cfg, BPF_ANY) ? -errno : 0;
}

__u32 srctab_capacity(const struct sluice_maps *m)
{
	struct sluice_config cfg;
	__u32 zero = 0;

	return bpf_map_lookup_elem(m->config, &zero, &cfg) ? 0 : cfg.src_capacity;
}

static size_t page_round(size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (len + pg - 1) / pg * pg;
}

/* A copy of an array map of n values of size vsz, read in batches: what a
 * reader with a read-only descriptor gets (the kernel maps an array shared
 * only through a writable one). NULL, with errno, on failure. */
static void *copy_in(int fd, __u32 n, size_t vsz)
{
	__u32 *keys = calloc(SRCTAB_BATCH, sizeof(*keys)), in = 0, out = 0, count;
	char *vals = calloc(n ? n : 1, vsz);
	struct walk_progress wp;
	__u32 done = 0;
	int r, err = 0;

	if (!keys || !vals) {
		err = ENOMEM;
		goto fail;
	}
	walk_begin(&wp);
	while (done < n) {
		walk_tick(&wp, "copying", (__u64)done * SLUICE_SLOTS_PER_BUCKET,
			  (__u64)n * SLUICE_SLOTS_PER_BUCKET);
		count = n - done < SRCTAB_BATCH ? n - done : SRCTAB_BATCH;
		r = bpf_map_lookup_batch(fd, done ? &in : NULL, &out, keys, vals + done * vsz,
					 &count, NULL);
		if (r && errno != ENOENT) {
			err = errno;
			goto fail;
		}
		done += count;
		in = out;
		if (r || !count)
			break;
	}
	free(keys);
	return vals;
fail:
	free(keys);
	free(vals);
	errno = err;
	return NULL;
}

/* The array at fd (pinned at dir/name) mapped in place, writable when fd
 * is, or when the pin opens writable (root reading through a read-only
 * descriptor: the kernel maps an array only writable); else a copy. */
static void *map_in(int fd, const char *dir, const char *name, size_t len, __u32 n, size_t vsz,
		    bool *writable, bool *copied)
{
	char path[SLUICE_PATH_MAX];
	void *p = map_mmap(fd, len);
	int wfd;

	*copied = false;
	if (p == MAP_FAILED && (errno == EACCES || errno == EPERM)) {
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		wfd = bpf_obj_get(path);
		if (wfd >= 0) {
			p = map_mmap(wfd, len);
			close(wfd);
		}
		if (p == MAP_FAILED)
			errno = EACCES;
	}
	*writable = p != MAP_FAILED;
	if (p != MAP_FAILED || (errno != EACCES && errno != EPERM))
		return p;	/* mapped, or a failure a copy would hide */
	p = copy_in(fd, n, vsz);
	*copied = p != NULL;
	return p ? p : MAP_FAILED;
}

int srctab_open(const struct sluice_maps *m, struct srctab *t)
{
	bool w1, w2;
	int err;

	memset(t, 0, sizeof(*t));
	t->nbuckets = map_capacity(m->src_table);
	if (!t->nbuckets || map_capacity(m->src_counts) != t->nbuckets)
		return -EINVAL;
	/* Without the seed (a reader of the group) srctab_find walks. */
	err = srctab_seed(m, &t->seed);
	if (err && err != -EACCES)
		return err;
	t->seeded = !err;
	t->tab_len = page_round((size_t)t->nbuckets * sizeof(*t->tab));
	t->cnt_len = page_round((size_t)t->nbuckets * sizeof(*t->cnt));
	t->tab = map_in(m->src_table, m->dir, "src_table", t->tab_len, t->nbuckets, sizeof(*t->tab), &w1, &t->tab_copied);
	if (t->tab == MAP_FAILED) {
		t->tab = NULL;
		return -errno;
	}
	t->cnt = map_in(m->src_counts, m->dir, "src_counts", t->cnt_len, t->nbuckets, sizeof(*t->cnt), &w2,
			&t->cnt_copied);
	if (t->cnt == MAP_FAILED) {
		int err = -errno;

		t->cnt = NULL;
		srctab_close(t);
		return err;
	}
	t->writable = w1 && w2;
	return 0;
}

static void map_out(void *p, size_t len, bool copied)
{
	if (copied)
		free(p);
	else if (p)
		munmap(p, len);
}

void srctab_close(struct srctab *t)
{
	map_out(t->tab, t->tab_len, t->tab_copied);
	map_out(t->cnt, t->cnt_len, t->cnt_copied);
	t->tab = NULL;
	t->cnt = NULL;
}

/* Slot at's ctl when it is live, else 0; its address and state are read
 * between two reads of ctl that agree. */
static __u64 slot_snapshot(const struct srctab *t, __u32 at, struct sluice_slot *out)
{
	const struct sluice_slot *s = &t->tab[at / SLUICE_SLOTS_PER_BUCKET].s[at % SLUICE_SLOTS_PER_BUCKET];
	__u64 c;

	for (int tries = 0; tries < 4; tries++) {
		c = READ_ONCE(s->ctl);
		if ((c & SLUICE_SLOT_STATE_MASK) != SLUICE_SLOT_LIVE)
			return 0;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		memcpy(out->a, (const void *)s->a, sizeof(out->a));
		out->tat = READ_ONCE(s->tat);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (((READ_ONCE(s->ctl) ^ c) & SLUICE_SLOT_ID_MASK) == 0) {
			out->ctl = c;
			return c;
		}
	}
	return 0;
}

/* The key of live slot s (the inverse of srctab_key): a home key, or a
 * keyed one whose length is told by its sentinel bit, the last bit set. */
static void slot_key(const struct sluice_slot *s, struct sluice_src_key *key)
{
	int i, bit;

	memset(key, 0, sizeof(*key));
	memcpy(key->a, s->a, sizeof(key->a));
	key->family = (s->ctl & SLUICE_SLOT_V6) ? SLUICE_FAMILY_V6 : SLUICE_FAMILY_V4;
	key->key_len = SLUICE_KEY_LEN_SOURCE;
	key->policy = SLUICE_KEY_HOME;
	if (!(s->ctl & SLUICE_SLOT_KEYED))
		return;
	key->policy = (__u16)SLUICE_BOUND_IDX(s->ctl);
	if (s->ctl & SLUICE_SLOT_KEY_FULL)
		return;
	for (i = SLUICE_ADDR_LEN - 1; i >= 0 && !key->a[i]; i--)
		;
	if (i < 0)
		return;	/* no sentinel: cannot be */
	bit = __builtin_ctz(key->a[i]);
	key->key_len = (__u8)(i * 8 + 7 - bit);
	key->a[i] &= (__u8)~(1U << bit);
}

bool srctab_read(const struct srctab *t, __u32 at, struct sluice_src_key *key,
		 struct sluice_bucket *b)
{
	const struct sluice_slot_count *n;
	struct sluice_slot s;

	if (!t->tab || !t->cnt || at >= t->nbuckets * SLUICE_SLOTS_PER_BUCKET ||
	    !slot_snapshot(t, at, &s))
		return false;
	slot_key(&s, key);
	n = &t->cnt[at / SLUICE_SLOTS_PER_BUCKET].c[at % SLUICE_SLOTS_PER_BUCKET];
	b->tat = s.tat;
	b->bound = s.ctl;
	b->passed = READ_ONCE(n->passed);
	b->dropped = READ_ONCE(n->dropped);
	b->would_drop = READ_ONCE(n->would_drop);
	return true;
}

/* Where key's slot may be: its two candidate buckets in a table of n
 * buckets seeded with seed, and the address words and id a live slot of
 * it has (srctab_key). */
struct key_place {
	__u64 a0, a1, id;
	__u32 bk[2];
};

static void key_place(const struct sluice_src_key *key, __u64 seed, __u32 n, struct key_place *kp)
{
	__u64 tag;

	srctab_key(key, &kp->a0, &kp->a1, &tag, &kp->id);
	srctab_pick(srctab_hash(kp->a0, kp->a1, tag, seed), n, &kp->bk[0], &kp->bk[1]);
}

/* Whether copied slot s holds key, whose place is kp. */
static bool slot_holds(const struct sluice_slot *s, const struct key_place *kp)
{
	__u64 a0, a1;

	memcpy(&a0, s->a, sizeof(a0));
	memcpy(&a1, s->a + sizeof(a0), sizeof(a1));
	return (s->ctl & srctab_id_mask(kp->id)) == (SLUICE_SLOT_LIVE | kp->id) &&
	       a0 == kp->a0 && a1 == kp->a1;
}

/* The live slot of key anywhere in the table: a reader without the seed. */
static long srctab_walk_find(const struct srctab *t, const struct key_place *kp)
{
	struct sluice_slot s;

	for (__u32 at = 0; at < t->nbuckets * SLUICE_SLOTS_PER_BUCKET; at++)
		if (slot_snapshot(t, at, &s) && slot_holds(&s, kp))
			return at;
	return -1;
}

long srctab_find(const struct srctab *t, const struct sluice_src_key *key)
{
	struct key_place kp;
	struct sluice_slot s;

	if (t->nbuckets < 2 || !t->tab)
		return -1;
	key_place(key, t->seed, t->nbuckets, &kp);
	if (!t->seeded)
		return srctab_walk_find(t, &kp);
	for (int j = 0; j < 2; j++)
		for (__u32 i = 0; i < SLUICE_SLOTS_PER_BUCKET; i++) {
			__u32 at = kp.bk[j] * SLUICE_SLOTS_PER_BUCKET + i;

			if (slot_snapshot(t, at, &s) && slot_holds(&s, &kp))
				return at;
		}
	return -1;
}

long srctab_live(const struct srctab *t)
{
	long n = 0;

	for (__u32 b = 0; b < t->nbuckets; b++)
		for (__u32 i = 0; i < SLUICE_SLOTS_PER_BUCKET; i++)
			n += (READ_ONCE(t->tab[b].s[i].ctl) & SLUICE_SLOT_STATE_MASK) ==
			     SLUICE_SLOT_LIVE;
	return n;
}

long walk_buckets(const struct sluice_maps *m, bucket_fn fn, void *ctx)
{
	struct sluice_src_key k;
	struct sluice_bucket b;
	struct walk_progress wp;
	struct srctab t;
	long total = 0;
	int err = srctab_open(m, &t);
	__u32 slots = t.nbuckets * SLUICE_SLOTS_PER_BUCKET;

	if (err)
		return err;
	walk_begin(&wp);
	for (__u32 at = 0; at < slots; at++) {
		if (at % WALK_TICK == 0)
			walk_tick(&wp, "walking", at, slots);
		if (!srctab_read(&t, at, &k, &b))
			continue;
		total++;
		if (fn && fn(&k, &b, ctx)) {
			srctab_close(&t);
			return total;
		}
	}
	srctab_close(&t);
	return total;
}

/* A copied slot sl and its counts n, read as a bucket of the key whose
 * place is kp: true when it is live and holds the key. */
static bool slot_is(const struct sluice_slot *sl, const struct sluice_slot_count *n,
		    const struct key_place *kp, struct sluice_bucket *b)
{
	if (!slot_holds(sl, kp))
		return false;
	b->tat = sl->tat;
	b->bound = sl->ctl;
	b->passed = n->passed;
	b->dropped = n->dropped;
	b->would_drop = n->would_drop;
	return true;
}

/* A key's bucket found by a walk of the table, read in batches and
 * dropped as it goes: what a reader of the group, who may not read the
 * seed, pays (the whole table's reads, a batch's memory). */
static int slot_walk_lookup(const struct sluice_maps *m, const struct key_place *kp,
			    struct sluice_bucket *b)
{
	struct sluice_slot_bucket *sb = calloc(SRCTAB_BATCH, sizeof(*sb));
	__u32 *keys = calloc(SRCTAB_BATCH, sizeof(*keys));
	__u32 n = map_capacity(m->src_table), done = 0, in = 0, out = 0, count;
	const struct sluice_slot_count none = { 0 };
	struct sluice_slot_counts sc;
	int err = -ENOENT, r;

	if (!sb || !keys)
		err = -ENOMEM;
	while (err == -ENOENT && done < n) {
		count = n - done < SRCTAB_BATCH ? n - done : SRCTAB_BATCH;
		r = bpf_map_lookup_batch(m->src_table, done ? &in : NULL, &out, keys, sb, &count,
					 NULL);
		if (r && errno != ENOENT) {
			err = -errno;
			break;
		}
		for (__u32 j = 0; j < count && err == -ENOENT; j++)
			for (__u32 i = 0; i < SLUICE_SLOTS_PER_BUCKET && err == -ENOENT; i++) {
				if (!slot_is(&sb[j].s[i], &none, kp, b))
					continue;
				if (bpf_map_lookup_elem(m->src_counts, &keys[j], &sc))
					err = -errno;
				else
					err = 0;
				b->passed = err ? 0 : sc.c[i].passed;
				b->dropped = err ? 0 : sc.c[i].dropped;
				b->would_drop = err ? 0 : sc.c[i].would_drop;
			}
		done += count;
		in = out;
		if (r || !count)
			break;
	}
	free(sb);
	free(keys);
	return err;
}

/* A key's bucket, from copies of its two candidate buckets (each read
 * whole by the kernel): no mapping, so root pays two lookups, not a copy
 * of the table. */
static int slot_lookup(const struct sluice_maps *m, const struct sluice_src_key *key,
		       struct sluice_bucket *b)
{
	struct sluice_slot_bucket sb;
	struct sluice_slot_counts sc;
	struct sluice_config cfg;
	struct key_place kp;
	__u32 zero = 0;
	__u64 seed = 0;
	int err;

	if (bpf_map_lookup_elem(m->config, &zero, &cfg))
		return -errno;
	if (cfg.src_buckets < 2)
		return -ENOENT;
	err = srctab_seed(m, &seed);
	if (err && err != -EACCES)
		return err;
	key_place(key, seed, cfg.src_buckets, &kp);
	if (err)
		return slot_walk_lookup(m, &kp, b);
	for (int j = 0; j < 2; j++) {
		if (bpf_map_lookup_elem(m->src_table, &kp.bk[j], &sb) ||
		    bpf_map_lookup_elem(m->src_counts, &kp.bk[j], &sc))
			return -errno;
		for (__u32 i = 0; i < SLUICE_SLOTS_PER_BUCKET; i++)
			if (slot_is(&sb.s[i], &sc.c[i], &kp, b))
				return 0;
	}
	return -ENOENT;
}

int bucket_lookup(const struct sluice_maps *m, const struct sluice_src_key *key,
		  struct sluice_bucket *b)
{
	return slot_lookup(m, key, b);
}

int bucket_set_state(const struct sluice_maps *m, const struct sluice_src_key *key,
		     const struct sluice_bucket *b, __u64 tat)
{
	struct sluice_slot *s;
	struct srctab t;
	long at;
	int err, r = 0;

	err = srctab_open(m, &t);
	if (err)
		return err;
	if (!t.writable) {
		srctab_close(&t);
		return -EPERM;
	}
	at = srctab_find(&t, key);
	if (at >= 0) {
		s = &t.tab[at / SLUICE_SLOTS_PER_BUCKET].s[at % SLUICE_SLOTS_PER_BUCKET];
		/* The state moves only while the slot is still this source's,
		 * bound as it was read: the XDP program's rule (judge.h). */
		if (READ_ONCE(s->ctl) == b->bound)
			r = __sync_bool_compare_and_swap(&s->tat, b->tat, tat);
	}
	srctab_close(&t);
	return r;
}
