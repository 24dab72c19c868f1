// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* attach, detach: loading the XDP program on an interface with its maps
 * pinned under <pin root>/<iface>/, and taking it off again (xdp_prog.c
 * does the libxdp and libbpf work). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "core.h"
#include "cli.h"
#include "steps.h"
#include "upgrade.h"
#include "xdp_prog.h"
#include "sluice.skel.h"

static int make_dir(const char *path)
{
	if (mkdir(path, 0700) && errno != EEXIST)
		return runtime_err("cannot create %s: %s", path, strerror(errno));
	return 0;
}

/* --mode's words, by their index in attach_options.mode. */
enum { ATTACH_NATIVE, ATTACH_SKB, ATTACH_AUTO };
static const char *const attach_modes[] = {
	[ATTACH_NATIVE] = "native", [ATTACH_SKB] = "skb", [ATTACH_AUTO] = "auto", NULL,
};

struct attach_options {
	int mode;
	__u64 max_sources;
	__u64 max_bans;
	__u64 est_idle;		/* seconds */
	const char *group;	/* NULL: SLUICE_PIN_GROUP, created if missing */
	bool force;		/* a mode change, with its moment unprotected */
};

static const struct attach_options attach_defaults = {
	.mode = ATTACH_AUTO,
	.max_sources = SLUICE_MAX_SOURCES_DEFAULT,
	.max_bans = SLUICE_MAX_BANS_DEFAULT,
	.est_idle = SLUICE_EST_IDLE_NS_DEFAULT / SLUICE_NS_PER_SEC,
};

enum { ATTACH_MODE, ATTACH_MAX_SOURCES, ATTACH_MAX_BANS, ATTACH_EST_IDLE, ATTACH_GROUP,
       ATTACH_FORCE };

static const struct cli_opt attach_opts[] = {
	[ATTACH_MODE] = CLI_ENUM("mode", 0, "native|skb|auto",
				 "XDP mode; auto tries native, then skb", struct attach_options,
				 mode, attach_modes),
	[ATTACH_MAX_SOURCES] = CLI_U64("max-sources", 0, "N", "size of the source table",
				       struct attach_options, max_sources, SLUICE_MAX_SOURCES_MIN,
				       SLUICE_MAX_SOURCES_MAX, "sources"),
	[ATTACH_MAX_BANS] = CLI_U64("max-bans", 0, "N",
				    "prefixes the ban table holds (ban add, ban load)",
				    struct attach_options, max_bans, SLUICE_MAX_BANS_MIN,
				    SLUICE_MAX_BANS_MAX, "prefixes"),
	[ATTACH_EST_IDLE] = CLI_U64("established-idle", 0, "SECONDS",
				    "idle time after which an established source's slot may be "
				    "reused",
				    struct attach_options, est_idle,
				    SLUICE_EST_IDLE_NS_MIN / SLUICE_NS_PER_SEC,
				    SLUICE_EST_IDLE_NS_MAX / SLUICE_NS_PER_SEC, "seconds"),
	[ATTACH_GROUP] = CLI_STR("group", 0, "NAME",
				 "group that may read the pins (default 'sluice', created if missing)",
				 struct attach_options, group),
	[ATTACH_FORCE] = CLI_FLAG("force", 0, "change the mode of an attached program, which "
				  "leaves the interface unprotected for a moment",
				  struct attach_options, force),
	CLI_OPT_END,
};

/* One attach as it goes: what was asked, and what is held open so far. */
struct attach_job {
	const char *iface;
	int ifindex;
	enum xdp_attach_mode modes[2];
	int nmodes;
	bool auto_mode;		/* --mode auto: skb is a fallback to warn of */
	char dir[SLUICE_DIR_MAX];
	gid_t gid;
	struct sluice_bpf *skel;
	struct xdp_program *prog;
	bool had_pins, multiprog;
	__u32 old_id;			/* the program replaced, 0: none */
	int old_fd;
	enum xdp_attach_mode old_mode;	/* the mode it runs in */
	bool old_dispatcher;		/* it runs under libxdp's dispatcher */
	bool mode_change;		/* --mode names another mode (--force) */
	enum xdp_attach_mode gone_mode;	/* it was taken off in: restore_old */
	__u64 gap_ns;			/* a mode change's moment unprotected */
	int used;	/* the mode it runs in, -1 while not on the link */
	int prog_fd;
	struct table_sizes sizes;	/* a new source and ban table's */
	struct upgrade up;		/* over pins of another version */
};

