// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The check server's escalation: an address that keeps going after
 * --ban-after 429s in a row is banned in XDP (ban_put) for --ban. */
#include <errno.h>
#include <string.h>
#include "check.h"

/* One more rejection of src's streak under rule r (table index idx); past
 * ban_after of them in a row the source is banned and a's Retry-After is
 * the ban. Under the lock. */
void check_escalate(struct check_server *s, const struct check_rule *r, __u32 idx,
		    const struct sluice_src_key *src, struct check_entry *streak, __u64 now,
		    struct answer *a)
{
	int err;

	if (++streak->rejected <= r->ban_after)
		return;
	/* Kept on after ban_after rejections in a row: banned in XDP. */
	streak->rejected = 0;
	err = ban_put(&s->bans, src, idx, now + r->ban_ns);
	if (!err) {
		char who[SLUICE_CIDR_STR_MAX];

		count(&s->counts[idx].bans);
		a->retry_s = ns_to_s_up(r->ban_ns);
		format_source(src, who, sizeof(who));
		log_event(LOG_NOTICE, "%s: ban added: %s (escalated by rule %u, for %llus, by check-server)",
			  s->m.iface, who, idx, (unsigned long long)ns_to_s_up(r->ban_ns));
	} else if (!__atomic_fetch_add(&s->ban_failures, 1, __ATOMIC_RELAXED)) {
		/* counted, and said once: the client stays unbanned */
		err_msg("cannot ban a client in XDP: %s (the ban table holds %u; "
			"sluice_check_escalation_ban_failures_total counts every failure)",
			strerror(-err), SLUICE_MAX_ESCALATION_BANS);
	}
}
