// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Loading, attaching, finding and detaching the XDP program through libxdp
 * and libbpf, and its pins under <pin root>/<iface>/ (see pins.c). */
#define _GNU_SOURCE	/* setns */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <linux/capability.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "output.h"
#include "steps.h"
#include "pins.h"
#include "maps.h"
#include "map_write.h"
#include "names.h"
#include "clock.h"
#include "policy.h"
#include "store.h"
#include "srctab.h"
#include "bantab.h"
#include "sluice/srctab.h"
#include "xdp_prog.h"
#include "sluice.skel.h"

/* Loading, attaching and pinning need CAP_NET_ADMIN and CAP_SYS_ADMIN (or
 * CAP_BPF): without them every step fails on a permission, and the first
 * one to fail would name a file, not the cause. */
int need_root(const char *what)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = { 0 };
	__u32 eff;

	if (syscall(SYS_capget, &hdr, data))
		return 0;	/* unknown: let the steps say */
	eff = data[0].effective;
#ifdef CAP_BPF
	if (data[CAP_TO_INDEX(CAP_BPF)].effective & CAP_TO_MASK(CAP_BPF))
		eff |= CAP_TO_MASK(CAP_SYS_ADMIN);
#endif
	if ((eff & CAP_TO_MASK(CAP_NET_ADMIN)) && (eff & CAP_TO_MASK(CAP_SYS_ADMIN)))
		return 0;
	return runtime_err("%s needs CAP_NET_ADMIN and CAP_SYS_ADMIN (or CAP_BPF): run as root",
			   what);
}

/* The sluice program attached to ifindex, if any (caller closes both). */
static struct xdp_program *find_attached(int ifindex, __u32 prog_id,
					 struct xdp_multiprog **mpp)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p;

	*mpp = NULL;
	if (libxdp_get_error(mp) || !mp)
		return NULL;
	*mpp = mp;
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		return p && xdp_program__id(p) == prog_id ? p : NULL;
	}
	for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp))
		if (xdp_program__id(p) == prog_id)
			return p;
	return NULL;
}

static __u32 pin_prog_id(const char *dir, const char *name)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	char path[SLUICE_PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		info.id = 0;
	close(fd);
	return info.id;
}

void read_pin_ids(const char *dir, struct pin_ids *ids)
{
	struct bpf_obj_get_opts ro = { .sz = sizeof(ro), .file_flags = BPF_F_RDONLY };
	struct sluice_bpf *skel = sluice_bpf__open();
	struct sluice_meta meta = { 0 };
	char path[SLUICE_PATH_MAX];
	struct bpf_map *map;
	__u32 zero = 0;
	int fd;

	memset(ids, 0, sizeof(*ids));
	ids->prog[0] = pin_prog_id(dir, SLUICE_PROG_PIN);
	ids->prog[1] = pin_prog_id(dir, SLUICE_PROG_PIN_NEW);
	if (!skel)
		return;
	bpf_object__for_each_map(map, skel->obj) {
		snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(map));
		fd = bpf_obj_get_opts(path, &ro);
		if (fd < 0)
			continue;
		if (map == skel->maps.meta && !bpf_map_lookup_elem(fd, &zero, &meta)) {
			ids->prog[2] = meta.prog_id;
			ids->meta_ifindex = meta.ifindex;
		}
		if (ids->nmaps < sizeof(ids->maps) / sizeof(ids->maps[0]))
			ids->maps[ids->nmaps++] = map_id(fd);
		close(fd);
	}
	sluice_bpf__destroy(skel);
}

/* Ours: a program these pins record, or one using these pinned maps (an
 * attach killed before it recorded its program leaves only that trace). */
static bool is_ours(struct xdp_program *p, const struct pin_ids *ids)
{
	__u32 id = xdp_program__id(p), map_ids[64];
	struct bpf_prog_info info = { .nr_map_ids = 64,
				      .map_ids = (__u64)(unsigned long)map_ids };
	__u32 len = sizeof(info);

	for (int i = 0; i < 3; i++)
		if (id && ids->prog[i] == id)
			return true;
	if (!ids->nmaps || bpf_obj_get_info_by_fd(xdp_program__fd(p), &info, &len))
		return false;
	for (__u32 i = 0; i < info.nr_map_ids && i < 64; i++)
		for (unsigned int j = 0; j < ids->nmaps; j++)
			if (ids->maps[j] && map_ids[i] == ids->maps[j])
				return true;
	return false;
}