/* The link type of iface in this network namespace (ARPHRD_*), -1 if
 * unknown. /sys/class/net would show the namespace sysfs was mounted in. */
static int link_type(const char *iface)
{
	struct ifreq ifr;
	int fd, r;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	r = ioctl(fd, SIOCGIFHWADDR, &ifr);
	close(fd);
	return r ? -1 : ifr.ifr_hwaddr.sa_family;
}

/*
 * The datapath parses Ethernet frames. On a raw-IP device (tun, WireGuard,
 * IPIP, GRE, SIT: XDP's frame starts at the IP header) it would find no
 * IPv4 or IPv6 and pass everything as non_ip: such a device is refused
 * before anything changed. Loopback frames carry an Ethernet header.
 */
static int check_ethernet(const char *iface)
{
	int type = link_type(iface);
	const char *kind;

	switch (type) {
	case -1:		/* unknown: let the attach say */
	case ARPHRD_ETHER:
	case ARPHRD_LOOPBACK:
		return 0;
	case ARPHRD_NONE:
		kind = "a raw-IP device (tun, WireGuard)";
		break;
	case ARPHRD_TUNNEL:
		kind = "an IPIP tunnel";
		break;
	case ARPHRD_TUNNEL6:
		kind = "an IPv6 tunnel (ip6tnl)";
		break;
	case ARPHRD_SIT:
		kind = "a SIT tunnel";
		break;
	case ARPHRD_IPGRE:
		kind = "a GRE tunnel";
		break;
	default:
		kind = "not an Ethernet device";
		break;
	}
	return usage_err("%s is %s (link type %d): sluice judges Ethernet frames and would pass "
			 "every packet there unjudged; nothing changed: attach to an Ethernet "
			 "device (for a tunnel, the one it runs over: doc/caveats.md)",
			 iface, kind, type);
}

/*
 * The program a re-attach replaces, whatever program of these pins runs
 * here (recorded or not), held open so that it can be put back, and its
 * mode: --mode auto keeps that mode. Another mode cannot be one step (the
 * kernel never holds a native and a generic program on one device), so it
 * is refused unless --force, before anything changed.
 */
static int attach_old(struct attach_job *job, bool force)
{
	const char *iface = job->iface, *from, *to;
	struct xdp_multiprog *mp = NULL;
	struct xdp_program *old;
	struct pin_ids ids;
	bool shared;

	read_pin_ids(job->dir, &ids);
	old = find_prog(job->ifindex, &ids, true, &mp);
	if (old) {
		job->old_id = xdp_program__id(old);
		job->old_fd = bpf_prog_get_fd_by_id(job->old_id);
		job->old_mode = xdp_multiprog__attach_mode(mp);
		job->old_dispatcher = !xdp_multiprog__is_legacy(mp);
	}
	shared = old && job->old_dispatcher && xdp_multiprog__program_count(mp) > 1;
	xdp_multiprog__close(mp);
	if (!old)
		return 0;
	from = mode_name(job->old_mode);
	if (job->old_mode != XDP_MODE_NATIVE && job->old_mode != XDP_MODE_SKB)
		return runtime_err("%s runs sluice in %s mode, which attach does not replace: "
				   "run 'sluice detach %s' first", iface, from, iface);
	if (job->nmodes == 2)
		job->modes[0] = job->old_mode;
	job->nmodes = 1;
	if (job->modes[0] == job->old_mode)
		return 0;
	to = mode_name(job->modes[0]);
	if (shared)
		return usage_err("%s runs sluice in %s mode under libxdp's dispatcher with other XDP "
				 "programs, which cannot change mode with it: nothing changed; unload "
				 "them first (see 'xdp-loader status %s')", iface, from, iface);
	if (!force)
		return usage_err("%s runs sluice in %s mode: changing to %s takes it off the link "
				 "for a moment (the kernel never holds a native and a generic program "
				 "at once); nothing changed: add --force to accept that", iface, from, to);
	job->mode_change = true;
	return 0;
}

