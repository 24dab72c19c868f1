// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Source tables under pressure: see pressure.h. */
#include <stdlib.h>
#include <string.h>
#include "core.h"
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

/* Said with the warning when the table is full of established sources. */
static const char *full_of(const struct src_occupancy *o)
{
	return o->established * 100 >= o->slots * PRESSURE_FULL_PCT ?
	       ": it is full of established sources, which fresh ones never displace, and "
	       "refuses newcomers until one has been idle past its time" : "";
}

/* Counters the datapath keeps, never the table: a look costs the same at
 * any --max-sources. */
static void look_one(struct pressure_iface *pi)
{
	struct sluice_maps m;
	struct src_occupancy o;
	__u64 refused, new_refused;

	if (maps_try_open_ro(pi->name, &m))
		return;
	if (src_occupancy_read(&m, &o) || read_event(&m, SLUICE_EV_SOURCE_REFUSED, &refused)) {
		maps_close(&m);
		return;
	}
	maps_close(&m);
	pi->seen = true;
	new_refused = pi->refused != ~0ULL && refused > pi->refused ? refused - pi->refused : 0;
	pi->refused = refused;
	if (!pi->under && (o.live * 100 >= o.slots * PRESSURE_FULL_PCT || new_refused)) {
		pi->under = true;
		log_event(LOG_WARNING, "%s: the source table is under pressure: %llu of %llu slots "
			  "held (%llu%%, %llu established), %llu new sources refused since the last "
			  "look (dropped as no_bucket)%s; attach --max-sources N makes it larger",
			  pi->name, (unsigned long long)o.live, (unsigned long long)o.slots,
			  (unsigned long long)(o.live * 100 / o.slots),
			  (unsigned long long)o.established, (unsigned long long)new_refused,
			  full_of(&o));
	} else if (pi->under && o.live * 100 < o.slots * PRESSURE_EASED_PCT && !new_refused) {
		pi->under = false;
		log_event(LOG_NOTICE, "%s: the source table's pressure eased: %llu of %llu slots "
			  "held", pi->name, (unsigned long long)o.live, (unsigned long long)o.slots);
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
