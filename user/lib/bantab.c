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

/* The live trie's fd, -1 when the slot is empty, or -errno. */
static int live_trie(const struct sluice_maps *m)
{
	__u32 zero = 0, id;
	int fd;

	if (bpf_map_lookup_elem(m->ban_trie, &zero, &id))
		return errno == ENOENT ? -1 : -errno;
	fd = bpf_map_get_fd_by_id(id);
	return fd < 0 ? -errno : fd;
}

int bantab_open(const struct sluice_maps *m, struct bantab *t)
{
	struct sluice_config cfg;
	__u32 zero = 0;

	memset(t, 0, sizeof(*t));
	t->trie = -1;
	if (bpf_map_lookup_elem(m->config, &zero, &cfg))
		return -errno;
	t->capacity = cfg.ban_capacity ? cfg.ban_capacity : SLUICE_MAX_BANS_DEFAULT;
	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++)
		if (bpf_map_lookup_elem(m->ban_lists, &i, &t->lists[i]))
			return -errno;
	t->trie = live_trie(m);
	return t->trie < -1 ? t->trie : 0;
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

int bantab_lists_write(const struct sluice_maps *m, const struct bantab *t)
{
	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++)
		if (map_update(m->ban_lists, &i, &t->lists[i], BPF_ANY))
			return -errno;
	return 0;
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

	for (__u32 i = 0; i < SLUICE_BAN_LISTS; i++) {
		if (!(v->lists & (1ULL << i)) || v->kind > SLUICE_BAN_KIND_LOADED)
			continue;
		l = &t->lists[i];
		if (sign > 0) {
			l->entries[v->kind]++;
			if (v->until_ns && (!l->next_expiry || v->until_ns < l->next_expiry))
				l->next_expiry = v->until_ns;
		} else if (l->entries[v->kind]) {
			l->entries[v->kind]--;
		}
	}
}

__u32 bantab_first_list(__u64 lists)
{
	return lists ? (__u32)__builtin_ctzll(lists) : 0;
}

void bantab_key(const struct cidr *c, struct sluice_ban_key *k)
{
	memset(k, 0, sizeof(*k));
	k->family = cidr_family(c);
	k->prefixlen = SLUICE_BAN_KEY_FAMILY_BITS + c->prefixlen;
	memcpy(k->addr, c->addr.a, sizeof(k->addr));
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
		listed += t->lists[i].entries[SLUICE_BAN_KIND_ADDED] +
			  t->lists[i].entries[SLUICE_BAN_KIND_LOADED];
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
		if (!e[i].v.until_ns || e[i].v.until_ns > now) {
			bantab_tally(t, &e[i].v, 1);
			continue;
		}
		if (map_delete(t->trie, &e[i].key) && errno != ENOENT) {
			err = -errno;
			break;
		}
		sweep_log_add(sl, bantab_first_list(e[i].v.lists), &e[i].key);
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
