// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The prefix ban table: see bantab.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "bantab.h"
#include "clock.h"
#include "map_write.h"
#include "output.h"

int bantab_init(const struct sluice_maps *m, __u64 max_bans)
{
	struct sluice_config cfg;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->config, &zero, &cfg))
		return -errno;
	if (cfg.ban_capacity)
		return 0;	/* kept across attaches, with its bans */
	cfg.ban_capacity = (__u32)max_bans;
	/* Before the program runs: nothing else writes the config. */
	return map_update(m->config, &zero, &cfg, BPF_ANY) ? -errno : 0;
}

/* The live trie's fd into *fd, -1 when the slot is empty: 0 or -errno.
 * (One return value for both once read -EPERM, which is -1, as an empty
 * slot: a reader of the pins' group, who may not get a map by its id, was
 * told there were no prefix bans.) */
static int live_trie(const struct sluice_maps *m, int *fd)
{
	__u32 zero = 0, id;

	*fd = -1;
	if (bpf_map_lookup_elem(m->ban_trie, &zero, &id))
		return errno == ENOENT ? 0 : -errno;
	*fd = bpf_map_get_fd_by_id(id);
	return *fd < 0 ? -errno : 0;
}

/* Whether trie fd holds this version's keys and values (an attach of
 * another version may have made it). */
static bool trie_layout_ok(int fd)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return true;	/* unreadable: the writes will say */
	return info.key_size == sizeof(struct sluice_ban_key) &&
	       info.value_size == sizeof(struct sluice_pfx_ban);
}

int bantab_open(const struct sluice_maps *m, struct bantab *t)
{
	struct sluice_config cfg;
	__u32 zero = 0;
	int r;

	memset(t, 0, sizeof(*t));
	t->trie = -1;
	if (bpf_map_lookup_elem(m->config, &zero, &cfg))
		return -errno;
	t->capacity = cfg.ban_capacity ? cfg.ban_capacity : SLUICE_MAX_BANS_DEFAULT;
	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++)
		if (bpf_map_lookup_elem(m->ban_lists, &i, &t->lists[i]))
			return -errno;
	r = live_trie(m, &t->trie);
	if (r) {
		t->trie = -1;
		return r;
	}
	return t->trie >= 0 && !trie_layout_ok(t->trie) ? -ESTALE : 0;
}

void bantab_close(struct bantab *t)
{
	if (t->trie >= 0)
		close(t->trie);
	t->trie = -1;
}

int bantab_new_trie(const struct bantab *t)
{
	struct bpf_map_create_opts o = { .sz = sizeof(o), .map_flags = BPF_F_NO_PREALLOC };
	int fd = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "sluice_bans", sizeof(struct sluice_ban_key),
				sizeof(struct sluice_pfx_ban), t->capacity, &o);

	return fd < 0 ? -errno : fd;
}

int bantab_install(const struct sluice_maps *m, struct bantab *t, int fd)
{
	__u32 zero = 0;

	if (fd >= 0 ? map_update(m->ban_trie, &zero, &fd, BPF_ANY)
		    : map_delete(m->ban_trie, &zero) && errno != ENOENT)
		return -errno;
	if (t->trie >= 0 && t->trie != fd)
		close(t->trie);
	t->trie = fd;
	return 0;
}

/* A list's drop counters back to zero, for the next list of its index. */
static int drops_clear(const struct sluice_maps *m, __u32 i)
{
	size_t len = (size_t)(m->ncpus > 0 ? m->ncpus : 1) * sizeof(struct sluice_counter);
	void *zero = calloc(1, len);
	int err = 0;

	if (!zero)
		return -ENOMEM;
	if (map_update(m->ban_drops, &i, zero, BPF_ANY))
		err = -errno;
	free(zero);
	return err;
}

