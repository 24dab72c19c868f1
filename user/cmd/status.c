// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* status: what runs on each attached interface, and where, with its
 * sources, budget, rules and pins. */
#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "core.h"
#include "rule.h"
#include "cli.h"
#include "xdp_prog.h"

/* What status can tell of the program: seen running (here or in another
 * network namespace), seen not running, or not known to this user. */
enum run_state {
	RUN_HERE,
	RUN_ELSEWHERE,		/* in another network namespace (where) */
	RUN_NOT_HERE,		/* the interface is here, the program is not on it */
	RUN_NOWHERE,		/* no interface here, and no namespace runs it */
	RUN_UNKNOWN_OTHER_NS,	/* no interface here; other namespaces not readable */
	RUN_UNKNOWN_PERM,	/* an XDP program runs here; no permission to say whose */
};

static const char *const run_state_names[] = {
	[RUN_HERE] = "attached",
	[RUN_ELSEWHERE] = "attached_in_other_netns",
	[RUN_NOT_HERE] = "not_attached",
	[RUN_NOWHERE] = "interface_gone",
	[RUN_UNKNOWN_OTHER_NS] = "unknown_other_netns",
	[RUN_UNKNOWN_PERM] = "unknown_no_permission",
};

struct iface_status {
	char name[IF_NAMESIZE];
	bool present, attached;
	enum run_state run;
	struct elsewhere where;	/* RUN_ELSEWHERE */
	struct sluice_meta meta;
	long sources;		/* held: live slots, home and keyed */
	struct src_occupancy occ;	/* the source table's slots, held, established */
	__u64 refused;		/* new sources refused: slots all in debt */
	__u64 reclaimed;	/* slots taken from another source, any kind */
	__u64 established_reclaimed;	/* ... from an established one, idle past its time */
	__u64 lock_gave_up;	/* claims that gave up on a held stripe lock */
	__u32 capacity;
	unsigned int rules;
	unsigned int monitor_rules;	/* --monitor: a dry run, dropping nothing */
	struct rule def;
	struct rule budget;	/* limit new-sources; rate 0 is off */
	bool budget_spent;	/* no new source would get an entry now */
	__u64 new_admitted, new_limited;
	char group[32];		/* who may read the pins */
	char error[1024];	/* -j: why it could not be read ("" when it was) */
};

/* A table this full (percent of its slots), where new sources have taken
 * slots from others or been refused, is under pressure: new sources make
 * room only from sources on probation (a flood's own, but also brand-new
 * clients that have not come back yet), or find none. */
#define STATUS_FULL_PCT		90

static bool table_full(const struct iface_status *st)
{
	return (st->refused || st->reclaimed) && st->occ.slots &&
	       st->occ.live * 100 >= st->occ.slots * STATUS_FULL_PCT;
}

/* Full, and nearly all of it established: it refuses newcomers until an
 * established source has been idle past its time. */
static bool full_of_established(const struct iface_status *st)
{
	return st->refused && table_full(st) && st->occ.established * 100 >= st->occ.slots * STATUS_FULL_PCT;
}

static bool under_pressure(const struct iface_status *st)
{
	return st->budget_spent || table_full(st);
}

/* Whether this process may look at programs (by id) and other namespaces. */
static bool privileged(void)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };

	return !syscall(SYS_capget, &hdr, data) &&
	       (data[0].effective & CAP_TO_MASK(CAP_SYS_ADMIN));
}

/*
 * The program was not found on the interface here (ifindex, 0 if it is
 * not the one attached to): is it running, and where? Root looks into the
 * other network namespaces; a reader without privileges sees only the
 * XDP program ids on the link, and the id attach recorded.
 */
static enum run_state look_further(const char *iface, int ifindex, const struct pin_ids *ids,
				   const struct sluice_meta *meta, struct elsewhere *where)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	int r;

	if (privileged()) {
		if (ifindex)
			return RUN_NOT_HERE;
		r = find_elsewhere(iface, ids, where);
		return r > 0 ? RUN_ELSEWHERE : r < 0 ? RUN_UNKNOWN_OTHER_NS : RUN_NOWHERE;
	}
	if (!ifindex)
		return RUN_UNKNOWN_OTHER_NS;
	if (bpf_xdp_query(ifindex, 0, &q))
		return RUN_UNKNOWN_PERM;
	if (meta->prog_id && (q.prog_id == meta->prog_id || q.drv_prog_id == meta->prog_id ||
			      q.skb_prog_id == meta->prog_id))
		return RUN_HERE;
	if (!q.prog_id && !q.drv_prog_id && !q.skb_prog_id && !q.hw_prog_id)
		return RUN_NOT_HERE;
	/* libxdp's dispatcher, or another program: whose, only root can tell. */
	return RUN_UNKNOWN_PERM;
}

