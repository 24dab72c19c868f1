// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The check server's escalation bans across an upgrade in place. A check
 * server of the old version writes its bans into the maps it opened until
 * it notices they were replaced (its sweep, within a second) and stops:
 * a ban it wrote after upgrade_fill copied the ban table would be lost
 * with the old table, and one written into a table that is kept would not
 * be looked at while the word that says it has entries lives elsewhere.
 * So the upgrade carries what was written in that window: once the new
 * maps are pinned, and again until UPGRADE_CARRY_NS has passed. Entries
 * the first pass saw are not carried again, so a ban lifted (ban del)
 * meanwhile stays lifted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "upgrade.h"
#include "upgrade_btf.h"
#include "clock.h"
#include "map_write.h"
#include "output.h"
#include "sluice.skel.h"

#define CARRY_POLL_NS	(100ULL * 1000 * 1000)	/* between two passes */

/* An old entry as the first pass saw it: its key's bytes and its end. */
struct seen {
	struct sluice_src_key key;
	__u64 until_ns;
};

struct carry {
	struct map_side o;		/* the old ban table */
	const struct btf *nb;		/* this build's, and its struct sluice_ban */
	__u32 nid;
	int bans, state;		/* the new ban table and ban_state */
	struct seen *seen;		/* sorted; the first pass's */
	size_t nseen, cap;
	bool first;
};

static int by_key(const void *a, const void *b)
{
	return memcmp(&((const struct seen *)a)->key, &((const struct seen *)b)->key,
		      sizeof(struct sluice_src_key));
}

int upgrade_ban_state(struct sluice_bpf *skel, const struct upgrade *u)
{
	const struct btf *ob = u->old_btf[SLUICE_MAPI_config];
	int cfg = u->old[SLUICE_MAPI_config], err = 0;
	struct sluice_ban_state st;
	struct bpf_map_info info;
	__u32 zero = 0, len = sizeof(info);
	void *old;

	/* Pins of a version that kept the word in the config: its `bans`. */
	if (u->fate[SLUICE_MAPI_ban_state] != UPGRADE_NEW || cfg < 0 || !ob)
		return 0;
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(cfg, &info, &len))
		return runtime_err("cannot read map config: %s", strerror(errno));
	old = calloc(1, info.value_size);
	if (!old)
		return runtime_err("out of memory");
	if (!bpf_map_lookup_elem(cfg, &zero, old)) {
		btf_translate(ob, info.btf_value_type_id, old, info.value_size,
			      bpf_object__btf(skel->obj),
			      bpf_map__btf_value_type_id(skel->maps.ban_state), &st, sizeof(st));
		if (map_update(bpf_map__fd(skel->maps.ban_state), &zero, &st, BPF_ANY))
			err = runtime_err("cannot carry the ban state over: %s", strerror(errno));
	}
	free(old);
	return err;
}

/* One old entry into the new table, unless the first pass saw it as it is
 * or the new table holds a later end for it. */
static int carry_one(struct carry *c, const struct sluice_src_key *key, const void *ov,
		     __u64 now)
{
	struct seen want = { .key = *key }, *at;
	struct sluice_ban nv, have;

	btf_translate(c->o.btf, c->o.info.btf_value_type_id, ov, c->o.info.value_size, c->nb,
		      c->nid, &nv, sizeof(nv));
	if (nv.until_ns <= now)
		return 0;
	want.until_ns = nv.until_ns;
	if (c->first) {
		if (c->nseen == c->cap)
			return 0;	/* the table holds no more than SLUICE_MAX_ESCALATION_BANS */
		c->seen[c->nseen++] = want;
	} else {
		at = bsearch(&want, c->seen, c->nseen, sizeof(want), by_key);
		if (at && at->until_ns == nv.until_ns)
			return 0;
	}
	if (!bpf_map_lookup_elem(c->bans, key, &have) && have.until_ns >= nv.until_ns)
		return 0;
	/* A full table keeps what it has (the server counts its failures). */
	return map_update(c->bans, key, &nv, BPF_ANY) && errno != E2BIG ? -errno : 0;
}

