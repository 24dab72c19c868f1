// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Reading an attached interface's live state: the source table's buckets,
 * the policy table's entries, the config word, and the rules by index. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "output.h"
#include "rule.h"
#include "live.h"
#include "srctab.h"

struct bucket_rows {
	struct bucket_row *rows;
	size_t n, cap;
};

static int add_row(const struct sluice_src_key *key, const struct sluice_bucket *b, void *ctx)
{
	struct bucket_rows *t = ctx;

	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 1024;
		struct bucket_row *rows = realloc(t->rows, cap * sizeof(*rows));

		if (!rows)
			return -1;
		t->rows = rows;
		t->cap = cap;
	}
	t->rows[t->n].key = *key;
	t->rows[t->n].b = *b;
	t->n++;
	return 0;
}

int read_buckets(const struct sluice_maps *m, struct bucket_row **out, size_t *n)
{
	struct bucket_rows t = { 0 };
	long r;

	r = walk_buckets(m, add_row, &t);
	if (r >= 0 && t.n < (size_t)r)
		r = -ENOMEM;
	if (r < 0) {
		free(t.rows);
		return runtime_err("cannot read the source table: %s", strerror((int)-r));
	}
	*out = t.rows;
	*n = t.n;
	return 0;
}

const struct rule *rule_by_index(const struct policy *p, __u32 idx)
{
	if (idx == SLUICE_POLICY_DEFAULT)
		return &p->def;
	for (unsigned int i = 0; i < p->n; i++)
		if (p->rules[i].index == idx)
			return &p->rules[i];
	return NULL;
}

void policy_rule_label(const struct policy *p, const struct rule *r, char *buf, size_t len)
{
	rule_label(r, r == &p->def, buf, len);
}

int policy_entry(const struct sluice_maps *m, __u32 slot, __u32 idx, struct sluice_policy *out)
{
	__u32 key = slot * SLUICE_MAX_POLICIES + idx;

	return idx < SLUICE_MAX_POLICIES ? bpf_map_lookup_elem(m->policy_table, &key, out) : -1;
}

void live_config(const struct sluice_maps *m, struct sluice_config *cfg)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->config, &zero, cfg))
		memset(cfg, 0, sizeof(*cfg));
}