/* A sluice program by its name, whatever pins it had: one whose pins were
 * removed while it ran is still sluice's to replace or detach. */
static bool is_sluice(struct xdp_program *p)
{
	const char *name = xdp_program__name(p);

	return name && !strcmp(name, SLUICE_PROG_NAME);
}

/* The program of these pins attached to ifindex, if any (caller closes
 * *mpp); with orphans, else a sluice program that lost its pins. */
struct xdp_program *find_prog(int ifindex, const struct pin_ids *ids, bool orphans,
			      struct xdp_multiprog **mpp)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p, *orphan = NULL;

	*mpp = NULL;
	if (!ifindex)
		return NULL;
	mp = xdp_multiprog__get_from_ifindex(ifindex);
	if (libxdp_get_error(mp) || !mp)
		return NULL;
	*mpp = mp;
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		return p && (is_ours(p, ids) || (orphans && is_sluice(p))) ? p : NULL;
	}
	for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp)) {
		if (is_ours(p, ids))
			return p;
		if (orphans && !orphan && is_sluice(p))
			orphan = p;
	}
	return orphan;
}

struct xdp_program *find_ours(int ifindex, const struct pin_ids *ids,
			      struct xdp_multiprog **mpp)
{
	return find_prog(ifindex, ids, false, mpp);
}

#define NETNS_SEEN_MAX	1024	/* namespaces looked into, at most */

/* Looks in the namespace open at fd for a program of these pins: on the
 * interface named iface first, then on every interface there. */
static int look_in_netns(int fd, const char *iface, const struct pin_ids *ids,
			 struct elsewhere *out)
{
	struct if_nameindex *all, *i;
	struct xdp_multiprog *mp;
	bool found = false;

	if (setns(fd, CLONE_NEWNET))
		return -1;
	found = find_ours((int)if_nametoindex(iface), ids, &mp) != NULL;
	xdp_multiprog__close(mp);
	if (found) {
		snprintf(out->ifname, sizeof(out->ifname), "%s", iface);
		return true;
	}
	all = if_nameindex();
	for (i = all; i && i->if_index && !found; i++) {
		found = find_ours((int)i->if_index, ids, &mp) != NULL;
		xdp_multiprog__close(mp);
		if (found)
			snprintf(out->ifname, sizeof(out->ifname), "%s", i->if_name);
	}
	if (all)
		if_freenameindex(all);
	return found ? 1 : 0;
}

/*
 * Whether the program of these pins runs in another network namespace:
 * those /run/netns names, then those of running processes, each entered
 * (root only) and left again. Returns 1 found (out says where), 0 not
 * found, -1 when the namespaces could not be entered (not root).
 */
int find_elsewhere(const char *iface, const struct pin_ids *ids, struct elsewhere *out)
{
	static const char *const dirs[] = { "/run/netns", "/proc" };
	ino_t seen[NETNS_SEEN_MAX];
	unsigned int nseen = 0;
	char path[300];
	struct stat st;
	int own, found = 0, denied = 0;

	own = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (own < 0 || fstat(own, &st)) {
		if (own >= 0)
			close(own);
		return -1;
	}
	seen[nseen++] = st.st_ino;
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]) && !found; d++) {
		DIR *dir = opendir(dirs[d]);
		const struct dirent *e;

		while (dir && !found && nseen < NETNS_SEEN_MAX && (e = readdir(dir))) {
			bool dup = false;
			int fd;

			if (e->d_name[0] == '.' || (d == 1 && (e->d_name[0] < '1' || e->d_name[0] > '9')))
				continue;
			snprintf(path, sizeof(path), d ? "/proc/%s/ns/net" : "/run/netns/%s", e->d_name);
			fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			if (fstat(fd, &st)) {
				close(fd);
				continue;
			}
			for (unsigned int k = 0; k < nseen && !dup; k++)
				dup = seen[k] == st.st_ino;
			if (!dup) {
				seen[nseen++] = st.st_ino;
				int r = look_in_netns(fd, iface, ids, out);

				if (r > 0) {
					snprintf(out->ns, sizeof(out->ns), "%.63s", path);
					found = 1;
				} else if (r < 0) {
					denied = 1;
				}
			}
			close(fd);
		}
		if (dir)
			closedir(dir);
	}
	if (setns(own, CLONE_NEWNET))
		found = -1;	/* cannot happen to root; then nothing here is to be trusted */
	close(own);
	return found ? found : denied ? -1 : 0;
}

