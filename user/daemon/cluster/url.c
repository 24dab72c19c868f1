// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* url: the parts of `cluster join`'s command line that name things: the
 * URL of the Redis server (redis://, rediss://, unix://, or sentinel://,
 * the sentinels that know it), and the node's name among the peers. */
#include <string.h>
#include <arpa/inet.h>
#include "core.h"
#include "redis.h"

#define REDIS_PORT_DEFAULT	6379
#define REDIS_DB_MAX		1000000ULL	/* Redis's `databases` is far smaller */

static const char url_form[] = "give redis://[USER@]HOST[:PORT][/DB], rediss://... (TLS), "
			       "unix://[USER@]/PATH[?db=DB] or "
			       "sentinel://[USER@]HOST:PORT[,HOST:PORT...]/MASTER[?db=DB]";

/* [USER@]: the ACL user, if any, into u->user; a password there refused
 * (the command line shows in ps). *p moves past it. 0, or a usage error. */
static int parse_user(const char *s, const char **p, struct redis_url *u)
{
	const char *at = strchr(*p, '@'), *colon;
	size_t n;

	if (!at)
		return 0;
	colon = memchr(*p, ':', (size_t)(at - *p));
	if (colon)
		return usage_err("bad Redis URL: it holds a password, which anyone can read in ps: "
				 "give the URL without it and the password in "
				 "--redis-password-file FILE or $%s", REDIS_PASSWORD_ENV);
	n = (size_t)(at - *p);
	if (!n || n >= sizeof(u->user))
		return usage_err("bad Redis URL '%s': the user before '@' must be 1 to %zu "
				 "characters: %s", s, sizeof(u->user) - 1, url_form);
	for (size_t i = 0; i < n; i++)
		if ((*p)[i] <= ' ' || (*p)[i] > '~' || strchr("/?#[]", (*p)[i]))
			return usage_err("bad Redis URL '%s': the user may hold no space, control "
					 "character or / ? # [ ]: %s", s, url_form);
	memcpy(u->user, *p, n);
	*p = at + 1;
	return 0;
}

/* DB as digits at p (after '/' or "?db="), to the end: 0, or a usage error. */
static int parse_db(const char *s, const char *p, struct redis_url *u)
{
	__u64 db;

	if (!parse_u64(p, 0, REDIS_DB_MAX, &db))
		return usage_err("bad Redis URL '%s': the database after the host is a number, "
				 "0 to %llu (nothing else may follow): %s", s, REDIS_DB_MAX, url_form);
	u->db = (int)db;
	return 0;
}

static int parse_unix(const char *s, const char *p, struct redis_url *u)
{
	const char *q;
	size_t n;
	int err;

	err = parse_user(s, &p, u);
	if (err)
		return err;
	if (*p != '/')
		return usage_err("bad Redis URL '%s': a socket's path is absolute: "
				 "unix:///run/redis/redis-server.sock", s);
	q = strstr(p, "?db=");
	n = q ? (size_t)(q - p) : strlen(p);
	if (n >= sizeof(u->path) || strpbrk(p, "?#") != q)
		return usage_err("bad Redis URL '%s': give unix://[USER@]/PATH[?db=DB]", s);
	memcpy(u->path, p, n);
	return q ? parse_db(s, q + 4, u) : 0;
}

/* HOST[:PORT] at h (an IPv6 address in brackets) into u's host, v6 and,
 * when given, port; *rest past it. 0, or a usage error. */
