// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* attach, detach, status: loading the XDP program through libxdp, pinning
 * it and its maps under <pin root>/<iface>/ (see pins.c), and reporting on it. */
#define _GNU_SOURCE	/* setns */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <linux/capability.h>
#include <linux/if_link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "sluice.h"
#include "rule.h"
#include "cli.h"
#include "sluice.skel.h"

/* Test-only: SLUICE_TEST_HOOK=STEP:kill (or STEP:stop) kills (stops)
 * attach or detach at STEP, so tests can check what a crash there leaves
 * behind, or run another command in the middle of one. */
static void test_hook(const char *step)
{
	const char *hook = getenv("SLUICE_TEST_HOOK");
	size_t n = strlen(step);

	if (!hook || strncmp(hook, step, n) != 0 || hook[n] != ':')
		return;
	fflush(stdout);
	raise(strcmp(hook + n + 1, "stop") ? SIGKILL : SIGSTOP);
}

/* Loading, attaching and pinning need CAP_NET_ADMIN and CAP_SYS_ADMIN (or
 * CAP_BPF): without them every step fails on a permission, and the first
 * one to fail would name a file, not the cause. */
static int need_root(const char *what)
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

static int make_dir(const char *path)
{
	if (mkdir(path, 0700) && errno != EEXIST)
		return runtime_err("cannot create %s: %s", path, strerror(errno));
	return 0;
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

/* What identifies the program of one pin directory: the ids the prog pins
 * and the attach metadata record, and the ids of the pinned maps. */
struct pin_ids {
	__u32 prog[3];
	__u32 maps[16];
	unsigned int nmaps;
	__u32 meta_ifindex;	/* 0: no attach got as far as writing it */
};

static void read_pin_ids(const char *dir, struct pin_ids *ids)
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

/* The XDP program's name, as the kernel reports it (16 bytes at most). */
#define SLUICE_PROG_NAME	"sluice_xdp"

/* A sluice program by its name, whatever pins it had: one whose pins were
 * removed while it ran is still sluice's to replace or detach. */
static bool is_sluice(struct xdp_program *p)
{
	const char *name = xdp_program__name(p);

	return name && !strcmp(name, SLUICE_PROG_NAME);
}

/* The program of these pins attached to ifindex, if any (caller closes
 * *mpp); with orphans, else a sluice program that lost its pins. */
static struct xdp_program *find_prog(int ifindex, const struct pin_ids *ids, bool orphans,
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

static struct xdp_program *find_ours(int ifindex, const struct pin_ids *ids,
				     struct xdp_multiprog **mpp)
{
	return find_prog(ifindex, ids, false, mpp);
}

/* Where a program of these pins runs outside this network namespace. */
struct elsewhere {
	char ns[64];		/* /run/netns/NAME, or /proc/PID/ns/net */
	char ifname[IF_NAMESIZE];
};

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
static int find_elsewhere(const char *iface, const struct pin_ids *ids, struct elsewhere *out)
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
static int detach_prog(const char *iface, int ifindex, __u32 prog_id,
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

/* A re-attach that failed puts the previous program back where it was, so
 * the interface is never left unprotected by a bad --mode. old_fd holds it
 * loaded even when no pin does. */
static const char *restore_old(int old_fd, int ifindex, enum xdp_attach_mode mode)
{
	static const char lost[] = " (the previous program is gone too: nothing limits the interface)";
	struct xdp_program *old;
	int err;

	if (mode == XDP_MODE_UNSPEC)
		return "";
	if (old_fd < 0)
		return lost;
	old = xdp_program__from_fd(old_fd);
	if (libxdp_get_error(old))
		return lost;
	err = xdp_program__attach(old, ifindex, mode, 0);
	xdp_program__close(old);
	return err ? lost : " (the previous program is still attached)";
}

static void remove_pins(const char *dir)
{
	static const char *const extra[] = { SLUICE_PROG_PIN, SLUICE_PROG_PIN_NEW };
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
	test_hook("unpinned");
	rmdir(dir);
}

static int libxdp_quiet(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBXDP_WARN && getenv("SLUICE_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	return 0;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (getenv("SLUICE_DEBUG") && level <= LIBBPF_INFO)
		return vfprintf(stderr, fmt, ap);
	return 0;
}

/* Point every map at its pin so libbpf reuses existing state, and size the
 * source table: the pinned one's size wins unless --max-sources disagrees. */
static int prepare_maps(struct sluice_bpf *skel, const char *dir, const char *iface,
			__u64 max_sources, bool max_given)
{
	struct bpf_map *map;
	char path[SLUICE_PATH_MAX];
	int fd;

	bpf_object__for_each_map(map, skel->obj) {
		snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(map));
		if (bpf_map__set_pin_path(map, path))
			return runtime_err("cannot set pin path %s", path);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(skel->maps.src_buckets));
	fd = bpf_obj_get(path);
	if (fd >= 0) {
		__u32 cap = map_capacity(fd);

		close(fd);
		if (max_given && cap != max_sources)
			return usage_err("%s keeps its %u-source table across attaches: "
					 "run 'sluice detach %s' first to change --max-sources",
					 iface, cap, iface);
		max_sources = cap;
	}
	if (bpf_map__set_max_entries(skel->maps.src_buckets, (__u32)max_sources))
		return runtime_err("cannot size the source table");
	return 0;
}

static int write_meta(const char *iface, int ifindex, enum xdp_attach_mode mode,
		      bool multiprog, __u32 prog_id)
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

static __u32 prog_id_of(int fd)
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
static int replace_in_place(struct sluice_bpf *skel, const char *iface, int ifindex,
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

		flags = XDP_FLAGS_REPLACE |
			(mode == XDP_MODE_NATIVE ? XDP_FLAGS_DRV_MODE : XDP_FLAGS_SKB_MODE);
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
static int pin_prog(const char *dir, int prog_fd)
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

/* --mode's words, by their index in attach_options.mode. */
enum { ATTACH_NATIVE, ATTACH_SKB, ATTACH_AUTO };
static const char *const attach_modes[] = {
	[ATTACH_NATIVE] = "native", [ATTACH_SKB] = "skb", [ATTACH_AUTO] = "auto", NULL,
};

struct attach_options {
	int mode;
	__u64 max_sources;
	const char *group;	/* NULL: SLUICE_PIN_GROUP, created if missing */
};

static const struct attach_options attach_defaults = {
	.mode = ATTACH_AUTO,
	.max_sources = SLUICE_MAX_SOURCES_DEFAULT,
};

enum { ATTACH_MODE, ATTACH_MAX_SOURCES, ATTACH_GROUP };

static const struct cli_opt attach_opts[] = {
	[ATTACH_MODE] = CLI_ENUM("mode", 0, "native|skb|auto",
				 "XDP mode; auto tries native, then skb", struct attach_options,
				 mode, attach_modes),
	[ATTACH_MAX_SOURCES] = CLI_U64("max-sources", 0, "N", "size of the source table",
				       struct attach_options, max_sources, SLUICE_MAX_SOURCES_MIN,
				       SLUICE_MAX_SOURCES_MAX, "sources"),
	[ATTACH_GROUP] = CLI_STR("group", 0, "NAME",
				 "group that may read the pins (default 'sluice', created if missing)",
				 struct attach_options, group),
	CLI_OPT_END,
};

static int attach_run(const struct cli_cmd *cmd, struct cli_args *a)
{
	const struct attach_options *o = CLI_OPTIONS(a, struct attach_options);
	enum xdp_attach_mode modes[2] = { XDP_MODE_NATIVE, XDP_MODE_SKB };
	int nmodes = o->mode == ATTACH_AUTO ? 2 : 1, ifindex, err, used = -1, old_fd = -1;
	__u64 max_sources = o->max_sources;
	bool max_given = a->val[ATTACH_MAX_SOURCES] != NULL, multiprog = false, had_pins;
	DECLARE_LIBXDP_OPTS(xdp_program_opts, xopts);
	struct xdp_multiprog *mp = NULL;
	struct xdp_program *prog = NULL, *old;
	struct sluice_bpf *skel = NULL;
	char dir[SLUICE_DIR_MAX], path[SLUICE_PATH_MAX], msg[160];
	const char *iface, *group = o->group;
	enum xdp_attach_mode old_mode = XDP_MODE_UNSPEC, swapped_mode = XDP_MODE_UNSPEC;
	struct pin_ids ids;
	const char *kept;
	int prog_fd;
	__u32 old_id = 0;
	gid_t gid;

	(void)cmd;
	if (o->mode == ATTACH_SKB)
		modes[0] = XDP_MODE_SKB;
	iface = a->pos[0];
	if (check_ifname(iface))
		return EXIT_USAGE;
	if (!(ifindex = (int)if_nametoindex(iface)))
		return usage_err("no interface '%s': check the name with 'ip link'", iface);
	if (group && pins_group(group, &gid))
		return EXIT_USAGE;

	err = pin_root_check();
	if (!err)
		err = need_root("attach");
	if (err)
		return err;
	if (!group && pins_group(NULL, &gid))
		return EXIT_RUNTIME;
	pin_dir(iface, dir, sizeof(dir));
	if (make_dir(pin_root()) || make_dir(dir))
		return EXIT_RUNTIME;
	libbpf_set_print(libbpf_quiet);
	libxdp_set_print(libxdp_quiet);

	skel = sluice_bpf__open();
	if (!skel)
		return runtime_err("cannot open the embedded BPF object: %s", strerror(errno));
	snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(skel->maps.src_buckets));
	had_pins = !access(path, F_OK);
	err = prepare_maps(skel, dir, iface, max_sources, max_given);
	if (err)
		goto out;

	/* Re-attach: the maps stay and are reused; the program is swapped in
	 * one step where it can be, else the old one goes first. The old one
	 * is whatever program of these pins runs here, recorded or not, and
	 * is held open so that it can be put back. */
	read_pin_ids(dir, &ids);
	old = find_prog(ifindex, &ids, true, &mp);
	if (old) {
		old_id = xdp_program__id(old);
		old_fd = bpf_prog_get_fd_by_id(old_id);
	}
	xdp_multiprog__close(mp);
	mp = NULL;
	err = replace_in_place(skel, iface, ifindex, old_id, modes, nmodes, &swapped_mode);
	if (err == 0) {
		used = swapped_mode;
		prog_fd = bpf_program__fd(skel->progs.sluice_xdp);
		goto attached;
	}
	if (err != 1)
		goto out;
	err = detach_prog(iface, ifindex, old_id, &old_mode);
	if (err)
		goto out;
	test_hook("detached");

	xopts.obj = skel->obj;
	xopts.prog_name = SLUICE_PROG_NAME;
	prog = xdp_program__create(&xopts);
	err = libxdp_get_error(prog);
	if (err) {
		prog = NULL;
		libxdp_strerror(err, msg, sizeof(msg));
		err = runtime_err("cannot prepare the XDP program: %s", msg);
		goto out;
	}
	for (int i = 0; i < nmodes; i++) {
		err = xdp_program__attach(prog, ifindex, modes[i], 0);
		if (!err) {
			used = modes[i];
			break;
		}
	}
	if (used < 0) {
		libxdp_strerror(err, msg, sizeof(msg));
		kept = restore_old(old_fd, ifindex, old_mode);
		if (err == -EEXIST || err == -EBUSY)
			err = runtime_err("%s already runs another XDP program: remove it first "
					  "(see 'xdp-loader status %s')%s", iface, iface, kept);
		else if (err == -EOPNOTSUPP && nmodes == 1)
			err = runtime_err("cannot attach to %s in %s mode: %s; try --mode skb%s",
					  iface, mode_name(modes[0]), msg, kept);
		else if (err == -ERANGE)
			err = runtime_err("cannot attach to %s: its MTU is too large for this "
					  "driver's XDP; lower it or try --mode skb%s", iface, kept);
		else
			err = runtime_err("cannot attach to %s: %s (SLUICE_DEBUG=1 shows libbpf's log)%s",
					  iface, msg, kept);
		goto out;
	}

	prog_fd = xdp_program__fd(prog);
attached:
	test_hook("attached");
	mp = xdp_multiprog__get_from_ifindex(ifindex);
	if (!libxdp_get_error(mp) && mp)
		multiprog = !xdp_multiprog__is_legacy(mp);
	xdp_multiprog__close(mp);

	err = pin_prog(dir, prog_fd);
	if (!err)
		err = write_meta(iface, ifindex, used, multiprog, prog_id_of(prog_fd));
	if (!err)
		err = pins_set_access(dir, gid);
	if (err) {
		/* A first attach that cannot finish (its metadata or first
		 * policy not written) takes its program off the link again, and
		 * its pins with it (below): nothing half-made stays running. A
		 * re-attach keeps the new program on the old maps. */
		if (!had_pins && !old_id && prog && !xdp_program__detach(prog, ifindex, used, 0))
			used = -1;
		goto out;
	}
	printf("attached to %s in %s mode (%s), program id %u%s\n", iface,
	       mode_name(used),
	       multiprog ? "libxdp dispatcher" : "single program; libxdp's dispatcher was not used",
	       prog_id_of(prog_fd), had_pins ? ", state kept from the previous attach" : "");
out:
	if (old_fd >= 0)
		close(old_fd);
	xdp_program__close(prog);
	sluice_bpf__destroy(skel);
	/* A first attach that put nothing on the link takes its pins back. */
	if (err && !had_pins && used < 0 && !old_id)
		remove_pins(dir);
	return err;
}

const struct cli_cmd attach_cmd = {
	.name = "attach", .path = "attach", .args = "IFACE", .min_pos = 1, .max_pos = 1,
	.opts = attach_opts, .run = attach_run, CLI_DEFAULTS(attach_defaults),
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
	printf("detached from %s (a sluice program without pins: its policy and counters were "
	       "already gone)\n", iface);
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
	if (check_ifname(iface))
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
	/* The pins are all that lets sluice reach a program running in a
	 * namespace this one cannot see: never drop them while it runs. */
	if (!prog_id) {
		struct elsewhere where;
		int r = find_elsewhere(iface, &ids, &where);

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
	    (!ifindex || (ids.meta_ifindex && ids.meta_ifindex != (__u32)ifindex)))
		return usage_err("%s here is not the interface sluice was attached to: run detach "
				 "in its network namespace (nsenter --net=...), or 'sluice detach "
				 "--force %s' if it is gone", iface, iface);
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
	printf("detached from %s%s\n", iface,
	       ifindex && !force ? "" : " (pins removed; the interface was not seen here, and "
					"its program runs in no network namespace)");
	return 0;
}

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
	long sources;
	__u32 capacity;
	unsigned int rules;
	unsigned int monitor_rules;	/* --monitor: a dry run, dropping nothing */
	struct rule def;
	struct rule budget;	/* limit new-sources; rate 0 is off */
	bool budget_spent;	/* no new source would get an entry now */
	__u64 new_admitted, new_limited;
	char group[32];		/* who may read the pins */
};

/* A table this full (percent) is under pressure: new sources evict. */
#define STATUS_FULL_PCT		90

static bool under_pressure(const struct iface_status *st)
{
	return st->budget_spent ||
	       (st->capacity && st->sources > 0 &&
		(__u64)st->sources * 100 >= (__u64)st->capacity * STATUS_FULL_PCT);
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
	st->sources = count_sources(&m);
	st->capacity = map_capacity(m.src_buckets);
	st->rules = p->n;
	st->def = p->def;
	st->monitor_rules = p->def.monitor;
	for (unsigned int i = 0; i < p->n; i++)
		st->monitor_rules += p->rules[i].monitor;
	st->budget = p->new_sources;
	free(p);
	if (budget_state(&m, &st->budget_spent) ||
	    read_event(&m, SLUICE_EV_NEW_SOURCE_ADMITTED, &st->new_admitted) ||
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
	json_str(j, "group", st->group);
	json_bool(j, "under_pressure", under_pressure(st));
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
	printf("  sources: %ld tracked of %u (%.0f%% full)\n", st->sources, st->capacity,
	       st->capacity ? 100.0 * (double)(st->sources > 0 ? st->sources : 0) / st->capacity
			    : 0.0);
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
		       "the source table is nearly full; new sources evict the least recently seen");
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

static int status_run(const struct cli_cmd *c, struct cli_args *a)
{
	char names[64][IF_NAMESIZE];
	struct iface_status st;
	struct json j;
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
	if (opts.json) {
		json_begin(&j, stdout);
		json_obj_open(&j, NULL);
		json_arr_open(&j, "interfaces");
	} else if (n == 0) {
		printf("sluice is not attached to any interface\n");
	}
	for (int i = 0; i < n; i++) {
		int e = gather_status(names[i], &st);

		if (e) {
			err = e;
			continue;
		}
		if (opts.json)
			print_status_json(&j, &st);
		else
			print_status_text(&st);
	}
	if (opts.json) {
		json_arr_close(&j);
		json_obj_close(&j);
		json_end(&j);
	}
	return err;
}

const struct cli_cmd detach_cmd = {
	.name = "detach", .path = "detach", .args = "IFACE", .min_pos = 1, .max_pos = 1,
	.opts = detach_opts, .run = detach_run, CLI_DEFAULTS(detach_defaults),
	.help = "Removes the program and its pins from IFACE.",
};

const struct cli_cmd status_cmd = {
	.name = "status", .path = "status", .json = true, .run = status_run,
	.help = "Each attached interface (or -i IFACE's): mode, program, sources, rules, pins.",
};