/* Detach the sluice program prog_id; *was_mode says in which mode it ran
 * (XDP_MODE_UNSPEC if it was not attached). */
int detach_prog(const char *iface, int ifindex, __u32 prog_id,
		enum xdp_attach_mode *was_mode)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p;
	int err = 0;

	*was_mode = XDP_MODE_UNSPEC;
	if (!ifindex || !prog_id)
		return 0;
	p = find_attached(ifindex, prog_id, &mp);
	if (p) {
		*was_mode = xdp_multiprog__attach_mode(mp);
		err = xdp_program__detach(p, ifindex, *was_mode, 0);
		if (err) {
			char buf[128];

			libxdp_strerror(err, buf, sizeof(buf));
			err = runtime_err("cannot detach from %s: %s", iface, buf);
		}
	}
	xdp_multiprog__close(mp);
	return err;
}

/* The netlink flag of a mode (native or skb). */
static __u32 mode_flags(enum xdp_attach_mode mode)
{
	return mode == XDP_MODE_NATIVE ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE;
}

/* Under libxdp's dispatcher, once the new program joined it, the old one
 * leaves: a dispatcher without it replaces the one with both, in one
 * request. 0, or a negative errno (then both still run). */
int leave_dispatcher(int ifindex, __u32 old_id)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p = find_attached(ifindex, old_id, &mp);
	int err = 0;

	if (p)
		err = xdp_program__detach(p, ifindex, xdp_multiprog__attach_mode(mp), 0);
	xdp_multiprog__close(mp);
	return err;
}

/* A re-attach that failed puts the previous program back where it was, so
 * the interface is never left unprotected by a bad --mode. old_fd holds it
 * loaded even when no pin does. */
const char *restore_old(int old_fd, int ifindex, enum xdp_attach_mode mode)
{
	static const char lost[] = " (the previous program is gone too: nothing limits the interface)";
	struct xdp_program *old;
	int err;

	if (mode == XDP_MODE_UNSPEC)
		return "";
	if (old_fd < 0)
		return lost;
	/* As it ran alone: one request. A program of libxdp's dispatcher
	 * cannot be attached so; libxdp puts it back under a dispatcher. */
	if (!bpf_xdp_attach(ifindex, old_fd, XDP_FLAGS_UPDATE_IF_NOEXIST | mode_flags(mode), NULL))
		return " (the previous program is still attached)";
	old = xdp_program__from_fd(old_fd);
	if (libxdp_get_error(old))
		return lost;
	err = xdp_program__attach(old, ifindex, mode, 0);
	xdp_program__close(old);
	return err ? lost : " (the previous program is still attached)";
}

void remove_pins(const char *dir)
{
	static const char *const extra[] = { SLUICE_PROG_PIN, SLUICE_PROG_PIN_NEW,
					     SLUICE_RETIRED_PIN };
	struct sluice_bpf *skel = sluice_bpf__open();
	struct bpf_map *map;
	char path[SLUICE_PATH_MAX];

	if (skel) {
		bpf_object__for_each_map(map, skel->obj) {
			snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(map));
			unlink(path);
			test_hook("unpinning");
		}
		sluice_bpf__destroy(skel);
	}
	test_hook("maps_unpinned");
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, extra[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, SLUICE_LOCK_PIN);
	rmdir(path);
	test_hook("unpinned");
	rmdir(dir);
}

int libxdp_quiet(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBXDP_WARN)
		log_lines(LOG_DEBUG, fmt, ap);
	return 0;
}

int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level <= LIBBPF_INFO)
		log_lines(LOG_DEBUG, fmt, ap);
	return 0;
}

/* Point every map at its pin so libbpf reuses existing state, and size the
 * source table: the pinned one's size wins unless --max-sources disagrees. */
