// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* lease: the cluster agent's side of the leases map. Writes go through
 * bpf/cluster.bpf.c's syscall program (one BPF_PROG_RUN per batch), which
 * exchanges each credit atomically while the datapath spends it; hot
 * notices are popped from the cluster_hot queue. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core.h"
#include "lease.h"
#include "cluster.skel.h"

struct lease_writer {
	struct cluster_bpf *skel;
	int prog_fd;
};

int lease_writer_open(const struct sluice_maps *m, struct lease_writer **out)
{
	struct lease_writer *w = calloc(1, sizeof(*w));
	int err;

	*out = NULL;
	if (!w)
		return runtime_err("out of memory");
	w->skel = cluster_bpf__open();
	if (!w->skel) {
		free(w);
		return runtime_err("cannot open the lease writer's BPF object: %s", strerror(errno));
	}
	err = bpf_map__reuse_fd(w->skel->maps.leases, m->leases);
	if (!err)
		err = cluster_bpf__load(w->skel);
	if (err) {
		cluster_bpf__destroy(w->skel);
		free(w);
		return runtime_err("cannot load the lease writer (a BPF syscall program, "
				   "kernel 5.14 or later): %s", strerror(-err));
	}
	w->prog_fd = bpf_program__fd(w->skel->progs.sluice_grant);
	*out = w;
	return 0;
}

int lease_grant(struct lease_writer *w, struct sluice_grant *g, unsigned int n)
{
	struct sluice_grant_batch *b = &w->skel->bss->batch;
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	unsigned int done, k;
	int err;

	for (done = 0; done < n; done += k) {
		k = n - done < SLUICE_CLUSTER_GRANT_BATCH ? n - done : SLUICE_CLUSTER_GRANT_BATCH;
		memcpy(b->g, g + done, k * sizeof(*g));
		b->n = k;
		err = bpf_prog_test_run_opts(w->prog_fd, &opts);
		if (err)
			return err < 0 ? err : -EIO;
		memcpy(g + done, b->g, k * sizeof(*g));
	}
	return 0;
}

void lease_writer_close(struct lease_writer *w)
{
	if (!w)
		return;
	cluster_bpf__destroy(w->skel);
	free(w);
}

int hot_pop(const struct sluice_maps *m, struct sluice_hot *h)
{
	return bpf_map_lookup_and_delete_elem(m->cluster_hot, NULL, h) ? -errno : 0;
}

int leases_clear(const struct sluice_maps *m)
{
	struct sluice_src_key key;

	/* No agent runs, so nothing else writes the map: delete one at a
	 * time from the first key until none is left. */
	while (!bpf_map_get_next_key(m->leases, NULL, &key))
		if (bpf_map_delete_elem(m->leases, &key) && errno != ENOENT)
			return runtime_err("cannot clear the leases of %s: %s", m->iface,
					   strerror(errno));
	return 0;
}