int bantab_lists_write(const struct sluice_maps *m, struct bantab *t)
{
	int err;

	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++) {
		/* A list whose last prefix went gives its name and index back. */
		if (t->lists[i].name[0] && !bantab_list_size(&t->lists[i])) {
			memset(&t->lists[i], 0, sizeof(t->lists[i]));
			if ((err = drops_clear(m, i)))
				return err;
		}
		if (map_update(m->ban_lists, &i, &t->lists[i], BPF_ANY))
			return -errno;
	}
	return 0;
}

__u64 bantab_list_size(const struct sluice_ban_list *l)
{
	return l->entries[SLUICE_BAN_KIND_ADDED] + l->entries[SLUICE_BAN_KIND_LOADED];
}

int bantab_read(int fd, struct ban_entry **out, size_t *n)
{
	struct sluice_ban_key key, next;
	struct ban_entry *e = NULL, *grown;
	size_t cap = 0, len = 0;
	void *prev = NULL;
	int err = 0;

	*out = NULL;
	*n = 0;
	if (fd < 0)
		return 0;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (len == cap) {
			cap = cap ? cap * 2 : 1024;
			grown = realloc(e, cap * sizeof(*e));
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			e = grown;
		}
		if (bpf_map_lookup_elem(fd, &key, &e[len].v))
			continue;	/* deleted meanwhile */
		e[len++].key = key;
	}
	if (!err && errno != ENOENT)
		err = -errno;
	if (err) {
		free(e);
		return err;
	}
	*out = e;
	*n = len;
	return 0;
}

bool bantab_empty(int fd)
{
	struct sluice_ban_key next;

	return fd < 0 || bpf_map_get_next_key(fd, NULL, &next) != 0;
}

bool bantab_list_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= SLUICE_BAN_LIST_NAME)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("._-", name[i]))
			return false;
	return true;
}

int bantab_list_find(const struct bantab *t, const char *name)
{
	for (int i = 0; i < (int)SLUICE_BAN_LISTS; i++)
		if (t->lists[i].name[0] && !strcmp(t->lists[i].name, name))
			return i;
	return -1;
}

int bantab_list_take(struct bantab *t, const char *name)
{
	int i = bantab_list_find(t, name);

	if (i >= 0)
		return i;
	for (i = 0; i < (int)SLUICE_BAN_LISTS; i++) {
		if (t->lists[i].name[0])
			continue;
		memset(&t->lists[i], 0, sizeof(t->lists[i]));
		snprintf(t->lists[i].name, sizeof(t->lists[i].name), "%s", name);
		return i;
	}
	return -ENOSPC;
}

void bantab_tally(struct bantab *t, const struct sluice_pfx_ban *v, int sign)
{
	struct sluice_ban_list *l;
	__u64 end;
	__u32 kind;

	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++) {
		if (!(v->lists & (1ULL << i)))
			continue;
		l = &t->lists[i];
		kind = v->loaded & (1ULL << i) ? SLUICE_BAN_KIND_LOADED : SLUICE_BAN_KIND_ADDED;
		end = bantab_end_of(v, (int)i);
		if (sign > 0) {
			l->entries[kind]++;
			if (end && (!l->next_expiry || end < l->next_expiry))
				l->next_expiry = end;
		} else if (l->entries[kind]) {
			l->entries[kind]--;
		}
	}
}

/* The index of list li's end in v->ends: the rank of its bit. */
static __u32 end_rank(__u64 lists, int li)
{
	return (__u32)__builtin_popcountll(lists & ((1ULL << li) - 1));
}

__u64 bantab_end_of(const struct sluice_pfx_ban *v, int li)
{
	__u32 r = end_rank(v->lists, li);

	return (v->lists & (1ULL << li)) && r < SLUICE_BAN_ENDS ? v->ends[r] : 0;
}

/* Whether end a lasts longer than b (0 is forever). */
static bool end_later(__u64 a, __u64 b)
{
	return b && (!a || a > b);
}

