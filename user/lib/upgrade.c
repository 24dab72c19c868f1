// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * attach over the pins of another version of sluice. A map whose layout
 * (type, sizes, flags, and its key's and value's fields by BTF) is the
 * same is reused as it is. One that differs is made anew beside it and,
 * before the new program loads, filled from it: by its fields' names for
 * the counters, the bans, the config and the cluster's state; the policy
 * (rules, default, budget) re-committed from the text the old version kept
 * of it, over the old policy table carried by its fields' names (each
 * rule's index and `since`, so per-source state kept keeps its meaning);
 * the per-source state (buckets, slots, leases) started fresh when its own
 * layout changed, since its entries are bound to the old rules. The program is then
 * swapped in place, and only then are the new maps pinned over the old
 * ones: until the swap the old program runs on the old maps, after it the
 * new one on the new, and no packet meets the interface unjudged.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "sluice/bounds.h"
#include "upgrade.h"
#include "upgrade_btf.h"
#include "output.h"
#include "pins.h"
#include "rule.h"
#include "srctab.h"
#include "store.h"
#include "sluice.skel.h"

#define MAP_NAME(name) #name,
static const char *const map_names[SLUICE_MAPI_COUNT] = { SLUICE_MAPS(MAP_NAME) };
#undef MAP_NAME

static struct bpf_map *skel_map(struct sluice_bpf *skel, int i)
{
#define MAP_PTR(name) skel->maps.name,
	struct bpf_map *maps[SLUICE_MAPI_COUNT] = { SLUICE_MAPS(MAP_PTR) };
#undef MAP_PTR
	return maps[i];
}

/* The source table and what is made with it: its slots' counts, locks and
 * occupancy, and the seed that placed its entries. */
static bool table_part(int i)
{
	return i == SLUICE_MAPI_src_table || i == SLUICE_MAPI_src_counts ||
	       i == SLUICE_MAPI_src_locks || i == SLUICE_MAPI_src_stats ||
	       i == SLUICE_MAPI_src_seed;
}

/* Per-source state: bound to the rules of its generation, started fresh. */
static bool per_source(int i)
{
	return table_part(i) ||
	       i == SLUICE_MAPI_leases || i == SLUICE_MAPI_cluster_hot;
}

/*
 * The table and its seed are kept together or made anew together: a kept
 * table keeps the seed that placed its entries, a new one gets a new seed.
 * A version that kept the seed in the config (readable by the pins'
 * group) has no src_seed map: its seed is known outside root, so its
 * table is made anew under a fresh one, and per-source state starts over.
 * So do the table and its occupancy counters (src_stats): a table kept
 * with counters made fresh (pins of a version that kept none) would count
 * its held slots as free for good.
 */
static void table_together(struct upgrade *u)
{
	bool anew = false;

	for (int i = 0; i < SLUICE_MAPI_COUNT; i++)
		anew |= table_part(i) && u->fate[i] != UPGRADE_KEPT;
	for (int i = 0; i < SLUICE_MAPI_COUNT && anew; i++)
		if (table_part(i) && u->fate[i] == UPGRADE_KEPT)
			u->fate[i] = UPGRADE_REPLACED;
}

/* Made from the policy: re-committed, not copied. */
static bool from_policy(int i)
{
	return i == SLUICE_MAPI_policy_lpm || i == SLUICE_MAPI_policy_table;
}

static int map_info_of(int fd, struct bpf_map_info *info)
{
	__u32 len = sizeof(*info);

	memset(info, 0, sizeof(*info));
	return bpf_obj_get_info_by_fd(fd, info, &len);
}

/* Maps libbpf creates without BTF: their layout is their sizes. */
static bool has_btf(__u32 type)
{
	switch (type) {
	case BPF_MAP_TYPE_PERF_EVENT_ARRAY:
	case BPF_MAP_TYPE_CGROUP_ARRAY:
	case BPF_MAP_TYPE_STACK_TRACE:
	case BPF_MAP_TYPE_ARRAY_OF_MAPS:
	case BPF_MAP_TYPE_HASH_OF_MAPS:
	case BPF_MAP_TYPE_DEVMAP:
	case BPF_MAP_TYPE_DEVMAP_HASH:
	case BPF_MAP_TYPE_CPUMAP:
	case BPF_MAP_TYPE_XSKMAP:
	case BPF_MAP_TYPE_SOCKMAP:
	case BPF_MAP_TYPE_SOCKHASH:
	case BPF_MAP_TYPE_QUEUE:
	case BPF_MAP_TYPE_STACK:
	case BPF_MAP_TYPE_RINGBUF:
		return false;
	default:
		return true;
	}
}