const char *host_port_parse(const char *h, struct redis_url *u, const char **rest, char *why,
			    size_t len)
{
	const char *end, *p;
	struct in6_addr a6;
	size_t n;
	__u64 port;

	*rest = h;
	if (*h == '[') {
		end = strchr(h, ']');
		if (!end)
			return "an IPv6 address ends with ']'";
		n = (size_t)(end - h - 1);
		memcpy(u->host, h + 1, n < sizeof(u->host) ? n : sizeof(u->host) - 1);
		if (inet_pton(AF_INET6, u->host, &a6) != 1) {
			snprintf(why, len, "'%s' is not an IPv6 address", u->host);
			return why;
		}
		p = end + 1;
		u->v6 = true;
	} else {
		if (strchr(strchr(h, ':') ? strchr(h, ':') + 1 : "", ':'))
			return "an IPv6 address goes in brackets";
		n = strcspn(h, ":/?#@[]");
		memcpy(u->host, h, n);
		if (!n)
			return "no host";
		for (size_t i = 0; i < n; i++)
			if (!((h[i] >= 'a' && h[i] <= 'z') || (h[i] >= 'A' && h[i] <= 'Z') ||
			      (h[i] >= '0' && h[i] <= '9') || h[i] == '.' || h[i] == '-') ||
			    h[0] == '-' || h[0] == '.') {
				snprintf(why, len, "'%s' is not a host name", u->host);
				return why;
			}
		p = h + n;
	}
	if (*p == ':') {
		char digits[8] = "";

		n = strspn(p + 1, "0123456789");
		if (n < sizeof(digits))
			memcpy(digits, p + 1, n);
		if (!parse_u64(digits, 1, 65535, &port) || (p[1 + n] && !strchr("/?#", p[1 + n])))
			return "the port must be 1 to 65535";
		u->port = (int)port;
		p += 1 + n;
	}
	*rest = p;
	return NULL;
}

static int parse_hostport(const char *s, const char *h, struct redis_url *u, const char **rest)
{
	char buf[REDIS_URL_IN_MAX + 64];
	const char *why = host_port_parse(h, u, rest, buf, sizeof(buf));

	if (!why)
		return 0;
	if (!strcmp(why, "an IPv6 address goes in brackets"))
		return usage_err("bad Redis URL '%s': %s: redis://[2001:db8::1]:6379", s, why);
	return usage_err("bad Redis URL '%s': %s: %s", s, why, url_form);
}

static int parse_host(const char *s, const char *h, struct redis_url *u)
{
	const char *p;
	int err;

	err = parse_user(s, &h, u);
	if (err)
		return err;
	u->port = REDIS_PORT_DEFAULT;
	err = parse_hostport(s, h, u, &p);
	if (err)
		return err;
	if (*p == '/')
		return parse_db(s, p + 1, u);
	if (*p)
		return usage_err("bad Redis URL '%s': only /DB may follow HOST:PORT (no path or "
				 "options): %s", s, url_form);
	return 0;
}

/* One sentinel's HOST:PORT, the n bytes at p (no comma), into u's list. */
static int parse_sentinel_addr(const char *s, const char *p, size_t n, struct redis_url *u)
{
	struct redis_url one = { 0 };
	char addr[REDIS_URL_IN_MAX];
	const char *rest;
	int err;

	if (u->nsentinels == REDIS_SENTINELS_MAX)
		return usage_err("bad Redis URL '%s': more than %d sentinels: give %d at most, "
				 "the others are asked by them", s, REDIS_SENTINELS_MAX,
				 REDIS_SENTINELS_MAX);
	memcpy(addr, p, n);
	addr[n] = '\0';
	err = parse_hostport(s, addr, &one, &rest);
	if (err)
		return err;
	if (*rest || !one.port)
		return usage_err("bad Redis URL '%s': each sentinel is HOST:PORT (its port, "
				 "26379 as a rule, must be given and be 1 to 65535): %s", s, url_form);
	memcpy(&u->sentinel[u->nsentinels].host, one.host, sizeof(one.host));
	u->sentinel[u->nsentinels].port = one.port;
	u->sentinel[u->nsentinels++].v6 = one.v6;
	return 0;
}

/* sentinel://[USER@]HOST:PORT[,HOST:PORT...]/MASTER[?db=DB]: the
 * sentinels, the master's name, the data node's user and database. */