/* Checks that change nothing, then the pin directory. */
static int attach_begin(struct attach_job *job, const struct attach_options *o)
{
	int err;

	if (o->mode == ATTACH_SKB)
		job->modes[0] = XDP_MODE_SKB;
	if (validate_ifname(job->iface))
		return EXIT_USAGE;
	if (!(job->ifindex = (int)if_nametoindex(job->iface)))
		return usage_err("no interface '%s': check the name with 'ip link'", job->iface);
	if (check_ethernet(job->iface))
		return EXIT_USAGE;
	if (o->group && pins_group(o->group, &job->gid))
		return EXIT_USAGE;

	err = pin_root_check();
	if (!err)
		err = need_root("attach");
	if (err)
		return err;
	if (!o->group && pins_group(NULL, &job->gid))
		return EXIT_RUNTIME;
	libbpf_set_print(libbpf_quiet);
	libxdp_set_print(libxdp_quiet);
	pin_dir(job->iface, job->dir, sizeof(job->dir));
	err = attach_old(job, o->force);
	if (err)
		return err;
	if (make_dir(pin_root()) || make_dir(job->dir))
		return EXIT_RUNTIME;
	return 0;
}

/* Opens the skeleton on the pinned maps, sized by --max-sources. */
static int attach_open(struct attach_job *job, const struct attach_options *o,
		       const struct cli_args *a)
{
	char path[SLUICE_PATH_MAX];
	int err;

	job->skel = sluice_bpf__open();
	if (!job->skel)
		return runtime_err("cannot open the embedded BPF object: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/%s", job->dir,
		 bpf_map__name(job->skel->maps.src_table));
	job->had_pins = !access(path, F_OK);
	job->sizes.sources = o->max_sources;
	job->sizes.bans = o->max_bans;
	job->sizes.sources_given = a->val[ATTACH_MAX_SOURCES] != NULL;
	job->sizes.bans_given = a->val[ATTACH_MAX_BANS] != NULL;
	job->sizes.est_idle_ns = o->est_idle * SLUICE_NS_PER_SEC;
	job->sizes.est_idle_given = a->val[ATTACH_EST_IDLE] != NULL;
	err = prepare_maps(job->skel, job->dir, job->iface, &job->sizes);
	if (!err && job->had_pins)
		err = upgrade_plan(job->skel, job->dir, job->iface, &job->up);
	if (!err && job->up.any)
		err = upgrade_fill(job->skel, &job->up, job->iface, job->dir);
	return err;
}

/* The error of an attach that found no mode to run in; the previous
 * program, if any, is put back first. */
static int attach_failed(struct attach_job *job, int err)
{
	const char *iface = job->iface, *kept;
	char msg[160];

	libxdp_strerror(err, msg, sizeof(msg));
	kept = restore_old(job->old_fd, job->ifindex, job->gone_mode);
	if (err == -EEXIST || err == -EBUSY)
		return runtime_err("%s already runs another XDP program: remove it first "
				   "(see 'xdp-loader status %s')%s", iface, iface, kept);
	if (err == -EOPNOTSUPP && job->nmodes == 1)
		return runtime_err("cannot attach to %s in %s mode: %s; try --mode skb%s",
				   iface, mode_name(job->modes[0]), msg, kept);
	if (err == -ERANGE)
		return runtime_err("cannot attach to %s: its MTU is too large for this "
				   "driver's XDP; lower it or try --mode skb%s", iface, kept);
	return runtime_err("cannot attach to %s: %s (SLUICE_DEBUG=1 shows libbpf's log)%s",
			   iface, msg, kept);
}

/* The new program through libxdp: a first attach, or one that joins the
 * old program under libxdp's dispatcher. */
static int attach_new(struct attach_job *job)
{
	DECLARE_LIBXDP_OPTS(xdp_program_opts, xopts);
	char msg[160];
	int err = 0;

	xopts.obj = job->skel->obj;
	xopts.prog_name = SLUICE_PROG_NAME;
	job->prog = xdp_program__create(&xopts);
	err = libxdp_get_error(job->prog);
	if (err) {
		job->prog = NULL;
		libxdp_strerror(err, msg, sizeof(msg));
		return runtime_err("cannot prepare the XDP program: %s", msg);
	}
	for (int i = 0; i < job->nmodes; i++) {
		err = xdp_program__attach(job->prog, job->ifindex, job->modes[i], 0);
		if (!err) {
			job->used = job->modes[i];
			break;
		}
	}
	if (job->used < 0)
		return attach_failed(job, err);
	job->prog_fd = xdp_program__fd(job->prog);
	return 0;
}