static bool same_map(const struct bpf_map_info *o, const struct btf *ob,
		     const struct bpf_map *n, const struct btf *nb)
{
	bool btf = has_btf(o->type);

	return o->type == (__u32)bpf_map__type(n) && o->key_size == bpf_map__key_size(n) &&
	       o->value_size == bpf_map__value_size(n) &&
	       o->max_entries == bpf_map__max_entries(n) &&
	       o->map_flags == bpf_map__map_flags(n) &&
	       (!btf || btf_same_layout(ob, o->btf_key_type_id, nb, bpf_map__btf_key_type_id(n))) &&
	       (!btf || btf_same_layout(ob, o->btf_value_type_id, nb,
					bpf_map__btf_value_type_id(n)));
}

/* A new map for skeleton map n, unpinned, that the program will use. */
static int make_anew(struct bpf_map *n, struct upgrade *u)
{
	struct bpf_map_create_opts mo = { .sz = sizeof(mo), .map_flags = bpf_map__map_flags(n) };
	int fd, err;

	/* A map of maps needs its inner template: libbpf makes it at load,
	 * unpinned (ban_trie is made anew only while empty). */
	if (bpf_map__type(n) == BPF_MAP_TYPE_ARRAY_OF_MAPS ||
	    bpf_map__type(n) == BPF_MAP_TYPE_HASH_OF_MAPS) {
		err = bpf_map__set_pin_path(n, NULL);
		return err ? runtime_err("cannot make map %s anew: %s", bpf_map__name(n),
					 strerror(-err)) : 0;
	}

	if (u->btf_fd >= 0 && has_btf(bpf_map__type(n)) && bpf_map__btf_value_type_id(n)) {
		mo.btf_fd = (__u32)u->btf_fd;
		mo.btf_key_type_id = bpf_map__btf_key_type_id(n);
		mo.btf_value_type_id = bpf_map__btf_value_type_id(n);
	}
	fd = bpf_map_create(bpf_map__type(n), bpf_map__name(n), bpf_map__key_size(n),
			    bpf_map__value_size(n), bpf_map__max_entries(n), &mo);
	if (fd < 0)
		return runtime_err("cannot create map %s: %s", bpf_map__name(n), strerror(errno));
	err = bpf_map__reuse_fd(n, fd);
	close(fd);
	if (!err)
		err = bpf_map__set_pin_path(n, NULL);
	if (err)
		return runtime_err("cannot use the new map %s: %s", bpf_map__name(n),
				   strerror(-err));
	return 0;
}

/* Old map i's BTF, loaded once per BTF object (a map another version made
 * anew has its own). */
static void old_btf(struct upgrade *u, int i, __u32 id)
{
	int k;

	for (k = 0; k < UPGRADE_BTFS && u->btf_ids[k] && u->btf_ids[k] != id; k++)
		;
	if (!id || k == UPGRADE_BTFS)
		return;
	if (!u->btf_ids[k]) {
		u->btfs[k] = btf__load_from_kernel_by_id(id);
		if (libbpf_get_error(u->btfs[k]))
			u->btfs[k] = NULL;
		u->btf_ids[k] = id;
	}
	u->old_btf[i] = u->btfs[k];
}

/* The new object's BTF, loaded so that the maps made anew carry it too and
 * the next version can compare them. */
static void new_btf(struct sluice_bpf *skel, struct upgrade *u)
{
	const struct btf *obj = bpf_object__btf(skel->obj);
	const void *raw;
	__u32 size;

	if (u->new_btf || !obj)
		return;
	raw = btf__raw_data(obj, &size);
	u->new_btf = raw ? btf__new(raw, size) : NULL;
	if (libbpf_get_error(u->new_btf))
		u->new_btf = NULL;
	if (u->new_btf && !btf__load_into_kernel(u->new_btf))
		u->btf_fd = btf__fd(u->new_btf);
}

