/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The Lua scripts the cluster agent loads into Redis (SCRIPT LOAD at
 * connect, EVALSHA at each sync). Redis runs a script atomically, so no
 * two hosts' grants interleave; their time is Redis's TIME, so host clocks
 * do not matter. */
#ifndef SLUICE_CLUSTER_LUA_H
#define SLUICE_CLUSTER_LUA_H

/*
 * One lease grant from the cluster-wide GCRA bucket of one (rule, source),
 * shared fairly between the hosts that ask for it.
 * KEYS[1] = sluice:{RULE|SOURCE}, the bucket's TAT in µs of Redis's clock;
 * KEYS[2] = the same name and ASKERS_SUFFIX (one hash slot with it): a hash
 * of the hosts that asked recently, NAME#ID -> "TIME DEMAND S" (when it
 * last asked, µs; its arrivals per second; its sync interval, µs), and the
 * field "level" (no NAME#ID: no host's) -> "TIME LEVEL N KEEP", the split
 * last worked out.
 * ARGV = T (µs per unit), tau (burst x T, µs), charge (units the host
 * admitted on its local share since it last reported), want (units asked
 * for the next sync), this host's NAME#ID, its S (µs), the most fields
 * the hash may hold (more: it is dropped and starts again).
 *
 * The charge is taken first, whatever it costs (a host cannot take back
 * what it admitted); then up to want units are granted out of what the
 * bucket holds, and no more than this host's fair part. The split: the
 * rate R = 1e6/T divided max-min between the demands of the N hosts that
 * asked within 3 of their S (a host that wants less than an even part
 * gets all it wants; the others share the rest evenly, up to LEVEL each).
 * It is worked out again (one pass over the hash, stale hosts dropped) at
 * most once per S, and at once when a host asks first or wants 0; between,
 * a grant reads two fields and writes one. A host may take LEVEL times
 * the time since it last asked (S on a first ask, 2 S at most), less its
 * charge, plus 1/N of what the bucket holds beyond one S of refill (the
 * burst). Alone, or while every demand fits (LEVEL -1), a host takes what
 * the bucket holds. Returns the grant. The bucket's key lives as long as
 * its TAT lies ahead (an idle bucket is a full one), the hash KEEP (3 S)
 * after its last ask; a host that wants 0 leaves the hash.
 */
#define ASKERS_SUFFIX	":hosts"
#define CLUSTER_LUA_GRANT						\
	"local t = redis.call('TIME')\n"				\
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"	\
	"local T = tonumber(ARGV[1])\n"					\
	"local tau = tonumber(ARGV[2])\n"				\
	"local charge = tonumber(ARGV[3])\n"				\
	"local want = tonumber(ARGV[4])\n"				\
	"local S = tonumber(ARGV[6])\n"					\
	"local A = KEYS[2]\n"						\
	"local tat = tonumber(redis.call('GET', KEYS[1])) or 0\n"	\
	"if tat < now then tat = now end\n"				\
	"tat = tat + charge * T\n"					\
	"local avail = math.max(math.floor((now + tau - tat) / T), 0)\n" \
	"if redis.call('HLEN', A) > tonumber(ARGV[7]) then redis.call('DEL', A) end\n" \
	"local last = tonumber(string.match(redis.call('HGET', A, ARGV[5]) or '', '^%d+'))\n" \
	"if want > 0 then\n"						\
	"  redis.call('HSET', A, ARGV[5], string.format('%.0f %.6g %.0f', now, want * 1e6 / S, S))\n" \
	"else\n"							\
	"  redis.call('HDEL', A, ARGV[5])\n"				\
	"end\n"								\
	"local at, level, n, keep = string.match(redis.call('HGET', A, 'level') or '',\n" \
	"                                        '^(%d+) (%S+) (%d+) (%d+)$')\n" \
	"at, level, n, keep = tonumber(at), tonumber(level), tonumber(n), tonumber(keep)\n" \
	"if not (at and level and n and keep) or not last or want == 0 or at > now or\n" \
	"   now - at >= S then\n"					\
	"  local rec, d, gone = redis.call('HGETALL', A), {}, {}\n"	\
	"  keep = 3 * S\n"						\
	"  for i = 1, #rec, 2 do\n"					\
	"    local a, dr, s = string.match(rec[i + 1], '^(%d+) (%S+) (%d+)$')\n" \
	"    a, dr, s = tonumber(a), tonumber(dr), tonumber(s)\n"	\
	"    if rec[i] == 'level' then\n"				\
	"    elseif a and dr and s and a <= now and now - a <= 3 * s then\n" \
	"      d[#d + 1] = dr\n"					\
	"      keep = math.max(keep, 3 * s)\n"				\
	"    else\n"							\
	"      gone[#gone + 1] = rec[i]\n"				\
	"    end\n"							\
	"  end\n"							\
	"  if #gone > 0 then redis.call('HDEL', A, unpack(gone)) end\n" \
	"  local left = 1e6 / T\n"					\
	"  level, n = -1, #d\n"						\
	"  table.sort(d)\n"						\
	"  for k = 1, n do\n"						\
	"    if d[k] > left / (n - k + 1) then\n"			\
	"      level = left / (n - k + 1)\n"				\
	"      break\n"							\
	"    end\n"							\
	"    left = left - d[k]\n"					\
	"  end\n"							\
	"  redis.call('HSET', A, 'level', string.format('%.0f %.6g %d %.0f', now, level, n, keep))\n" \
	"end\n"								\
	"redis.call('PEXPIRE', A, math.ceil(math.max(keep, 3 * S) / 1000))\n" \
	"local cap = avail\n"						\
	"if level >= 0 and n > 1 then\n"				\
	"  local dt = S\n"						\
	"  if last then dt = math.min(math.max(now - last, 0), 2 * S) end\n" \
	"  cap = math.floor(level * dt / 1e6 - charge + math.max(avail - S / T, 0) / n)\n" \
	"end\n"								\
	"local g = math.max(math.min(want, avail, cap), 0)\n"		\
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