/*
 * Re-attach: the maps stay and are reused, and the interface is never left
 * without a sluice program. In the same mode, a program running alone is
 * swapped in one request; under libxdp's dispatcher the new one joins the
 * old one (a new dispatcher with both replaces the old in one request, and
 * for that moment both judge each packet), then the old one leaves the same
 * way. In another mode (--force), the new one is loaded and verified, then
 * switched by two requests in one system call (switch_mode).
 */
static int attach_link(struct attach_job *job)
{
	enum xdp_attach_mode swapped_mode = XDP_MODE_UNSPEC;
	int err;

	if (job->mode_change) {
		err = switch_mode(job->skel, job->iface, job->ifindex, job->old_fd, job->old_mode,
				  job->old_dispatcher, job->modes[0], &job->gap_ns);
		if (err < 0) {
			job->gone_mode = job->old_mode;
			return attach_failed(job, err);
		}
		if (err)
			return err;
		job->used = job->modes[0];
		job->prog_fd = bpf_program__fd(job->skel->progs.sluice_xdp);
		return 0;
	}
	err = replace_in_place(job->skel, job->iface, job->ifindex, job->old_id, job->modes,
			       job->nmodes, &swapped_mode);
	if (err == 0) {
		job->used = swapped_mode;
		job->prog_fd = bpf_program__fd(job->skel->progs.sluice_xdp);
		return 0;
	}
	if (err != 1)
		return err;
	err = attach_new(job);
	if (err || !job->old_id || !job->old_dispatcher)
		return err;
	test_hook("joined");
	err = leave_dispatcher(job->ifindex, job->old_id);
	if (err)
		log_event(LOG_WARNING, "%s: the previous program (id %u) stays in libxdp's "
			  "dispatcher beside the new one (%s): both judge each packet until "
			  "'xdp-loader unload -i %u %s'", job->iface, job->old_id, strerror(-err),
			  job->old_id, job->iface);
	return 0;
}

/* The attach as a log line: a warning when auto mode had to fall back to
 * skb (generic) mode, where every packet costs an skb first. With -v, where
 * its pins are and how it runs; with -vv, what it replaced. */
static void attach_log(const struct attach_job *job)
{
	if (job->old_id)
		log_event(LOG_DEBUG, "%s: program id %u replaced program id %u", job->iface,
			  prog_id_of(job->prog_fd), job->old_id);
	else
		log_event(LOG_DEBUG, "%s: no sluice program ran there before", job->iface);
	log_event(LOG_INFO, "%s: pins under %s, readable by group id %u; %s", job->iface, job->dir,
		  (unsigned int)job->gid, job->multiprog ? "under libxdp's dispatcher" :
		  "a single program (no libxdp dispatcher)");
	if (job->mode_change)
		log_event(LOG_NOTICE, "%s: mode changed from %s to %s (--force): the interface was "
			  "unprotected for %.1f ms", job->iface, mode_name(job->old_mode),
			  mode_name(job->used), (double)job->gap_ns / 1e6);
	if (job->auto_mode && job->used == XDP_MODE_SKB)
		log_event(LOG_WARNING, "%s: attached in skb mode: the driver has no native XDP, so "
			  "packets are judged after the kernel made an skb of each (program id "
			  "%u; --mode native refuses instead)", job->iface, prog_id_of(job->prog_fd));
	else
		log_event(LOG_NOTICE, "%s: attached in %s mode (program id %u%s)", job->iface,
			  mode_name(job->used), prog_id_of(job->prog_fd),
			  job->had_pins ? ", state kept" : "");
}

/* The program is on the link: pin it, record it, open the pins to the
 * group, and say so. */