/* The maps attach sizes, set to the sizes of their pins under dir. */
static int pinned_sizes(struct sluice_bpf *skel, const char *dir)
{
	struct bpf_map *sized[] = { skel->maps.src_table, skel->maps.src_counts };
	char path[SLUICE_PATH_MAX];
	__u32 cap;
	int fd;

	for (size_t i = 0; i < sizeof(sized) / sizeof(sized[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(sized[i]));
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;	/* made afresh, as on a first attach */
		cap = map_capacity(fd);
		close(fd);
		if (!cap || bpf_map__set_max_entries(sized[i], cap))
			return runtime_err("cannot size %s as its pin", bpf_map__name(sized[i]));
	}
	return 0;
}

/* The ban table's capacity in the config pinned under dir (0: unknown). */
static __u64 pinned_ban_capacity(const char *dir)
{
	struct sluice_config cfg;
	char path[SLUICE_PATH_MAX];
	__u32 zero = 0;
	int fd, err;

	snprintf(path, sizeof(path), "%s/config", dir);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	err = bpf_map_lookup_elem(fd, &zero, &cfg);
	close(fd);
	return err ? 0 : cfg.ban_capacity;
}

int prepare_maps(struct sluice_bpf *skel, const char *dir, const char *iface,
		 const struct table_sizes *sz)
{
	struct bpf_map *map;
	char path[SLUICE_PATH_MAX];
	int fd;

	bpf_object__for_each_map(map, skel->obj) {
		snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(map));
		if (bpf_map__set_pin_path(map, path))
			return runtime_err("cannot set pin path %s", path);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(skel->maps.src_table));
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		__u32 cap = map_capacity(fd);

		close(fd);
		if (sz->sources_given && cap != srctab_buckets(sz->sources))
			return usage_err("%s keeps its source table across attaches: "
					 "run 'sluice detach %s' first to change --max-sources",
					 iface, iface);
		if (sz->bans_given && pinned_ban_capacity(dir) != sz->bans)
			return usage_err("%s keeps its ban table across attaches: "
					 "run 'sluice detach %s' first to change --max-bans",
					 iface, iface);
		/* The pins are reused: sized as they are, or libbpf refuses them. */
		return pinned_sizes(skel, dir);
	}
	if (srctab_size(skel->maps.src_table, skel->maps.src_counts, sz->sources))
		return runtime_err("cannot size the source table");
	return 0;
}

int write_meta(const char *iface, int ifindex, enum xdp_attach_mode mode,
	       bool multiprog, __u32 prog_id, const struct table_sizes *sz)
{
	struct sluice_maps m;
	struct sluice_meta meta = {
		.ifindex = (__u32)ifindex,
		.xdp_mode = mode,
		.multiprog = multiprog,
		.prog_id = prog_id,
		.attached_at = (__u64)time(NULL),
	};
	struct sluice_config cfg;
	struct policy *p;
	__u32 zero = 0;
	int err;

	err = maps_open(iface, &m);
	if (err)
		return err;
	/* Locked before the generation is read: an edit running meanwhile
	 * either comes first (and is kept) or waits for this commit. */
	err = maps_lock(&m);
	if (err)
		goto out;
	if (map_update(m.meta, &zero, &meta, BPF_ANY)) {
		err = runtime_err("cannot write attach metadata: %s", strerror(errno));
		goto out;
	}
	/* A new source table gets its seed before any policy limits: until
	 * then every packet is allowed and none needs a slot. */
	if (srctab_init(&m, sz->sources)) {
		err = runtime_err("cannot set up the source table: %s", strerror(errno));
		goto out;
	}
	if (srctab_set_idle(&m, sz->est_idle_given ? sz->est_idle_ns : 0)) {
		err = runtime_err("cannot set the source table's idle time: %s", strerror(errno));
		goto out;
	}
	if (bantab_init(&m, sz->bans)) {
		err = runtime_err("cannot set up the ban table: %s", strerror(errno));
		goto out;
	}
	/* Fresh maps: commit the initial policy (default: not limited). */
	if (!bpf_map_lookup_elem(m.config, &zero, &cfg) && SLUICE_GEN(cfg.gen_slot) == 0) {
		p = malloc(sizeof(*p));
		if (!p) {
			err = runtime_err("out of memory");
			goto out;
		}
		policy_init(p);
		test_hook("gen");
		err = policy_commit(&m, p);
		free(p);
	}
out:
	maps_close(&m);
	return err;
}

