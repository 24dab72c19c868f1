// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* peers: N, the hosts the shares divide by, as this agent has seen them
 * beat. Redis only keeps the heartbeats: a count it reports, or a member of
 * sluice:{nodes} that is not an agent's (NAME#ID), a future time, a member
 * written once and never again, is not a peer. A peer counts once this
 * agent has seen its heartbeat move on (two heartbeats within the window),
 * and stays counted while Redis lists it or its heartbeat moved on within
 * the window (a deleted key hides no peer at once), while Redis's answer
 * is cut at PEERS_ANSWER_MAX (members crowding it hide none), and at the
 * first answer after failed syncs (no peer could beat meanwhile). N
 * counts this agent too and is at most SLUICE_CLUSTER_HOSTS_MAX. */
#include <stdlib.h>
#include <string.h>
#include <hiredis/hiredis.h>
#include "core.h"
#include "agent.h"

#define PEER_ID_LEN	16	/* hex digits of the instance id */

void cluster_name_show(const char *in, size_t in_len, char *out, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (!len)
		return;
	for (size_t i = 0; i < in_len && in[i]; i++) {
		unsigned char c = (unsigned char)in[i];
		bool plain = c >= 0x20 && c < 0x7f && c != '\\';

		if (o + (plain ? 1 : 4) >= len)
			break;
		if (plain) {
			out[o++] = (char)c;
			continue;
		}
		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[c >> 4];
		out[o++] = hex[c & 0xf];
	}
	out[o] = '\0';
}

/* Whether s (len bytes) is an agent's member, NAME#ID: NAME as `--node`
 * takes it, ID 16 hex digits. */
static bool member_ok(const char *s, size_t len)
{
	char name[SLUICE_CLUSTER_NAME_MAX];
	size_t nlen;

	if (len <= PEER_ID_LEN + 1 || len >= PEER_MEMBER_MAX)
		return false;
	nlen = len - PEER_ID_LEN - 1;
	if (s[nlen] != PEER_ID_SEP || nlen >= sizeof(name))
		return false;
	for (size_t i = nlen + 1; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	memcpy(name, s, nlen);
	name[nlen] = '\0';
	return node_name_ok(name);
}

/* One live member of the heartbeat's answer, at score (Redis's ms). */
static void peer_seen(struct agent *ag, const char *m, size_t len, const char *score, __u64 now)
{
	struct peer_seen *p = NULL;

	for (__u32 i = 0; i < ag->nseen && !p; i++)
		if (!strncmp(ag->seen[i].member, m, len) && !ag->seen[i].member[len])
			p = &ag->seen[i];
	if (!p) {
		if (ag->nseen == SLUICE_CLUSTER_HOSTS_MAX)
			return;	/* N is at its cap already */
		p = &ag->seen[ag->nseen++];
		memset(p, 0, sizeof(*p));
		memcpy(p->member, m, len);
		p->member[len] = '\0';
		p->seen_ns = now;
	}
	p->listed = true;
	if (strcmp(p->score, score) != 0) {
		snprintf(p->score, sizeof(p->score), "%s", score);
		p->beats += p->beats < 2;
		p->seen_ns = now;
	}
}

/* A member that is no agent's, said once until there is none. */
static void say_odd(struct agent *ag, const redisReply *first, unsigned int odd)
{
	char shown[4 * PEER_MEMBER_MAX];

	if (!odd || ag->odd_said) {
		ag->odd_said = odd;
		return;
	}
	ag->odd_said = true;
	cluster_name_show(first->str, first->len, shown, sizeof(shown));
	log_event(LOG_WARNING, "cluster: %s: %u member%s of %s %s not an agent's (NAME#ID), "
		  "e.g. '%s': not counted as peers", ag->m.iface, odd, odd == 1 ? "" : "s",
		  redis_nodes_key(&ag->r), odd == 1 ? "is" : "are", shown);
}

/* The peers counted: this agent, then those seen beating twice; their
 * names into the state. Those gone are forgotten unless keep (the answer
 * was cut, or came after a gap). */
static __u32 peers_count(struct agent *ag, __u64 now, bool keep)
{
	struct sluice_cluster_state *s = &ag->st;
	__u32 n = 1, kept = 0;

	s->npeers = 1;
	snprintf(s->peer[0], sizeof(s->peer[0]), "%s", s->node);
	for (__u32 i = 0; i < ag->nseen; i++) {
		struct peer_seen *p = &ag->seen[i];
		const char *id;
		size_t len;

		if (!keep && !p->listed && now - p->seen_ns > ag->ttl_ms * 1000000ULL)
			continue;	/* not listed, not moved on for the window: gone */
		p->listed = false;
		ag->seen[kept++] = *p;
		if (p->beats < 2 || n == SLUICE_CLUSTER_HOSTS_MAX)
			continue;
		n++;
		if (s->npeers == SLUICE_CLUSTER_PEERS_MAX)
			continue;
		/* Shown by name: the instance id only tells peers apart. */
		id = strrchr(p->member, PEER_ID_SEP);
		len = id ? (size_t)(id - p->member) : strlen(p->member);
		if (len >= sizeof(s->peer[0]))
			len = sizeof(s->peer[0]) - 1;
		memcpy(s->peer[s->npeers], p->member, len);
		s->peer[s->npeers++][len] = '\0';
	}
	ag->nseen = kept;
	return n;
}

int beat_reply(struct agent *ag, __u64 deadline, __u32 *npeers)
{
	redisReply *rep;
	int ret = redis_script_reply(&ag->r, deadline, &rep);

	if (ret)
		return ret;
	if (!take_peers(ag, rep, npeers))
		return reply_refused(&ag->r, "the heartbeat", rep);
	freeReplyObject(rep);
	return 0;
}

bool take_peers(struct agent *ag, const redisReply *rep, __u32 *npeers)
{
	size_t own = strlen(ag->member);
	const redisReply *first_odd = NULL;
	unsigned int odd = 0;
	__u64 now = mono_now_ns();
	bool gap;

	if (rep->type != REDIS_REPLY_ARRAY || rep->elements % 2)
		return false;
	for (size_t i = 0; i < rep->elements; i += 2) {
		const redisReply *m = rep->element[i], *sc = rep->element[i + 1];

		if (m->type != REDIS_REPLY_STRING || sc->type != REDIS_REPLY_STRING ||
		    sc->len >= sizeof(ag->seen[0].score))
			return false;
		if (m->len == own && !memcmp(m->str, ag->member, own))
			continue;	/* this agent: always counted */
		if (!member_ok(m->str, m->len)) {
			first_odd = first_odd ? first_odd : m;
			odd++;
			continue;
		}
		peer_seen(ag, m->str, m->len, sc->str, now);
	}
	say_odd(ag, first_odd, odd);
	/* After syncs that failed (Redis gone, or too slow), no peer could
	 * beat: the first answer forgets none; the next ones list them again. */
	gap = ag->peers_ns && now - ag->peers_ns > 2 * ag->sync_ns;
	ag->peers_ns = now;
	*npeers = peers_count(ag, now, gap || rep->elements / 2 >= PEERS_ANSWER_MAX);
	return true;
}
