// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The cluster agent's lease writer: a syscall program, run by `sluice
 * cluster join` with BPF_PROG_RUN, that writes a batch of leases into the
 * interface's pinned `leases` map (reused by descriptor at load). Userspace
 * cannot change one word of a hash map's value while the datapath spends
 * it; this program replaces each credit with one atomic exchange, so a unit
 * is either spent by a packet or returned to the agent, never both. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "sluice/sluice.h"

#define READ_ONCE(x)		(*(const volatile typeof(x) *)&(x))
#define WRITE_ONCE(x, v)	(*(volatile typeof(x) *)&(x) = (v))

#include "leases_map.h"

/* The batch, written by the agent through the skeleton's mapping of .bss;
 * each entry's credit is replaced with the credit its lease had left. */
struct sluice_grant_batch batch;

SEC("syscall")
int sluice_grant(void *ctx)
{
	struct sluice_lease *l, fresh = {};
	struct sluice_grant *g;
	__u32 i, n = READ_ONCE(batch.n);

	for (i = 0; i < SLUICE_CLUSTER_GRANT_BATCH && i < n; i++) {
		g = &batch.g[i];
		l = bpf_map_lookup_elem(&leases, &g->key);
		if (!g->expires_ns) {
			/* Release: what is left goes back to the agent. */
			g->credit = l ? __sync_lock_test_and_set(&l->credit, 0) : 0;
			if (l)
				bpf_map_delete_elem(&leases, &g->key);
			continue;
		}
		if (l) {
			WRITE_ONCE(l->policy, g->policy);
			WRITE_ONCE(l->expires_ns, g->expires_ns);
			g->credit = __sync_lock_test_and_set(&l->credit, g->credit);
			continue;
		}
		fresh.credit = g->credit;
		fresh.expires_ns = g->expires_ns;
		fresh.policy = g->policy;
		g->credit = 0;
		/* Only the agent adds leases; a full map leaves this bucket
		 * to its share (the agent counts the failure). */
		if (bpf_map_update_elem(&leases, &g->key, &fresh, BPF_NOEXIST))
			g->credit = SLUICE_GRANT_FAILED;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