static int gather_status(const char *iface, struct iface_status *st)
{
	struct sluice_counter c[SLUICE_R_MAX];
	struct sluice_maps m;
	struct xdp_multiprog *mp;
	struct xdp_program *ours;
	struct pin_ids ids;
	struct policy *p;
	struct stat sb;
	int err, ifindex;

	memset(st, 0, sizeof(*st));
	snprintf(st->name, sizeof(st->name), "%.*s", IF_NAMESIZE - 1, iface);
	err = maps_open_ro(iface, &m);
	if (err)
		return err;
	p = malloc(sizeof(*p));
	if (!p || read_meta(&m, &st->meta) || policy_read(&m, p)) {
		free(p);
		maps_close(&m);
		return EXIT_RUNTIME;
	}
	/* What runs on the link is the truth; the metadata may predate an
	 * attach that died half-way. */
	ifindex = (int)if_nametoindex(iface);
	read_pin_ids(m.dir, &ids);
	ours = find_ours(ifindex, &ids, &mp);
	st->attached = ours != NULL;
	st->present = ifindex && (ours || !st->meta.ifindex ||
				  st->meta.ifindex == (__u32)ifindex);
	if (ours) {
		st->meta.prog_id = xdp_program__id(ours);
		st->meta.xdp_mode = xdp_multiprog__attach_mode(mp);
		st->meta.multiprog = !xdp_multiprog__is_legacy(mp);
	}
	xdp_multiprog__close(mp);
	st->run = ours ? RUN_HERE : look_further(iface, st->present ? ifindex : 0, &ids,
						 &st->meta, &st->where);
	st->attached = st->run == RUN_HERE || st->run == RUN_ELSEWHERE;
	if (!stat(m.dir, &sb)) {
		const struct group *gr = getgrgid(sb.st_gid);	/* NOLINT(concurrency-mt-unsafe) */

		if (gr)
			snprintf(st->group, sizeof(st->group), "%s", gr->gr_name);
		else
			snprintf(st->group, sizeof(st->group), "%u", (unsigned int)sb.st_gid);
	}
	/* Counters the datapath keeps: the table itself is never read. */
	st->sources = count_sources(&m);
	err = src_occupancy_read(&m, &st->occ);
	if (st->sources < 0 || err) {
		free(p);
		maps_close(&m);
		return runtime_err("cannot read the source table's counters of %s: %s", iface,
				   strerror(err ? -err : (int)-st->sources));
	}
	st->capacity = srctab_capacity(&m);
	st->rules = p->n;
	st->def = p->def;
	st->monitor_rules = p->def.monitor;
	for (unsigned int i = 0; i < p->n; i++)
		st->monitor_rules += p->rules[i].monitor;
	st->budget = p->new_sources;
	free(p);
	if (budget_state(&m, &st->budget_spent) ||
	    read_event(&m, SLUICE_EV_NEW_SOURCE_ADMITTED, &st->new_admitted) ||
	    read_event(&m, SLUICE_EV_SOURCE_REFUSED, &st->refused) ||
	    read_event(&m, SLUICE_EV_SOURCE_RECLAIMED, &st->reclaimed) ||
	    read_event(&m, SLUICE_EV_ESTABLISHED_RECLAIMED, &st->established_reclaimed) ||
	    read_event(&m, SLUICE_EV_LOCK_GAVE_UP, &st->lock_gave_up) ||
	    read_counters(&m, c)) {
		maps_close(&m);
		return EXIT_RUNTIME;
	}
	st->new_limited = c[SLUICE_R_NEW_SOURCE_LIMITED].packets;
	maps_close(&m);
	return 0;
}