__u32 prog_id_of(int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/*
 * Re-attach where the previous program runs alone (libxdp's single-program
 * mode): load the new one and swap it in with one netlink request
 * (XDP_FLAGS_REPLACE), so no packet meets the interface unprotected.
 * Returns 0 when swapped, 1 when this does not apply (no old program, the
 * dispatcher, or another mode asked for), or an exit code on failure.
 */
int replace_in_place(struct sluice_bpf *skel, const char *iface, int ifindex,
		     __u32 old_id, const enum xdp_attach_mode *modes, int nmodes,
		     enum xdp_attach_mode *used)
{
	struct xdp_multiprog *mp;
	struct xdp_program *old;
	enum xdp_attach_mode mode;
	__u32 flags;
	int err;

	if (!old_id)
		return 1;
	old = find_attached(ifindex, old_id, &mp);
	mode = mp ? xdp_multiprog__attach_mode(mp) : XDP_MODE_UNSPEC;
	if (!old || !xdp_multiprog__is_legacy(mp) ||
	    (mode != XDP_MODE_NATIVE && mode != XDP_MODE_SKB) ||
	    (nmodes == 1 && modes[0] != mode)) {
		xdp_multiprog__close(mp);
		return 1;
	}
	err = sluice_bpf__load(skel);
	if (err) {
		xdp_multiprog__close(mp);
		return runtime_err("cannot load the XDP program: %s (SLUICE_DEBUG=1 shows the "
				   "verifier's log)", strerror(-err));
	}
	{
		struct bpf_xdp_attach_opts ao = { .sz = sizeof(ao),
						  .old_prog_fd = xdp_program__fd(old) };

		flags = XDP_FLAGS_REPLACE | mode_flags(mode);
		err = bpf_xdp_attach(ifindex, bpf_program__fd(skel->progs.sluice_xdp), flags, &ao);
	}
	xdp_multiprog__close(mp);
	if (err)
		return runtime_err("cannot replace the program on %s: %s (the previous one still "
				   "runs)", iface, strerror(-err));
	*used = mode;
	return 0;
}

/* The new program is on the link: pin it under a temporary name and rename
 * that over the old pin, so that the program pin is never missing. */
int pin_prog(const char *dir, int prog_fd)
{
	char path[SLUICE_PATH_MAX], next[SLUICE_PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, SLUICE_PROG_PIN);
	snprintf(next, sizeof(next), "%s/%s", dir, SLUICE_PROG_PIN_NEW);
	unlink(next);	/* left by an attach that died */
	if (bpf_obj_pin(prog_fd, next))
		return runtime_err("cannot pin the program at %s: %s", next, strerror(errno));
	test_hook("pinned");
	if (rename(next, path))
		return runtime_err("cannot rename %s to %s: %s", next, path, strerror(errno));
	test_hook("renamed");
	return 0;
}

/* One RTM_SETLINK request that sets the XDP program of a device (fd -1:
 * none), in the mode of flags; with XDP_FLAGS_REPLACE only over expected. */
struct xdp_req {
	struct nlmsghdr nh;
	struct ifinfomsg ifi;
	char attrs[4 * NLA_HDRLEN + 3 * sizeof(__s32)];
};

static void req_attr(struct xdp_req *r, unsigned short type, __s32 val)
{
	struct nlattr *a = (struct nlattr *)((char *)r + NLMSG_ALIGN(r->nh.nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + sizeof(val);
	memcpy((char *)a + NLA_HDRLEN, &val, sizeof(val));
	r->nh.nlmsg_len = NLMSG_ALIGN(r->nh.nlmsg_len) + NLA_ALIGN(a->nla_len);
}

static void xdp_req(struct xdp_req *r, __u32 seq, int ifindex, int fd, __u32 flags,
		    int expected)
{
	struct nlattr *nest;

	memset(r, 0, sizeof(*r));
	r->nh.nlmsg_len = NLMSG_LENGTH(sizeof(r->ifi));
	r->nh.nlmsg_type = RTM_SETLINK;
	r->nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	r->nh.nlmsg_seq = seq;
	r->ifi.ifi_family = AF_UNSPEC;
	r->ifi.ifi_index = ifindex;
	nest = (struct nlattr *)((char *)r + NLMSG_ALIGN(r->nh.nlmsg_len));
	nest->nla_type = NLA_F_NESTED | IFLA_XDP;
	r->nh.nlmsg_len = NLMSG_ALIGN(r->nh.nlmsg_len) + NLA_HDRLEN;
	req_attr(r, IFLA_XDP_FD, fd);
	req_attr(r, IFLA_XDP_FLAGS, (__s32)flags);
	if (flags & XDP_FLAGS_REPLACE)
		req_attr(r, IFLA_XDP_EXPECTED_FD, expected);
	nest->nla_len = (__u16)((char *)r + r->nh.nlmsg_len - (char *)nest);
}

/*
 * Both requests of a mode change in one sendmsg: the kernel takes the old
 * program off and puts the new one on in one system call, so no scheduling
 * of this process comes between them. err[0], err[1]: each one's answer
 * (0 or a negative errno). Returns 0 when both were answered, else -errno.
 */
static int swap_modes(int ifindex, int old_fd, __u32 old_flags, int new_fd, __u32 new_flags,
		      int err[2])
{
	struct xdp_req req[2];
	struct iovec iov[2];
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = 2 };
	char buf[4096] __attribute__((aligned(NLMSG_ALIGNTO)));
	int fd, answered = 0, r = 0;

	xdp_req(&req[0], 1, ifindex, -1, old_flags | XDP_FLAGS_REPLACE, old_fd);
	xdp_req(&req[1], 2, ifindex, new_fd, new_flags | XDP_FLAGS_UPDATE_IF_NOEXIST, -1);
	for (int i = 0; i < 2; i++)
		iov[i] = (struct iovec){ .iov_base = &req[i], .iov_len = req[i].nh.nlmsg_len };
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (sendmsg(fd, &msg, 0) < 0)
		r = -errno;
	while (!r && answered != 3) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		const struct nlmsghdr *nh = (const struct nlmsghdr *)buf;

		if (len < 0 && errno != EINTR)
			r = -errno;
		else if (len == 0)
			r = -EIO;
		for (; len > 0 && NLMSG_OK(nh, (size_t)len); nh = NLMSG_NEXT(nh, len)) {
			const struct nlmsgerr *e = NLMSG_DATA(nh);

			if (nh->nlmsg_type != NLMSG_ERROR || nh->nlmsg_seq < 1 || nh->nlmsg_seq > 2)
				continue;
			err[nh->nlmsg_seq - 1] = e->error;
			answered |= 1 << (nh->nlmsg_seq - 1);
		}
	}
	close(fd);
	return r;
}

/*
 * A re-attach in another mode (attach --force): the kernel never holds a
 * native and a generic program on one device at once, so this cannot be
 * one request. The new program is loaded and verified first; then the old
 * one is taken off and the new one put on by two requests in one system
 * call (under libxdp's dispatcher, which goes with the old one: two calls),
 * the only moment the interface is unprotected (*gap_ns long, at most: the
 * time from before the first request to after the second's answer).
 * Returns 0, an exit code when the old one still runs, or a negative errno
 * when the new mode was refused after the old program went (the caller
 * puts it back, restore_old).
 */
int switch_mode(struct sluice_bpf *skel, const char *iface, int ifindex, int old_fd,
		enum xdp_attach_mode old_mode, bool dispatcher, enum xdp_attach_mode mode,
		__u64 *gap_ns)
{
	struct xdp_multiprog *mp = NULL;
	int err, new_fd, ans[2] = { 0, 0 };

	err = sluice_bpf__load(skel);
	if (err)
		return runtime_err("cannot load the XDP program: %s (SLUICE_DEBUG=1 shows the "
				   "verifier's log; the previous one still runs)", strerror(-err));
	new_fd = bpf_program__fd(skel->progs.sluice_xdp);
	*gap_ns = mono_now_ns();
	if (dispatcher) {
		mp = xdp_multiprog__get_from_ifindex(ifindex);
		ans[0] = libxdp_get_error(mp) || !mp ? -ENOENT : xdp_multiprog__detach(mp);
		xdp_multiprog__close(mp);
		if (!ans[0]) {
			test_hook("detached");
			ans[1] = bpf_xdp_attach(ifindex, new_fd, XDP_FLAGS_UPDATE_IF_NOEXIST |
						mode_flags(mode), NULL);
		}
	} else {
		err = swap_modes(ifindex, old_fd, mode_flags(old_mode), new_fd, mode_flags(mode),
				 ans);
		if (err)
			ans[0] = err;
	}
	*gap_ns = mono_now_ns() - *gap_ns;
	if (ans[0] && (dispatcher || ans[1]))
		return runtime_err("cannot take the previous program off %s: %s (it still runs, "
				   "in %s mode)", iface, strerror(-ans[0]), mode_name(old_mode));
	return ans[1] < 0 ? ans[1] : ans[1] ? -EINVAL : 0;
}
