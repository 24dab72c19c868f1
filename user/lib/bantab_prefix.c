// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Prefix bans, one at a time: the words that name one (ADDR[/LEN] and
 * --for), its exact entry in a trie, and the write that puts it into a
 * list (bantab.h). ban add, ban load and ban del are made of these. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <bpf/bpf.h>
#include "bantab.h"
#include "clock.h"
#include "map_write.h"
#include "output.h"
#include "rule.h"

int prefix_exact(int fd, const struct sluice_ban_key *k, struct sluice_pfx_ban *v)
{
	struct sluice_ban_key first, next;

	if (fd < 0)
		return 0;
	/* A lookup answers with the longest prefix covering k, which need not
	 * be k. The trie's get_next_key tells them apart without a write: for
	 * a key that is no entry it answers the first key (as for none), for
	 * an entry the one after it, or ENOENT after the last. */
	if (bpf_map_get_next_key(fd, NULL, &first))
		return errno == ENOENT ? 0 : -errno;
	if (bpf_map_get_next_key(fd, k, &next)) {
		if (errno != ENOENT)
			return -errno;
	} else if (!memcmp(&next, &first, sizeof(next))) {
		return 0;
	}
	return bpf_map_lookup_elem(fd, k, v) ? -errno : 1;
}

int prefix_list_take(struct bantab *t, const char *name)
{
	int li = bantab_list_take(t, name);

	if (li < 0)
		runtime_err("no room for list '%s': %u lists hold prefixes (ban list shows them; a list is freed when its last prefix goes)",
			    name, SLUICE_BAN_LISTS);
	return li;
}

int parse_ban_for(const char *opt, const char *s, __u64 *until_ns, char *why, size_t len)
{
	__u64 ns;

	if (rule_parse_duration(opt, s, SLUICE_BAN_FOR_NS_MIN, SLUICE_BAN_FOR_NS_MAX, &ns, why,
				len))
		return -1;
	*until_ns = mono_now_ns() + ns;
	return 0;
}

int prefix_put(struct bantab *t, int fd, const struct sluice_ban_key *k, int li, __u64 until,
	       __u32 kind)
{
	bool loaded = kind == SLUICE_BAN_KIND_LOADED;
	struct sluice_pfx_ban v;
	int r;

	memset(&v, 0, sizeof(v));
	v.prefixlen = k->prefixlen;
	bantab_end_set(&v, li, until, loaded);
	if (!map_update(fd, k, &v, BPF_NOEXIST)) {
		bantab_tally(t, &v, 1);
		return 0;
	}
	if (errno != EEXIST)
		return errno == E2BIG ? -ENOSPC : -errno;
	if (bpf_map_lookup_elem(fd, k, &v))
		return -errno;
	/* Only this list's end changes: each list keeps its own. */
	bantab_tally(t, &v, -1);
	v.prefixlen = k->prefixlen;
	r = bantab_end_set(&v, li, until, loaded);
	if (!r && map_update(fd, k, &v, BPF_EXIST))
		r = -errno;
	bantab_tally(t, &v, 1);
	return r;
}

bool prefix_everything(const struct cidr *c)
{
	/* A prefix is kept in the 128-bit form: IPv4's /0 is /96. */
	return c->prefixlen == (cidr_family(c) == SLUICE_FAMILY_V4 ? SLUICE_V4_MAPPED_PREFIX : 0);
}

int prefix_everything_err(const struct cidr *c, const char *where)
{
	char pfx[SLUICE_CIDR_STR_MAX];

	format_cidr(c, pfx, sizeof(pfx));
	return usage_err("%s%s bans every %s source, this host's own operators included: add --force if that is meant",
			 where, pfx, cidr_family(c) == SLUICE_FAMILY_V4 ? "IPv4" : "IPv6");
}

int parse_ban_prefix(const char *s, struct cidr *c, char *why, size_t len)
{
	static const char mapped[] = "::ffff:";
	char v4[SLUICE_CIDR_STR_MAX];
	const char *slash;
	unsigned long plen;
	char *end;

	if (strncasecmp(s, mapped, sizeof(mapped) - 1) != 0 || !strchr(s, '.'))
		return parse_cidr(s, c, why, len) ? -1 : 0;
	/* ::ffff:a.b.c.d[/96+n] is a.b.c.d[/n]. */
	slash = strchr(s, '/');
	if (!slash) {
		snprintf(v4, sizeof(v4), "%s", s + sizeof(mapped) - 1);
	} else {
		errno = 0;
		plen = strtoul(slash + 1, &end, 10);
		if (errno || *end || end == slash + 1 || plen < SLUICE_V4_MAPPED_PREFIX ||
		    plen > SLUICE_KEY_LEN_SOURCE) {
			snprintf(why, len, "'%s': an IPv4-mapped prefix is /96 to /128", s);
			return -1;
		}
		snprintf(v4, sizeof(v4), "%.*s/%lu", (int)(slash - s - (sizeof(mapped) - 1)),
			 s + sizeof(mapped) - 1, plen - SLUICE_V4_MAPPED_PREFIX);
	}
	return parse_cidr(v4, c, why, len) ? -1 : 0;
}
