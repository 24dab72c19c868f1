// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Strict parsers for addresses, CIDRs and numbers, shared by the CLI and
 * policy files so both reject exactly the same input. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include "parse.h"
#include "output.h"

static const __u8 v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

bool addr_is_v4(const struct sluice_addr *a)
{
	return memcmp(a->a, v4_mapped, sizeof(v4_mapped)) == 0;
}

/* IPv6 CIDRs inside ::ffff:0:0/96 are refused at parse time, so this is
 * unambiguous. */
__u8 cidr_family(const struct cidr *c)
{
	return addr_is_v4(&c->addr) && c->prefixlen >= SLUICE_V4_MAPPED_PREFIX ?
	       SLUICE_FAMILY_V4 : SLUICE_FAMILY_V6;
}

bool parse_u64(const char *s, __u64 min, __u64 max, __u64 *out)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

int validate_ifname(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len >= IF_NAMESIZE || !strcmp(name, ".") || !strcmp(name, "..") ||
	    strpbrk(name, "/: \t\n"))
		return usage_err("'%s' is not an interface name: check the name with 'ip link'",
				 name);
	return 0;
}

const char *parse_addr(const char *s, struct sluice_addr *out)
{
	struct in_addr v4;

	memset(out, 0, sizeof(*out));
	if (strchr(s, ':')) {
		if (inet_pton(AF_INET6, s, out->a) != 1)
			return "not an IPv6 address";
		if (addr_is_v4(out))
			return "an IPv4-mapped IPv6 address: write the IPv4 address instead";
		return NULL;
	}
	if (inet_pton(AF_INET, s, &v4) != 1)
		return "not an IPv4 or IPv6 address";
	memcpy(out->a, v4_mapped, sizeof(v4_mapped));
	memcpy(&out->a[12], &v4, sizeof(v4));
	return NULL;
}

const char *parse_source(const char *s, struct sluice_src_key *out)
{
	struct sluice_addr a;
	const char *e;

	memset(out, 0, sizeof(*out));
	out->key_len = SLUICE_KEY_LEN_SOURCE;	/* the source's home bucket */
	out->policy = SLUICE_KEY_HOME;
	if (strchr(s, ':')) {
		if (inet_pton(AF_INET6, s, out->a) != 1)
			return "not an IPv6 address";
		/* ::ffff:a.b.c.d is how a dual-stack socket (nginx listen [::]:80
		 * ipv6only=off, HAProxy v4v6) names IPv4 client a.b.c.d: it is
		 * that IPv4 source, with its buckets and bans. Only the datapath
		 * sees IPv6 packets from such an address, and judges them as IPv6. */
		out->family = memcmp(out->a, v4_mapped, sizeof(v4_mapped)) ? SLUICE_FAMILY_V6
									     : SLUICE_FAMILY_V4;
		return NULL;
	}
	e = parse_addr(s, &a);
	memcpy(out->a, a.a, sizeof(out->a));
	out->family = SLUICE_FAMILY_V4;
	return e;
}

/* k's address into a, in its family's terms; its key length in them. */
static __u32 source_text(const struct sluice_src_key *k, char a[INET6_ADDRSTRLEN])
{
	__u32 klen = k->key_len;

	if (k->family == SLUICE_FAMILY_V4) {
		inet_ntop(AF_INET, &k->a[12], a, INET6_ADDRSTRLEN);
		return klen > SLUICE_V4_MAPPED_PREFIX ? klen - SLUICE_V4_MAPPED_PREFIX : 0;
	}
	inet_ntop(AF_INET6, k->a, a, INET6_ADDRSTRLEN);
	return klen;
}

void format_source_prefix(const struct sluice_src_key *k, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	__u32 klen = source_text(k, a);

	snprintf(buf, len, "%s/%u", a, klen);
}

void format_source(const struct sluice_src_key *k, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	__u32 bits = k->family == SLUICE_FAMILY_V4 ? 32 : 128;
	__u32 klen = source_text(k, a);

	/* A home bucket, or a keyed one per address. */
	if (k->policy == SLUICE_KEY_HOME || klen >= bits)
		snprintf(buf, len, "%s", a);
	else
		snprintf(buf, len, "%s/%u", a, klen);
}

static void clear_host_bits(struct sluice_addr *a, __u32 plen);

void source_key_mask(const struct sluice_src_key *src, __u32 key_len, __u16 idx,
		     struct sluice_src_key *out)
{
	struct sluice_addr a;

	memcpy(a.a, src->a, sizeof(a.a));
	clear_host_bits(&a, key_len);
	*out = *src;
	memcpy(out->a, a.a, sizeof(out->a));
	out->key_len = (__u8)key_len;
	out->policy = idx;
}

static bool host_bits_clear(const struct sluice_addr *a, __u32 plen)
{
	for (__u32 bit = plen; bit < 8 * SLUICE_ADDR_LEN; bit++)
		if (a->a[bit / 8] & (0x80 >> (bit % 8)))
			return false;
	return true;
}

static void clear_host_bits(struct sluice_addr *a, __u32 plen)
{
	for (__u32 bit = plen; bit < 8 * SLUICE_ADDR_LEN; bit++)
		a->a[bit / 8] &= (__u8)~(0x80 >> (bit % 8));
}

const char *parse_cidr(const char *s, struct cidr *out, char *why, size_t len)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash, *e;
	__u64 plen, maxlen;
	bool v4;

	if (strlen(s) >= sizeof(buf)) {
		snprintf(why, len, "'%.40s...' is not a CIDR", s);
		return why;
	}
	memcpy(buf, s, strlen(s) + 1);
	slash = strchr(s, '/');
	if (slash)
		buf[slash - s] = '\0';
	e = parse_addr(buf, &out->addr);
	if (e) {
		snprintf(why, len, "'%s' is not a CIDR: %s", s, e);
		return why;
	}
	v4 = addr_is_v4(&out->addr);
	maxlen = v4 ? 32 : 128;
	plen = maxlen;
	if (slash && !parse_u64(slash + 1, 0, maxlen, &plen)) {
		snprintf(why, len, "'%s' is not a CIDR: prefix length must be 0..%llu",
			 s, (unsigned long long)maxlen);
		return why;
	}
	out->prefixlen = (__u32)plen + (v4 ? SLUICE_V4_MAPPED_PREFIX : 0);
	if (!host_bits_clear(&out->addr, out->prefixlen)) {
		struct cidr fixed = *out;
		char good[INET6_ADDRSTRLEN + 8];

		clear_host_bits(&fixed.addr, fixed.prefixlen);
		format_cidr(&fixed, good, sizeof(good));
		snprintf(why, len, "'%s' has host bits set: use %s", s, good);
		return why;
	}
	return NULL;
}

void format_addr(const struct sluice_addr *a, char *buf, size_t len)
{
	if (addr_is_v4(a))
		inet_ntop(AF_INET, &a->a[12], buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, a->a, buf, (socklen_t)len);
}

void format_cidr(const struct cidr *c, char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	bool v4 = addr_is_v4(&c->addr) && c->prefixlen >= SLUICE_V4_MAPPED_PREFIX;

	if (v4)
		inet_ntop(AF_INET, &c->addr.a[12], a, sizeof(a));
	else
		inet_ntop(AF_INET6, c->addr.a, a, sizeof(a));
	snprintf(buf, len, "%s/%u", a,
		 v4 ? c->prefixlen - SLUICE_V4_MAPPED_PREFIX : c->prefixlen);
}