void bantab_settle(struct sluice_pfx_ban *v)
{
	bool first = true;
	__u32 r = 0;

	v->until_ns = 0;
	v->list = 0;
	for (__u32 i = 0; i < SLUICE_BAN_LISTS && r < SLUICE_BAN_ENDS; i++) {
		if (!(v->lists & (1ULL << i)))
			continue;
		if (first || end_later(v->ends[r], v->until_ns)) {
			v->until_ns = v->ends[r];
			v->list = i;
			first = false;
		}
		r++;
	}
}

int bantab_end_set(struct sluice_pfx_ban *v, int li, __u64 until, bool loaded)
{
	__u32 r = end_rank(v->lists, li), n = (__u32)__builtin_popcountll(v->lists);

	if (!(v->lists & (1ULL << li))) {
		if (n >= SLUICE_BAN_ENDS || r > n)
			return -EMLINK;
		memmove(&v->ends[r + 1], &v->ends[r], (n - r) * sizeof(v->ends[0]));
		v->lists |= 1ULL << li;
	}
	v->ends[r] = until;
	if (loaded)
		v->loaded |= 1ULL << li;
	else
		v->loaded &= ~(1ULL << li);
	bantab_settle(v);
	return 0;
}

void bantab_end_drop(struct sluice_pfx_ban *v, __u64 drop)
{
	for (int i = (int)SLUICE_BAN_LISTS - 1; i >= 0; i--) {
		__u32 r = end_rank(v->lists, i), n = (__u32)__builtin_popcountll(v->lists);

		if (!(drop & v->lists & (1ULL << i)) || r >= SLUICE_BAN_ENDS)
			continue;
		memmove(&v->ends[r], &v->ends[r + 1], (n - r - 1) * sizeof(v->ends[0]));
		v->ends[n - 1] = 0;
		v->lists &= ~(1ULL << i);
	}
	v->loaded &= v->lists;
	bantab_settle(v);
}

/* The lists of v whose own ban has ended by now. */
__u64 bantab_ended(const struct sluice_pfx_ban *v, __u64 now)
{
	__u64 ended = 0, end;

	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++) {
		if (!(v->lists & (1ULL << i)))
			continue;
		end = bantab_end_of(v, (int)i);
		if (end && end <= now)
			ended |= 1ULL << i;
	}
	return ended;
}

__u32 bantab_first_list(__u64 lists)
{
	return lists ? (__u32)__builtin_ctzll(lists) : 0;
}

void bantab_key(const struct cidr *c, struct sluice_ban_key *k)
{
	sluice_ban_key_make(k, cidr_family(c), c->addr.a, c->prefixlen);
}

void bantab_format(const struct sluice_ban_key *k, char *buf, size_t len)
{
	struct cidr c;

	memset(&c, 0, sizeof(c));
	memcpy(c.addr.a, k->addr, sizeof(c.addr.a));
	c.prefixlen = k->prefixlen - SLUICE_BAN_KEY_FAMILY_BITS;
	format_cidr(&c, buf, len);
}

void bantab_warn_full(const struct sluice_maps *m, const struct bantab *t)
{
	struct sluice_ban_key key, next;
	__u64 listed = 0, held = 0;
	void *prev = NULL;

	/* The lists' tallies count a prefix once per list: more than the
	 * trie holds, never less. Only near full is the trie walked. */
	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++)
		listed += bantab_list_size(&t->lists[i]);
	if (t->trie < 0 || !t->capacity ||
	    listed * 100 < (__u64)t->capacity * BANTAB_FULL_PCT)
		return;
	while (!bpf_map_get_next_key(t->trie, prev, &next)) {
		key = next;
		prev = &key;
		held++;
	}
	if (held * 100 >= (__u64)t->capacity * BANTAB_FULL_PCT)
		log_event(LOG_WARNING, "%s: the ban table is %llu%% full (%llu of %u prefixes): "
			  "a ban past it is refused; attach --max-bans N makes room", m->iface,
			  held * 100 / t->capacity, (unsigned long long)held, t->capacity);
}

