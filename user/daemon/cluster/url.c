// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* url: the parts of `cluster join`'s command line that name things: the
 * redis:// URL of the Redis server, and the node's name among the peers. */
#include <string.h>
#include <arpa/inet.h>
#include "sluice.h"
#include "redis.h"

#define REDIS_PORT_DEFAULT	6379

/* redis://HOST[:PORT], HOST a name, an IPv4 address or [an IPv6 one]:
 * 0, or a usage error printed. */
int parse_url(const char *s, struct redis_url *u)
{
	static const char form[] = "give redis://HOST[:PORT], e.g. redis://127.0.0.1:6379";
	const char *h, *end, *p;
	struct in6_addr a6;
	size_t n;
	__u64 port = REDIS_PORT_DEFAULT;
	bool v6 = false;

	memset(u, 0, sizeof(*u));
	if (strlen(s) >= REDIS_URL_IN_MAX)
		return usage_err("bad Redis URL: longer than %u characters: %s", REDIS_URL_IN_MAX - 1,
				 form);
	if (!strncmp(s, "rediss://", 9) || !strncmp(s, "unix://", 7))
		return usage_err("bad Redis URL '%s': only plain TCP is supported: %s", s, form);
	if (strncmp(s, "redis://", 8) != 0)
		return usage_err("bad Redis URL '%s': %s", s, form);
	h = s + 8;
	if (strchr(h, '@'))
		return usage_err("bad Redis URL '%s': the agent has no AUTH (user or password): %s",
				 s, form);
	if (*h == '[') {
		end = strchr(h, ']');
		if (!end)
			return usage_err("bad Redis URL '%s': an IPv6 address ends with ']': %s", s, form);
		n = (size_t)(end - h - 1);
		memcpy(u->host, h + 1, n < sizeof(u->host) ? n : sizeof(u->host) - 1);
		if (inet_pton(AF_INET6, u->host, &a6) != 1)
			return usage_err("bad Redis URL '%s': '%s' is not an IPv6 address: %s", s,
					 u->host, form);
		p = end + 1;
		v6 = true;
	} else {
		if (strchr(strchr(h, ':') ? strchr(h, ':') + 1 : "", ':'))
			return usage_err("bad Redis URL '%s': an IPv6 address goes in brackets: "
					 "redis://[2001:db8::1]:6379", s);
		n = strcspn(h, ":/?#@[]");
		memcpy(u->host, h, n);
		for (size_t i = 0; i < n; i++)
			if (!((h[i] >= 'a' && h[i] <= 'z') || (h[i] >= 'A' && h[i] <= 'Z') ||
			      (h[i] >= '0' && h[i] <= '9') || h[i] == '.' || h[i] == '-'))
				return usage_err("bad Redis URL '%s': '%s' is not a host name: %s", s,
						 u->host, form);
		if (!n)
			return usage_err("bad Redis URL '%s': no host: %s", s, form);
		if (h[0] == '-' || h[0] == '.')
			return usage_err("bad Redis URL '%s': '%s' is not a host name: %s", s,
					 u->host, form);
		p = h + n;
	}
	if (*p == ':') {
		char digits[8] = "";

		n = strspn(p + 1, "0123456789");
		if (n < sizeof(digits))
			memcpy(digits, p + 1, n);
		if (!parse_u64(digits, 1, 65535, &port) || (p[1 + n] && !strchr("/?#", p[1 + n])))
			return usage_err("bad Redis URL '%s': the port must be 1 to 65535: %s", s,
					 form);
		p += 1 + n;
	}
	if (*p)
		return usage_err("bad Redis URL '%s': nothing may follow HOST:PORT (no path, "
				 "database or options): %s", s, form);
	u->port = (int)port;
	snprintf(u->text, sizeof(u->text), "redis://%s%s%s:%d", v6 ? "[" : "", u->host,
		 v6 ? "]" : "", u->port);
	return 0;
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
