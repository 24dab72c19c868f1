/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The Lua scripts the cluster agent loads into Redis (SCRIPT LOAD at
 * connect, EVALSHA at each sync). Redis runs a script atomically, so no
 * two hosts' grants interleave; their time is Redis's TIME, so host clocks
 * do not matter. */
#ifndef SLUICE_CLUSTER_LUA_H
#define SLUICE_CLUSTER_LUA_H

/*
 * One lease grant from the cluster-wide GCRA bucket of one (rule, source).
 * KEYS[1] = sluice:{RULE|SOURCE}, the bucket's TAT in µs of Redis's clock.
 * ARGV = T (µs per unit), tau (burst x T, µs), charge (units the host
 * admitted on its local share since it last reported), want (units asked
 * for the next sync). The charge is taken first, whatever it costs (a
 * host cannot take back what it admitted); then up to want units are
 * granted out of what the bucket holds. Returns the grant. The key lives
 * as long as its TAT lies ahead: an idle bucket is a full one.
 */
#define CLUSTER_LUA_GRANT						\
	"local t = redis.call('TIME')\n"				\
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"	\
	"local T = tonumber(ARGV[1])\n"					\
	"local tau = tonumber(ARGV[2])\n"				\
	"local charge = tonumber(ARGV[3])\n"				\
	"local want = tonumber(ARGV[4])\n"				\
	"local tat = tonumber(redis.call('GET', KEYS[1])) or 0\n"	\
	"if tat < now then tat = now end\n"				\
	"tat = tat + charge * T\n"					\
	"local avail = math.floor((now + tau - tat) / T)\n"		\
	"local g = math.min(want, math.max(avail, 0))\n"		\
	"tat = tat + g * T\n"						\
	"redis.call('SET', KEYS[1], string.format('%.17g', tat), 'PX',\n" \
	"           math.max(1, math.ceil((tat - now) / 1000)))\n"	\
	"return g\n"

/*
 * The heartbeat: KEYS[1] = sluice:{nodes}, a sorted set of peers, each
 * NAME#ID (the node's name, its agent's random instance id), scored by the
 * last time (ms) each was seen. ARGV = this peer, ttl_ms, limit. Adds this
 * peer, forgets peers not seen for ttl_ms and any scored in the future (no
 * agent wrote that: every heartbeat's time is Redis's TIME), and returns
 * up to limit peers alive with their times (member, time, ...). The agent
 * counts N from them (peers.c), never from their number alone.
 */
#define CLUSTER_LUA_HEARTBEAT						\
	"local t = redis.call('TIME')\n"				\
	"local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n" \
	"local ttl = tonumber(ARGV[2])\n"				\
	"redis.call('ZADD', KEYS[1], now, ARGV[1])\n"			\
	"redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - ttl)\n"	\
	"redis.call('ZREMRANGEBYSCORE', KEYS[1], string.format('(%.0f', now), '+inf')\n" \
	"redis.call('PEXPIRE', KEYS[1], 2 * ttl)\n"			\
	"return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '+inf', 'WITHSCORES',\n" \
	"                  'LIMIT', 0, tonumber(ARGV[3]))\n"

#endif /* SLUICE_CLUSTER_LUA_H */