static int parse_sentinel(const char *s, const char *p, struct redis_url *u)
{
	const char *q;
	size_t n;
	int err;

	err = parse_user(s, &p, u);
	for (n = strcspn(p, ",/"); !err; n = strcspn(p, ",/")) {
		err = parse_sentinel_addr(s, p, n, u);
		p += n;
		if (*p != ',')
			break;
		p++;
	}
	if (err)
		return err;
	q = strstr(p, "?db=");
	n = q ? (size_t)(q - p - 1) : strlen(p) - 1;
	if (*p != '/' || !n || n >= sizeof(u->master))
		return usage_err("bad Redis URL '%s': no master name: the sentinels' name of it, "
				 "after the last HOST:PORT and '/': %s", s, url_form);
	memcpy(u->master, p + 1, n);
	if (!node_name_ok(u->master))
		return usage_err("bad Redis URL '%s': the master name '%s' must be 1 to %u of A-Z "
				 "a-z 0-9 . _ - (only ?db=DB may follow it): %s", s, u->master,
				 SLUICE_CLUSTER_NAME_MAX - 1, url_form);
	return q ? parse_db(s, q + 4, u) : 0;
}

/* sentinel://USER@HOST:PORT,.../MASTER?db=DB into u->text (user: "USER@"
 * or ""). It fits: no longer than the URL given, which had every port. */
static void sentinel_url_text(struct redis_url *u, const char *user)
{
	size_t off = (size_t)snprintf(u->text, sizeof(u->text), "sentinel://%s", user);

	for (int i = 0; i < u->nsentinels && off < sizeof(u->text); i++) {
		const struct redis_sentinel *a = &u->sentinel[i];

		off += (size_t)snprintf(u->text + off, sizeof(u->text) - off, "%s%s%s%s:%d",
					i ? "," : "", a->v6 ? "[" : "", a->host, a->v6 ? "]" : "",
					a->port);
	}
	if (off < sizeof(u->text))
		off += (size_t)snprintf(u->text + off, sizeof(u->text) - off, "/%s", u->master);
	if (u->db && off < sizeof(u->text))
		snprintf(u->text + off, sizeof(u->text) - off, "?db=%d", u->db);
}

/* The URL as status and every log line show it: never a password (the
 * agent has none from the URL), the user and the database when given. */
static void url_text(struct redis_url *u)
{
	char user[sizeof(u->user) + 1] = "", db[24] = "";

	if (u->user[0])
		snprintf(user, sizeof(user), "%s@", u->user);
	if (u->kind == REDIS_UNIX) {
		if (u->db)
			snprintf(db, sizeof(db), "?db=%d", u->db);
		snprintf(u->text, sizeof(u->text), "unix://%s%s%s", user, u->path, db);
		return;
	}
	if (u->kind == REDIS_SENTINEL) {
		sentinel_url_text(u, user);
		return;
	}
	if (u->db)
		snprintf(db, sizeof(db), "/%d", u->db);
	snprintf(u->text, sizeof(u->text), "%s://%s%s%s%s:%d%s",
		 u->kind == REDIS_TLS ? "rediss" : "redis", user, u->v6 ? "[" : "", u->host,
		 u->v6 ? "]" : "", u->port, db);
}

int parse_url(const char *s, struct redis_url *u)
{
	int err;

	memset(u, 0, sizeof(*u));
	if (strlen(s) >= REDIS_URL_IN_MAX)
		return usage_err("bad Redis URL: longer than %u characters: %s", REDIS_URL_IN_MAX - 1,
				 url_form);
	if (!strncmp(s, "redis://", 8)) {
		u->kind = REDIS_TCP;
		err = parse_host(s, s + 8, u);
	} else if (!strncmp(s, "rediss://", 9)) {
		u->kind = REDIS_TLS;
		err = parse_host(s, s + 9, u);
	} else if (!strncmp(s, "unix://", 7)) {
		u->kind = REDIS_UNIX;
		err = parse_unix(s, s + 7, u);
	} else if (!strncmp(s, "sentinel://", 11)) {
		u->kind = REDIS_SENTINEL;
		err = parse_sentinel(s, s + 11, u);
	} else {
		return usage_err("bad Redis URL: it starts with none of redis://, rediss://, "
				 "unix:// and sentinel://: %s", url_form);
	}
	if (!err)
		url_text(u);
	return err;
}

/* 1 to 63 of [A-Za-z0-9._-]. */
bool node_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= SLUICE_CLUSTER_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}
