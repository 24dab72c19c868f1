// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Source tables under pressure: see pressure.h. */
#include <stdlib.h>
#include <string.h>
#include "sluice.h"
#include "pressure.h"
#include "sources.h"

#define LOOK_MAX_IFACES	1024

/* The one of name, made if there is room; NULL when there is none. */
static struct pressure_iface *follow(struct pressure *p, const char *name)
{
	struct pressure_iface *pi;

	for (unsigned int i = 0; i < p->n; i++)
		if (!strcmp(p->ifs[i].name, name))
			return &p->ifs[i];
	if (p->n == PRESSURE_IFACES)
		return NULL;
	pi = &p->ifs[p->n++];
	memset(pi, 0, sizeof(*pi));
	snprintf(pi->name, sizeof(pi->name), "%s", name);
	pi->refused = ~0ULL;	/* no look yet */
	return pi;
}

static void look_one(struct pressure_iface *pi)
{
	struct sluice_maps m;
	__u64 slots, refused, new_refused;
	long live;

	if (maps_try_open_ro(pi->name, &m))
		return;
	slots = (__u64)map_capacity(m.src_table) * SLUICE_SLOTS_PER_BUCKET;
	live = table_sources(&m);
	if (live < 0 || !slots || read_event(&m, SLUICE_EV_SOURCE_REFUSED, &refused)) {
		maps_close(&m);
		return;
	}
	maps_close(&m);
	pi->seen = true;
	new_refused = pi->refused != ~0ULL && refused > pi->refused ? refused - pi->refused : 0;
	pi->refused = refused;
	if (!pi->under && ((__u64)live * 100 >= slots * PRESSURE_FULL_PCT || new_refused)) {
		pi->under = true;
		log_event(LOG_WARNING, "%s: the source table is under pressure: %ld of %llu slots "
			  "held (%llu%%), %llu new sources refused since the last look (dropped as "
			  "no_bucket); attach --max-sources N makes it larger", pi->name, live,
			  (unsigned long long)slots, (unsigned long long)live * 100 / slots,
			  (unsigned long long)new_refused);
	} else if (pi->under && (__u64)live * 100 < slots * PRESSURE_EASED_PCT && !new_refused) {
		pi->under = false;
		log_event(LOG_NOTICE, "%s: the source table's pressure eased: %ld of %llu slots held",
			  pi->name, live, (unsigned long long)slots);
	}
}

void pressure_look(struct pressure *p, const char *only)
{
	char (*names)[IF_NAMESIZE] = calloc(LOOK_MAX_IFACES, sizeof(*names));
	struct pressure_iface *pi;
	int count;

	if (!names)
		return;
	for (unsigned int i = 0; i < p->n; i++)
		p->ifs[i].seen = false;
	count = list_attached(names, LOOK_MAX_IFACES);
	for (int i = 0; i < count; i++) {
		if (only && strcmp(only, names[i]) != 0)
			continue;
		pi = follow(p, names[i]);
		if (pi)
			look_one(pi);
	}
	/* Detached since: forgotten, so that a new attach starts afresh. */
	for (unsigned int i = 0; i < p->n;) {
		if (p->ifs[i].seen) {
			i++;
			continue;
		}
		p->ifs[i] = p->ifs[--p->n];
	}
	free(names);
}