/* One pass over the old table; the datapath told to look when the new one
 * has entries. 0 or -errno. */
static int carry_pass(struct carry *c)
{
	struct sluice_src_key key, next;
	struct sluice_ban_state *st;
	__u8 ov[64];
	__u64 now = mono_now_ns();
	bool first = true;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int r = 0;

	while (r >= 0 && !bpf_map_get_next_key(c->o.fd, first ? NULL : &key, &next)) {
		first = false;
		key = next;
		if (!bpf_map_lookup_elem(c->o.fd, &key, ov))
			r = carry_one(c, &key, ov, now);
	}
	if (c->first)
		qsort(c->seen, c->nseen, sizeof(*c->seen), by_key);
	c->first = false;
	if (r < 0)
		return r;
	if (bpf_map_get_next_key(c->bans, NULL, &next))
		return 0;	/* no ban: nothing to look at */
	st = map_mmap(c->state, page);
	if (st == MAP_FAILED)
		return -errno;
	__atomic_fetch_or(&st->bans, SLUICE_BANS_LIVE, __ATOMIC_ACQ_REL);
	munmap(st, page);
	return 0;
}

/* Whether an old version's check server may write where the new program
 * does not look: its ban table replaced, or its word elsewhere. */
static bool carry_needed(const struct upgrade *u)
{
	return u->old[SLUICE_MAPI_bans] >= 0 &&
	       (u->fate[SLUICE_MAPI_bans] != UPGRADE_KEPT ||
		u->fate[SLUICE_MAPI_ban_state] == UPGRADE_NEW);
}

static int carry_open(struct sluice_bpf *skel, const struct upgrade *u, struct carry *c)
{
	__u32 len = sizeof(c->o.info);
	int i = SLUICE_MAPI_bans;

	memset(c, 0, sizeof(*c));
	c->first = true;
	c->o.fd = u->old[i];
	c->o.btf = u->old_btf[i];
	c->nb = bpf_object__btf(skel->obj);
	c->nid = bpf_map__btf_value_type_id(skel->maps.bans);
	c->bans = u->fate[i] == UPGRADE_KEPT ? u->old[i] : bpf_map__fd(skel->maps.bans);
	c->state = u->fate[SLUICE_MAPI_ban_state] == UPGRADE_KEPT ?
		   u->old[SLUICE_MAPI_ban_state] : bpf_map__fd(skel->maps.ban_state);
	if (bpf_obj_get_info_by_fd(c->o.fd, &c->o.info, &len))
		return -errno;
	if (c->o.info.key_size != sizeof(struct sluice_src_key) || c->o.info.value_size > 64)
		return -EINVAL;
	c->cap = SLUICE_MAX_ESCALATION_BANS;
	c->seen = calloc(c->cap, sizeof(*c->seen));
	return c->seen ? 0 : -ENOMEM;
}

int upgrade_carry_bans(struct sluice_bpf *skel, const struct upgrade *u)
{
	struct timespec poll = { .tv_nsec = (long)CARRY_POLL_NS };
	__u64 end = mono_now_ns() + UPGRADE_CARRY_NS;
	struct carry c;
	int err;

	if (!carry_needed(u))
		return 0;
	err = carry_open(skel, u, &c);
	if (err == -EINVAL)
		return 0;	/* a key this build cannot read: upgrade_fill carried it */
	err = err ? err : carry_pass(&c);
	while (!err && mono_now_ns() < end) {
		nanosleep(&poll, NULL);
		err = carry_pass(&c);
	}
	free(c.seen);
	if (err)
		log_event(LOG_WARNING, "escalation bans written during the upgrade may be lost: "
			  "cannot carry them to the new ban table: %s", strerror(-err));
	return 0;
}

void upgrade_unlock(struct upgrade *u)
{
	if (u->lock >= 0)
		close(u->lock);
	u->lock = -1;
}