/* Whether the old ban table holds tries of this version's layout. Its
 * outer map's info does not show its tries' sizes: the live trie tells,
 * or, with none installed, the old object's template (ban_trie_inner in
 * the BTF the old maps carry); unknown is taken for the same. *bans: a
 * trie is installed (there are bans to lose). */
static bool ban_trie_same(const struct upgrade *u, bool *bans)
{
	struct bpf_map_info info;
	__u32 zero = 0, id, size;
	int fd;

	*bans = false;
	if (u->old[SLUICE_MAPI_ban_trie] < 0)
		return true;
	if (bpf_map_lookup_elem(u->old[SLUICE_MAPI_ban_trie], &zero, &id)) {
		size = btf_inner_value_size(u->old_btf[SLUICE_MAPI_ban_lists], "ban_trie_inner");
		return !size || size == sizeof(struct sluice_pfx_ban);
	}
	*bans = true;
	fd = bpf_map_get_fd_by_id(id);
	if (fd < 0 || map_info_of(fd, &info)) {
		if (fd >= 0)
			close(fd);
		return true;
	}
	close(fd);
	return info.key_size == sizeof(struct sluice_ban_key) &&
	       info.value_size == sizeof(struct sluice_pfx_ban);
}

static int lock_dir(const char *dir, struct upgrade *u)
{
	u->lock = pins_lock(dir);
	if (u->lock < 0)
		return runtime_err("cannot take the writers' lock of %s: %s", dir, strerror(errno));
	return 0;
}

int upgrade_plan(struct sluice_bpf *skel, const char *dir, const char *iface,
		 struct upgrade *u)
{
	struct bpf_map_info oi[SLUICE_MAPI_COUNT];
	char path[SLUICE_PATH_MAX];
	bool bans = true;
	int err = 0;

	upgrade_init(u);
	for (int i = 0; i < SLUICE_MAPI_COUNT; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, map_names[i]);
		u->old[i] = bpf_obj_get(path);
		if (u->old[i] < 0 || map_info_of(u->old[i], &oi[i])) {
			u->fate[i] = UPGRADE_NEW;
			continue;
		}
		old_btf(u, i, oi[i].btf_id);
		if (!same_map(&oi[i], u->old_btf[i], skel_map(skel, i), bpf_object__btf(skel->obj)))
			u->fate[i] = UPGRADE_REPLACED;
	}
	/* Pins of a version that kept keyed buckets in a map of their own
	 * (SLUICE_RETIRED_PIN): its slots' ctl words mean other things, so
	 * the per-source state starts fresh whatever its layout. */
	snprintf(path, sizeof(path), "%s/%s", dir, SLUICE_RETIRED_PIN);
	if (access(path, F_OK) == 0)
		for (int i = 0; i < SLUICE_MAPI_COUNT; i++)
			if (per_source(i) && u->fate[i] == UPGRADE_KEPT)
				u->fate[i] = UPGRADE_REPLACED;
	if (u->fate[SLUICE_MAPI_ban_trie] == UPGRADE_KEPT && !ban_trie_same(u, &bans))
		u->fate[SLUICE_MAPI_ban_trie] = UPGRADE_REPLACED;
	table_together(u);
	/* A policy re-committed flips the generation in the config: not in
	 * the one the old program still reads its old tables by. */
	if (u->fate[SLUICE_MAPI_policy_lpm] == UPGRADE_REPLACED ||
	    u->fate[SLUICE_MAPI_policy_table] == UPGRADE_REPLACED)
		u->fate[SLUICE_MAPI_config] = UPGRADE_REPLACED;
	for (int i = 0; i < SLUICE_MAPI_COUNT; i++)
		u->any |= u->fate[i] != UPGRADE_KEPT;
	if (!u->any)
		return 0;
	/* Made anew while it holds no trie: there is nothing to carry. */
	if (u->fate[SLUICE_MAPI_ban_trie] == UPGRADE_REPLACED && bans)
		return usage_err("the prefix ban table of %s changed its layout in this version: "
				 "save the bans ('sluice ban list'), detach, attach and 'ban load' "
				 "them", iface);
	/* From here until the new maps are pinned, no edit may go to the old. */
	err = lock_dir(dir, u);
	new_btf(skel, u);
	for (int i = 0; i < SLUICE_MAPI_COUNT && !err; i++)
		if (u->fate[i] != UPGRADE_KEPT)
			err = make_anew(skel_map(skel, i), u);
	return err;
}