static int attach_finish(struct attach_job *job)
{
	char upgraded[512] = "", changed[96] = "";
	struct xdp_multiprog *mp;
	int err = 0;

	test_hook("attached");
	if (job->up.any) {
		err = upgrade_pin(job->skel, &job->up, job->dir);
		upgrade_words(&job->up, upgraded, sizeof(upgraded));
	}
	upgrade_unlock(&job->up);	/* edits go to the new maps */
	if (err)
		return err;
	mp = xdp_multiprog__get_from_ifindex(job->ifindex);
	if (!libxdp_get_error(mp) && mp)
		job->multiprog = !xdp_multiprog__is_legacy(mp);
	xdp_multiprog__close(mp);

	err = pin_prog(job->dir, job->prog_fd);
	if (!err)
		err = write_meta(job->iface, job->ifindex, job->used, job->multiprog,
				 prog_id_of(job->prog_fd), &job->sizes);
	if (!err)
		err = pins_set_access(job->dir, job->gid);
	if (err) {
		/* A first attach that cannot finish (its metadata or first
		 * policy not written) takes its program off the link again, and
		 * its pins with it (attach_run): nothing half-made stays running.
		 * A re-attach keeps the new program on the old maps. */
		if (!job->had_pins && !job->old_id && job->prog &&
		    !xdp_program__detach(job->prog, job->ifindex, job->used, 0))
			job->used = -1;
		return err;
	}
	if (job->mode_change)
		snprintf(changed, sizeof(changed), ", changed from %s mode (unprotected for "
			 "%.1f ms)", mode_name(job->old_mode), (double)job->gap_ns / 1e6);
	if (!opts.json)
		printf("attached to %s in %s mode (%s), program id %u%s%s%s\n", job->iface,
		       mode_name(job->used),
		       job->multiprog ? "libxdp dispatcher" :
					"single program; libxdp's dispatcher was not used",
		       prog_id_of(job->prog_fd),
		       job->had_pins ? ", state kept from the previous attach" : "", changed,
		       upgraded);
	attach_log(job);
	if (job->up.any)
		upgrade_carry_bans(job->skel, &job->up);
	return 0;
}

static int attach_run(const struct cli_cmd *cmd, struct cli_args *a)
{
	const struct attach_options *o = CLI_OPTIONS(a, struct attach_options);
	struct attach_job job = {
		.iface = a->pos[0],
		.modes = { XDP_MODE_NATIVE, XDP_MODE_SKB },
		.nmodes = o->mode == ATTACH_AUTO ? 2 : 1,
		.auto_mode = o->mode == ATTACH_AUTO,
		.old_fd = -1,
		.old_mode = XDP_MODE_UNSPEC,
		.gone_mode = XDP_MODE_UNSPEC,
		.used = -1,
	};
	int err;

	(void)cmd;
	upgrade_init(&job.up);
	err = attach_begin(&job, o);
	if (err)
		return err;
	err = attach_open(&job, o, a);
	if (!job.skel)
		return err;
	if (!err)
		err = attach_link(&job);
	if (!err)
		err = attach_finish(&job);
	if (job.old_fd >= 0)
		close(job.old_fd);
	xdp_program__close(job.prog);
	upgrade_done(&job.up);
	sluice_bpf__destroy(job.skel);
	/* A first attach that put nothing on the link takes its pins back. */
	if (err && !job.had_pins && job.used < 0 && !job.old_id)
		remove_pins(job.dir);
	return err;
}

const struct cli_cmd attach_cmd = {
	.name = "attach", .path = "attach", .args = "IFACE", .min_pos = 1, .max_pos = 1,
	.opts = attach_opts, .json_quiet = true, .run = attach_run, CLI_DEFAULTS(attach_defaults),
	.help = "Loads sluice on IFACE, or replaces the program there keeping its maps and\n"
		"policy. Pins are root's; the maps are readable by the pins' group.",
};

struct detach_options {
	bool force;
};

static const struct detach_options detach_defaults = { .force = false };

static const struct cli_opt detach_opts[] = {
	CLI_FLAG("force", 0, "remove the pins of an interface that no longer exists",
		 struct detach_options, force),
	CLI_OPT_END,
};

/* A sluice program on ifindex whose pins are gone (removed by hand while it
 * ran): detached, since nothing else could reach it. 1 if there is none. */
static int detach_orphan(const char *iface, int ifindex)
{
	enum xdp_attach_mode was_mode;
	struct xdp_multiprog *mp;
	struct xdp_program *p;
	struct pin_ids none;
	__u32 id;
	int err;

	memset(&none, 0, sizeof(none));
	p = find_prog(ifindex, &none, true, &mp);
	id = p ? xdp_program__id(p) : 0;
	xdp_multiprog__close(mp);
	if (!id)
		return 1;
	err = detach_prog(iface, ifindex, id, &was_mode);
	if (err)
		return err;
	if (!opts.json)
		printf("detached from %s (a sluice program without pins: its policy and counters "
		       "were already gone)\n", iface);
	log_event(LOG_NOTICE, "%s: detached (program id %u, which had no pins)", iface, id);
	return 0;
}