static void print_status_json(struct json *j, const struct iface_status *st)
{
	json_obj_open(j, NULL);
	json_str(j, "interface", st->name);
	json_bool(j, "present", st->present);
	json_bool(j, "attached", st->attached);
	json_str(j, "state", run_state_names[st->run]);
	if (st->run == RUN_ELSEWHERE) {
		json_str(j, "netns", st->where.ns);
		json_str(j, "netns_interface", st->where.ifname);
	} else {
		json_null(j, "netns");
		json_null(j, "netns_interface");
	}
	json_str(j, "mode", mode_name(st->meta.xdp_mode));
	json_str(j, "libxdp", st->meta.multiprog ? "dispatcher" : "single");
	json_u64(j, "prog_id", st->meta.prog_id);
	json_u64(j, "attached_at", st->meta.attached_at);
	json_u64(j, "tracked_sources", st->sources > 0 ? (__u64)st->sources : 0);
	json_u64(j, "capacity", st->capacity);
	json_u64(j, "slots", st->occ.slots);
	json_u64(j, "slots_live", st->occ.live);
	json_u64(j, "slots_established", st->occ.established);
	json_u64(j, "slots_probation", st->occ.live - st->occ.established);
	json_u64(j, "slots_keyed", st->occ.keyed);
	json_u64(j, "refused_sources", st->refused);
	json_u64(j, "reclaimed_sources", st->reclaimed);
	json_u64(j, "reclaimed_established", st->established_reclaimed);
	json_u64(j, "lock_gave_up", st->lock_gave_up);
	json_str(j, "group", st->group);
	json_bool(j, "under_pressure", under_pressure(st));
	json_bool(j, "full_of_established", full_of_established(st));
	json_obj_open(j, "new_sources");
	if (st->budget.rate) {
		json_u64(j, "rate", st->budget.rate);
		json_u64(j, "period", st->budget.period);
		json_u64(j, "burst", st->budget.burst);
	} else {
		json_null(j, "rate");
	}
	json_bool(j, "budget_spent", st->budget_spent);
	json_u64(j, "admitted", st->new_admitted);
	json_u64(j, "limited", st->new_limited);
	json_obj_close(j);
	json_u64(j, "rules", st->rules);
	json_u64(j, "monitor_rules", st->monitor_rules);
	json_obj_open(j, "default");
	json_str(j, "action", action_name(st->def.action));
	json_u64(j, "rate", st->def.rate);
	json_u64(j, "burst", st->def.burst);
	json_obj_close(j);
	json_obj_close(j);
}

static void print_status_text(const struct iface_status *st)
{
	char when[32], state[256];
	time_t t = (time_t)st->meta.attached_at;

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
	switch (st->run) {
	case RUN_HERE:
		snprintf(state, sizeof(state), "attached");
		break;
	case RUN_ELSEWHERE:
		snprintf(state, sizeof(state), "attached in network namespace %s (on %s there), "
			 "not this one; see it with 'nsenter --net=%s sluice status'",
			 st->where.ns, st->where.ifname, st->where.ns);
		break;
	case RUN_NOT_HERE:
		snprintf(state, sizeof(state), "NOT ATTACHED (pins only; as root, 'sluice attach "
			 "%s' puts it back with its policy)", st->name);
		break;
	case RUN_NOWHERE:
		snprintf(state, sizeof(state), "INTERFACE GONE (the program runs in no network "
			 "namespace; 'sluice detach --force %s' removes the pins)", st->name);
		break;
	case RUN_UNKNOWN_OTHER_NS:
		snprintf(state, sizeof(state), "interface not in this network namespace: the "
			 "program may run in another one (as root, status looks into them)");
		break;
	case RUN_UNKNOWN_PERM:
		snprintf(state, sizeof(state), "an XDP program runs here; whether it is sluice's, "
			 "only root can tell");
		break;
	}
	printf("%s: %s, %s mode (%s), program id %u, since %s\n", st->name, state,
	       mode_name(st->meta.xdp_mode),
	       st->meta.multiprog ? "libxdp dispatcher" : "single program",
	       st->meta.prog_id, when);
	printf("  sources: %ld tracked, --max-sources %u; %llu of %llu slots held (%.0f%%: "
	       "%llu established, %llu on probation), %llu new sources refused\n", st->sources,
	       st->capacity, (unsigned long long)st->occ.live, (unsigned long long)st->occ.slots,
	       100.0 * (double)st->occ.live / (double)st->occ.slots,
	       (unsigned long long)st->occ.established,
	       (unsigned long long)(st->occ.live - st->occ.established),
	       (unsigned long long)st->refused);
	printf("  slots reclaimed: %llu (%llu of established sources idle past their time); "
	       "%llu claims gave up on a held lock\n", (unsigned long long)st->reclaimed,
	       (unsigned long long)st->established_reclaimed,
	       (unsigned long long)st->lock_gave_up);
	if (st->budget.rate) {
		char rate[32];

		rule_rate_words(&st->budget, rate, sizeof(rate));
		printf("  new sources: budget %s, burst %llu; %llu admitted, %llu dropped over it\n",
		       rate, (unsigned long long)st->budget.burst,
		       (unsigned long long)st->new_admitted, (unsigned long long)st->new_limited);
	} else {
		printf("  new sources: no budget (see 'sluice limit new-sources'); %llu admitted\n",
		       (unsigned long long)st->new_admitted);
	}
	if (under_pressure(st))
		printf("  UNDER PRESSURE: %s\n", st->budget_spent ?
		       "the new-source budget is spent; new sources are dropped as new_source_limited" :
		       full_of_established(st) ?
		       "the source table is full of established sources and refuses newcomers "
		       "(dropped as no_bucket); attach --max-sources N makes it larger" :
		       "the source table is full; new sources take the slots of sources on "
		       "probation (a flood's, or new clients' that have not come back yet)");
	if (st->def.action == SLUICE_ACT_LIMIT)
		printf("  default: limit %llu/s burst %llu\n",
		       (unsigned long long)st->def.rate, (unsigned long long)st->def.burst);
	else
		printf("  default: %s\n", st->def.action == SLUICE_ACT_ALLOW ?
		       "not limited (set one with 'sluice limit default --rate PPS')" :
		       action_name(st->def.action));
	if (st->monitor_rules)
		printf("  rules: %u (see 'sluice limit list'); %u under --monitor: a dry run that "
		       "drops nothing\n", st->rules, st->monitor_rules);
	else
		printf("  rules: %u (see 'sluice limit list')\n", st->rules);
	printf("  pins: readable by group %s\n", st->group);
}