/* The fd the new program will use for map i (the pin's, when kept). */
static int new_fd(struct sluice_bpf *skel, const struct upgrade *u, int i)
{
	return u->fate[i] == UPGRADE_KEPT ? u->old[i] : bpf_map__fd(skel_map(skel, i));
}

/* The policy in text t committed to the new maps. */
static int commit_text(struct sluice_maps *m, struct sluice_policy_text *t)
{
	struct policy *p;
	FILE *f;
	int err;

	f = fmemopen(t->text, t->len, "r");
	if (!f)
		return runtime_err("cannot read the saved policy: %s", strerror(errno));
	p = malloc(sizeof(*p));
	err = p ? policy_parse_stream(f, "the saved policy", p) : runtime_err("out of memory");
	if (!err)
		err = policy_commit(m, p);
	fclose(f);
	free(p);
	return err;
}

/* The policy the old version kept as text, committed to the new maps. */
static int recommit(struct sluice_maps *m, const char *iface)
{
	struct sluice_policy_text *t = calloc(1, sizeof(*t));
	__u32 zero = 0;
	int err;

	if (!t)
		return runtime_err("out of memory");
	if (bpf_map_lookup_elem(m->policy_text, &zero, t) || !t->len || t->len >= sizeof(t->text))
		err = usage_err("the running sluice on %s keeps no copy of its policy that this "
				"version can read: save it ('sluice policy show > FILE'), detach, "
				"attach and 'policy apply FILE'", iface);
	else
		err = commit_text(m, t);
	free(t);
	return err;
}

/* A struct sluice_maps of the maps the new program will use. */
static int new_maps(struct sluice_bpf *skel, const struct upgrade *u, const char *iface,
		    const char *dir, struct sluice_maps *m)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->iface, sizeof(m->iface), "%s", iface);
	snprintf(m->dir, sizeof(m->dir), "%s", dir);
	m->lock = -1;
	m->ncpus = libbpf_num_possible_cpus();
#define NEW_FD(name) m->name = dup(new_fd(skel, u, SLUICE_MAPI_##name));
	SLUICE_MAPS(NEW_FD)
#undef NEW_FD
	if (m->ncpus <= 0)
		return runtime_err("cannot count possible CPUs: is /sys mounted?");
	return 0;
}

/* Old map i into its new one, entry by entry, by the fields' names. */
static int carry(struct sluice_bpf *skel, const struct upgrade *u, int i, int ncpus)
{
	struct map_side o = { .fd = u->old[i], .btf = u->old_btf[i] };
	struct map_side n = { .fd = new_fd(skel, u, i), .btf = bpf_object__btf(skel->obj) };
	int err;

	if (map_info_of(o.fd, &o.info) || map_info_of(n.fd, &n.info))
		return runtime_err("cannot read map %s: %s", map_names[i], strerror(errno));
	err = btf_copy_map(&o, &n, ncpus);
	if (err)
		return runtime_err("cannot carry map %s over: %s", map_names[i], strerror(-err));
	return 0;
}

/*
 * The old policy table, both generations, into the new one before the
 * re-commit, by its fields' names, when both say what their fields are
 * (BTF). The re-commit then finds each rule's index, `since` and history
 * (prev_*) as the old version left them, as any commit finds the live
 * ones: a rule whose limit reads the same keeps its index and `since`, so
 * the per-source state bound to it keeps its meaning (tokens, debt, bans),
 * and the previous generation stays readable for sources whose rule
 * moved. Without BTF the new table starts empty, and every source re-binds
 * as after a change of its rule whose old limit is not known.
 */
static int carry_policy(struct sluice_bpf *skel, const struct upgrade *u, int ncpus)
{
	int i = SLUICE_MAPI_policy_table;
	struct bpf_map_info info;

	if (u->fate[i] != UPGRADE_REPLACED || !u->old_btf[i] || map_info_of(u->old[i], &info) ||
	    !info.btf_value_type_id || !bpf_map__btf_value_type_id(skel_map(skel, i)))
		return 0;
	return carry(skel, u, i, ncpus);
}