/* Whether the pins of iface must stay: its program (not found on the link
 * here, prog_id 0) may run in another network namespace, or the interface
 * here may not be the one attached to. 0, or the error's exit code. */
static int detach_refuse(const char *iface, int ifindex, const struct pin_ids *ids,
			 __u32 prog_id, bool force)
{
	/* The pins are all that lets sluice reach a program running in a
	 * namespace this one cannot see: never drop them while it runs. */
	if (!prog_id) {
		struct elsewhere where;
		int r = find_elsewhere(iface, ids, &where);

		if (r > 0)
			return runtime_err("%s: its sluice program still runs on %s in network "
					   "namespace %s: detach it there: nsenter --net=%s sluice "
					   "detach %s", iface, where.ifname, where.ns, where.ns,
					   where.ifname);
		if (r < 0 && force)
			return runtime_err("%s: cannot look into other network namespaces, where its "
					   "program may run: run as root", iface);
	}
	/* Pins are keyed by name: refuse to drop them for an interface this
	 * namespace does not see, or that is another one of the same name,
	 * unless told the interface is gone. */
	if (!force && !prog_id &&
	    (!ifindex || (ids->meta_ifindex && ids->meta_ifindex != (__u32)ifindex)))
		return usage_err("%s here is not the interface sluice was attached to: run detach "
				 "in its network namespace (nsenter --net=...), or 'sluice detach "
				 "--force %s' if it is gone", iface, iface);
	return 0;
}

static int detach_run(const struct cli_cmd *c, struct cli_args *a)
{
	enum xdp_attach_mode was_mode;
	struct xdp_multiprog *mp;
	struct xdp_program *ours;
	const char *iface = a->pos[0];
	bool force = CLI_OPTIONS(a, struct detach_options)->force;
	struct pin_ids ids;
	char dir[SLUICE_DIR_MAX];
	int ifindex, err;
	__u32 prog_id;

	(void)c;
	if (validate_ifname(iface))
		return EXIT_USAGE;
	err = pin_root_check();
	if (!err)
		err = need_root("detach");
	if (err)
		return err;
	pin_dir(iface, dir, sizeof(dir));
	ifindex = (int)if_nametoindex(iface);
	libxdp_set_print(libxdp_quiet);
	libbpf_set_print(libbpf_quiet);
	if (access(dir, F_OK)) {
		if (errno == EACCES)
			return runtime_err("cannot read %s: permission denied (run as root)", dir);
		if (!ifindex)
			return usage_err("no interface '%s': check the name with 'ip link'", iface);
		err = detach_orphan(iface, ifindex);
		if (err != 1)
			return err;
		return usage_err("nothing to detach: %s has no sluice program (see 'sluice status')",
				 iface);
	}
	/* The program is found by its pins, by the id attach recorded, or by
	 * the maps it uses: an attach that died half-way leaves at least one. */
	read_pin_ids(dir, &ids);
	ours = find_prog(ifindex, &ids, true, &mp);
	prog_id = ours ? xdp_program__id(ours) : 0;
	xdp_multiprog__close(mp);
	err = detach_refuse(iface, ifindex, &ids, prog_id, force);
	if (err)
		return err;
	test_hook("found");
	for (int tries = 0; prog_id && tries < 4; tries++) {
		err = detach_prog(iface, ifindex, prog_id, &was_mode);
		if (err)
			return err;
		ours = find_prog(ifindex, &ids, true, &mp);
		prog_id = ours ? xdp_program__id(ours) : 0;
		xdp_multiprog__close(mp);
	}
	test_hook("unlinked");
	remove_pins(dir);
	if (!access(dir, F_OK))
		return runtime_err("cannot remove %s: remove it by hand", dir);
	if (!opts.json)
		printf("detached from %s%s\n", iface,
		       ifindex && !force ? "" : " (pins removed; the interface was not seen here, "
						"and its program runs in no network namespace)");
	log_event(LOG_NOTICE, "%s: detached%s", iface, ifindex && !force ? "" : " (pins removed)");
	return 0;
}

const struct cli_cmd detach_cmd = {
	.name = "detach", .path = "detach", .args = "IFACE", .min_pos = 1, .max_pos = 1,
	.opts = detach_opts, .json_quiet = true, .run = detach_run, CLI_DEFAULTS(detach_defaults),
	.help = "Removes the program and its pins from IFACE.",
};