/* With -j: every interface's status is read first; one that cannot be
 * read (pins of another version before the upgrading attach, a damaged
 * pin) is an entry of its own, {"interface", "error", "hint"}, beside the
 * others, and the exit status is its error's. */
static int status_json_all(char (*names)[IF_NAMESIZE], int n)
{
	struct iface_status *st = calloc(n > 0 ? (size_t)n : 1, sizeof(*st));
	struct json j;
	int err = 0;

	if (!st)
		return runtime_err("out of memory");
	for (int i = 0; i < n; i++) {
		int e;

		err_capture(st[i].error, sizeof(st[i].error));
		e = gather_status(names[i], &st[i]);
		err_capture(NULL, 0);
		if (!e)
			continue;
		err = err ? err : e;
		snprintf(st[i].name, sizeof(st[i].name), "%.*s", IF_NAMESIZE - 1, names[i]);
		if (!st[i].error[0])
			snprintf(st[i].error, sizeof(st[i].error), "cannot read the pins of %s",
				 st[i].name);
	}
	json_begin(&j, stdout);
	json_obj_open(&j, NULL);
	json_arr_open(&j, "interfaces");
	for (int i = 0; i < n; i++) {
		if (!st[i].error[0]) {
			print_status_json(&j, &st[i]);
			continue;
		}
		json_obj_open(&j, NULL);
		json_str(&j, "interface", st[i].name);
		json_error_fields(&j, st[i].error);
		json_obj_close(&j);
	}
	json_arr_close(&j);
	json_obj_close(&j);
	json_end(&j);
	free(st);
	return err;
}

static int status_run(const struct cli_cmd *c, struct cli_args *a)
{
	char names[64][IF_NAMESIZE];
	struct iface_status st;
	int n, err = 0;

	(void)c;
	(void)a;
	err = pin_root_readable();
	if (err)
		return err;
	libxdp_set_print(libxdp_quiet);
	if (opts.iface) {
		char one[IF_NAMESIZE];

		err = pick_iface(one, sizeof(one));
		if (err)
			return err;
		snprintf(names[0], IF_NAMESIZE, "%s", one);
		n = 1;
	} else {
		n = list_attached(names, 64);
	}
	if (opts.json)
		return status_json_all(names, n);
	if (n == 0)
		printf("sluice is not attached to any interface\n");
	for (int i = 0; i < n; i++) {
		int e = gather_status(names[i], &st);

		if (e) {
			err = e;
			continue;
		}
		print_status_text(&st);
	}
	return err;
}

const struct cli_cmd status_cmd = {
	.name = "status", .path = "status", .json = true, .run = status_run,
	.help = "Each attached interface (or -i IFACE's): mode, program, sources, rules, pins.",
};