int upgrade_fill(struct sluice_bpf *skel, struct upgrade *u, const char *iface,
		 const char *dir)
{
	struct sluice_maps m;
	bool policy_fresh = false;
	int err = new_maps(skel, u, iface, dir, &m);

	for (int i = 0; i < SLUICE_MAPI_COUNT && !err; i++) {
		if (u->fate[i] == UPGRADE_KEPT)
			continue;
		u->sources_fresh |= per_source(i);
		policy_fresh |= from_policy(i);
		/* The fragment table: datagrams in flight, not carried (their
		 * later fragments are orphans, doc/caveats.md). */
		if (u->fate[i] == UPGRADE_NEW || per_source(i) || from_policy(i) ||
		    i == SLUICE_MAPI_meta || i == SLUICE_MAPI_ban_trie ||
		    i == SLUICE_MAPI_frag_l4)
			continue;	/* ban_trie: replaced only while empty */
		err = carry(skel, u, i, m.ncpus);
	}
	if (!err && policy_fresh)
		err = carry_policy(skel, u, m.ncpus);
	/* A table made anew gets its seed before the program can place a
	 * source in it (the config carried says it is set up). */
	if (!err && u->fate[SLUICE_MAPI_src_seed] != UPGRADE_KEPT) {
		int e = srctab_seed_new(m.src_seed);

		if (e)
			err = runtime_err("cannot seed the new source table: %s", strerror(-e));
	}
	if (!err)
		err = upgrade_ban_state(skel, u);
	/* Counters the config copied describe the old tables: a fresh source
	 * table is sized as the old one (attach sized it so), with a new seed. */
	if (!err && policy_fresh) {
		err = recommit(&m, iface);
		u->recommitted = !err;
	} else if (!err) {
		/* Made anew, or kept: either way written now, so that its first
		 * line names this version (SLUICE_POLICY_TEXT_BY). */
		err = policy_text_refresh(&m);
	}
	maps_close(&m);
	return err;
}

int upgrade_pin(struct sluice_bpf *skel, const struct upgrade *u, const char *dir)
{
	char path[SLUICE_PATH_MAX], next[SLUICE_PATH_MAX + 8];

	for (int i = 0; i < SLUICE_MAPI_COUNT; i++) {
		if (u->fate[i] == UPGRADE_KEPT)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, map_names[i]);
		snprintf(next, sizeof(next), "%s_next", path);	/* bpffs names have no dots */
		unlink(next);	/* left by an attach that died */
		if (bpf_obj_pin(bpf_map__fd(skel_map(skel, i)), next) || rename(next, path))
			return runtime_err("cannot pin map %s at %s: %s", map_names[i], path,
					   strerror(errno));
	}
	snprintf(path, sizeof(path), "%s/%s", dir, SLUICE_RETIRED_PIN);
	unlink(path);	/* an earlier version's map, none of this one's */
	return 0;
}

void upgrade_words(const struct upgrade *u, char *buf, size_t len)
{
	size_t used;

	snprintf(buf, len, ", upgraded in place: made anew");
	for (int i = 0; i < SLUICE_MAPI_COUNT; i++) {
		used = strlen(buf);
		if (u->fate[i] != UPGRADE_KEPT && used < len)
			snprintf(buf + used, len - used, " %s%s", map_names[i],
				 u->fate[i] == UPGRADE_NEW ? " (new)" : "");
	}
	used = strlen(buf);
	if (used < len)
		snprintf(buf + used, len - used, "; %s%s", u->recommitted ?
			 "the policy re-applied from its saved text, " : "the policy kept, ",
			 u->sources_fresh ? "per-source state started fresh" :
					    "per-source state kept");
}

void upgrade_done(struct upgrade *u)
{
	for (int i = 0; i < SLUICE_MAPI_COUNT; i++)
		if (u->old[i] >= 0)
			close(u->old[i]);
	if (u->lock >= 0)
		close(u->lock);
	for (int k = 0; k < UPGRADE_BTFS; k++)
		btf__free(u->btfs[k]);
	btf__free(u->new_btf);	/* closes btf_fd */
	upgrade_init(u);
}

void upgrade_init(struct upgrade *u)
{
	memset(u, 0, sizeof(*u));
	u->btf_fd = u->lock = -1;
	for (int i = 0; i < SLUICE_MAPI_COUNT; i++)
		u->old[i] = -1;
}
