// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The check server's admission decision: the rule covering a source, its
 * bucket judged with the datapath's math (algo.h), the answer with its
 * RateLimit fields and Retry-After, and repeats of an X-Request-ID. */
#include <bpf/bpf.h>
#include "check.h"
#include "hash.h"

static void answer_fields(struct answer *a, const struct check_rule *r, __u64 st, __u64 now)
{
	__u64 reset;

	a->fields = true;
	snprintf(a->name, sizeof(a->name), "%s", r->name);
	a->quota = r->quota;
	a->window_s = r->window_s;
	a->remaining = limit_available(&r->l, st, now);
	if (r->l.algo == SLUICE_ALGO_TOKEN_BUCKET)	/* until it is full again */
		reset = limit_wait(&r->l, st, now, limit_capacity(&r->l));
	else						/* until the window ends */
		reset = r->l.interval - now % r->l.interval;
	a->reset_s = ns_to_s_up(reset);
}

/* Judges one request of src by rule r (table index idx), under the lock:
 * its bucket, the escalation, the answer. */
static void judge(struct check_server *s, const struct check_rule *r, __u32 idx,
		  const struct sluice_src_key *src, bool status403, __u64 now, struct answer *a)
{
	struct check_key k = { .kind = KIND_BUCKET };
	struct check_entry *b, *streak;
	__u32 bi, si;
	__u64 st, next = 0, wait;
	int verdict;

	source_key_mask(src, r->key_len, (__u16)idx, &k.src);
	bi = check_entry_get(s, &k, now);
	if (bi == NIL) {	/* fail closed: nothing more can be tracked */
		a->status = status403 ? MHD_HTTP_FORBIDDEN : MHD_HTTP_TOO_MANY_REQUESTS;
		a->outcome = OUT_TABLE_FULL;
		a->retry_s = 1;
		return;
	}
	st = check_entry_at(s, bi)->state;
	verdict = check_bucket_judge(s, &r->l, st, now, &next);
	b = check_entry_at(s, bi);
	if (verdict == SLUICE_JUDGE_ADMITTED)
		b->state = st = next;
	b->idle_at = check_idle_time(&r->l, b->state, now);
	answer_fields(a, r, b->state, now);

	/* The address's streak: in its bucket when the bucket is its own. */
	k.kind = KIND_STREAK;
	k.src = *src;
	k.src.policy = (__u16)idx;
	streak = b;
	if (r->key_len < SLUICE_KEY_LEN_SOURCE) {
		si = verdict == SLUICE_JUDGE_ADMITTED || r->monitor || !r->ban_ns ?
			     table_find(&s->t, &k) : check_entry_get(s, &k, now);
		streak = si == NIL ? NULL : check_entry_at(s, si);
		b = check_entry_at(s, bi);
	}

	if (verdict == SLUICE_JUDGE_ADMITTED) {
		count(&s->counts[idx].pass);
		a->status = MHD_HTTP_OK;
		a->outcome = OUT_OK;
		if (streak)
			streak->rejected = 0;
		if (streak && streak != b)
			check_entry_idle_now(s, streak, now);	/* it may be claimed now */
		return;
	}
	count(&s->counts[idx].limited);
	if (r->monitor) {
		a->status = MHD_HTTP_OK;
		a->outcome = OUT_MONITORED;
		return;
	}
	wait = limit_wait(&r->l, st, now, 1);
	a->status = status403 ? MHD_HTTP_FORBIDDEN : MHD_HTTP_TOO_MANY_REQUESTS;
	a->outcome = OUT_LIMITED;
	a->retry_s = wait == SLUICE_U64_MAX ? 0 : ns_to_s_up(wait);
	if (a->retry_s < 1)
		a->retry_s = 1;
	if (!r->ban_ns || !streak)
		return;
	if (streak != b)
		streak->idle_at = b->idle_at;
	check_escalate(s, r, idx, src, streak, now, a);
}

static __u32 repeat_slot(const struct check_server *s, const char *id,
			 const struct sluice_src_key *src)
{
	return (__u32)(hash_bytes(hash_bytes(s->seed, src, sizeof(*src)), id, strlen(id)) &
		       (REPEAT_SLOTS - 1));
}

/* The whole check of src, under the lock. */
void check_source(struct check_server *s, const struct sluice_src_key *src,
		  const char *id, bool status403, __u64 ban_left, struct answer *a)
{
	struct repeat_slot *rs = NULL;
	const struct check_rule *r;
	__u64 now;
	__u32 idx;

	pthread_mutex_lock(&s->lock);
	now = mono_now_ns();
	if (id) {
		rs = &s->repeats[repeat_slot(s, id, src)];
		if (rs->at && now - rs->at < REPEAT_NS && !strcmp(rs->id, id) &&
		    !memcmp(&rs->src, src, sizeof(*src))) {
			*a = rs->a;
			a->outcome = OUT_REPEAT;
			pthread_mutex_unlock(&s->lock);
			return;
		}
	}
	if (ban_left) {
		a->status = status403 ? MHD_HTTP_FORBIDDEN : MHD_HTTP_TOO_MANY_REQUESTS;
		a->outcome = OUT_BANNED;
		a->retry_s = ns_to_s_up(ban_left);
	} else if (!(r = check_rule_for(s->pol, src, &idx))) {
		a->status = MHD_HTTP_OK;
		a->outcome = OUT_UNLIMITED;
	} else {
		judge(s, r, idx, src, status403, now, a);
	}
	if (rs) {
		snprintf(rs->id, sizeof(rs->id), "%s", id);
		rs->src = *src;
		rs->at = now;
		rs->a = *a;
	}
	pthread_mutex_unlock(&s->lock);
}

/* ns left of src's ban in XDP, 0 when it has none. */
__u64 check_ban_left(const struct check_server *s, const struct sluice_src_key *src)
{
	struct sluice_ban b;
	__u64 now;

	/* The datapath's gate too: no lookup while the table has no live ban. */
	if (!(__atomic_load_n(&s->bans.state->bans, __ATOMIC_ACQUIRE) & SLUICE_BANS_LIVE) ||
	    bpf_map_lookup_elem(s->bans.fd, src, &b))
		return 0;
	now = mono_now_ns();
	return b.until_ns > now ? b.until_ns - now : 0;
}