/* Whether a list says one of its entries may have expired by now. */
static bool sweep_due(const struct bantab *t, __u64 now)
{
	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++)
		if (t->lists[i].next_expiry && t->lists[i].next_expiry <= now)
			return true;
	return false;
}

/*
 * The log of one sweep: up to SWEEP_LOG_EACH expired bans of a list get a
 * line each (a person's `ban add` ends one or a few at a time); a list with
 * more, a bulk expiry (a feed's or a `ban load`'s), gets one line with its
 * count and the first three of them. At most SWEEP_LOG_EACH lines per list
 * and sweep, however many bans expire.
 */
#define SWEEP_LOG_EACH		8
_Static_assert(SWEEP_LOG_EACH >= 3, "a bulk expiry's line shows three samples");

struct sweep_log {
	__u64 n[SLUICE_BAN_LISTS];
	char pfx[SLUICE_BAN_LISTS][SWEEP_LOG_EACH][SLUICE_CIDR_STR_MAX];
};

static void sweep_log_add(struct sweep_log *sl, __u32 list, const struct sluice_ban_key *k)
{
	list %= SLUICE_BAN_LISTS;
	if (sl->n[list] < SWEEP_LOG_EACH)
		bantab_format(k, sl->pfx[list][sl->n[list]], SLUICE_CIDR_STR_MAX);
	sl->n[list]++;
}

static void sweep_log_print(const struct sluice_maps *m, const struct bantab *t,
			    const struct sweep_log *sl, const char *who)
{
	for (__u32 l = 0; l < SLUICE_BAN_LISTS; l++) {
		const char (*p)[SLUICE_CIDR_STR_MAX] = sl->pfx[l];

		if (sl->n[l] > SWEEP_LOG_EACH) {
			log_event(LOG_NOTICE, "%s: %llu bans expired (list %s, by %s), e.g. %s, %s, "
				  "%s", m->iface, (unsigned long long)sl->n[l], t->lists[l].name,
				  who, p[0], p[1], p[2]);
			continue;
		}
		for (__u64 i = 0; i < sl->n[l]; i++)
			log_event(LOG_NOTICE, "%s: ban expired: %s (list %s, by %s)", m->iface,
				  p[i], t->lists[l].name, who);
	}
}

int bantab_sweep(const struct sluice_maps *m, struct bantab *t, const char *who)
{
	__u64 now = mono_now_ns();
	struct sweep_log *sl;
	struct ban_entry *e;
	size_t n;
	int err, gone = 0;

	if (t->trie < 0 || !sweep_due(t, now))
		return 0;
	sl = calloc(1, sizeof(*sl));
	if (!sl)
		return -ENOMEM;
	err = bantab_read(t->trie, &e, &n);
	if (err) {
		free(sl);
		return err;
	}
	/* The tallies are counted again from what stays. */
	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++) {
		memset(t->lists[i].entries, 0, sizeof(t->lists[i].entries));
		t->lists[i].next_expiry = 0;
	}
	for (size_t i = 0; i < n; i++) {
		__u64 ended = bantab_ended(&e[i].v, now);
		__u32 first = bantab_first_list(ended);

		if (ended) {
			/* Each list's ban ends by its own end; the prefix goes
			 * with the last of them. */
			bantab_end_drop(&e[i].v, ended);
			if (e[i].v.lists ? map_update(t->trie, &e[i].key, &e[i].v, BPF_EXIST)
					 : map_delete(t->trie, &e[i].key) && errno != ENOENT) {
				err = -errno;
				break;
			}
		}
		bantab_tally(t, &e[i].v, 1);
		if (!ended)
			continue;
		sweep_log_add(sl, first, &e[i].key);
		gone++;
	}
	free(e);
	sweep_log_print(m, t, sl, who);
	free(sl);
	if (!err && bantab_empty(t->trie))
		err = bantab_install(m, t, -1);
	if (!err)
		err = bantab_lists_write(m, t);
	return err ? err : gone;
}
