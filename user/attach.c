// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* attach, detach, status: loading the XDP program through libxdp, pinning
 * it and its maps under /sys/fs/bpf/sluice/<iface>/, and reporting on it. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <linux/if_link.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "sluice.h"
#include "sluice.skel.h"

#define BPFFS_ROOT "/sys/fs/bpf"

static int check_bpffs(void)
{
	struct statfs st;

	if (statfs(BPFFS_ROOT, &st) || st.f_type != BPF_FS_MAGIC)
		return runtime_err("bpffs is not mounted at %s: mount it with 'mount -t bpf bpf %s'",
				   BPFFS_ROOT, BPFFS_ROOT);
	return 0;
}

/* Test-only: SLUICE_TEST_HOOK=STEP:kill (or STEP:stop) kills (stops)
 * attach at STEP, so tests can check what a crash there leaves behind, or
 * run another command in the middle of an attach. */
static void test_hook(const char *step)
{
	const char *hook = getenv("SLUICE_TEST_HOOK");
	size_t n = strlen(step);

	if (!hook || strncmp(hook, step, n) || hook[n] != ':')
		return;
	fflush(stdout);
	raise(strcmp(hook + n + 1, "stop") ? SIGKILL : SIGSTOP);
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

static __u32 pinned_prog_id(const char *dir)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, SLUICE_PROG_PIN);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		info.id = 0;
	close(fd);
	return info.id;
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
 * the interface is never left unprotected by a bad --mode. */
static const char *restore_old(const char *dir, int ifindex, enum xdp_attach_mode mode)
{
	static const char lost[] = " (the previous program is gone too: nothing limits the interface)";
	struct xdp_program *old;
	char path[256];
	int err;

	if (mode == XDP_MODE_UNSPEC)
		return "";
	snprintf(path, sizeof(path), "%s/%s", dir, SLUICE_PROG_PIN);
	old = xdp_program__from_pin(path);
	if (libxdp_get_error(old))
		return lost;
	err = xdp_program__attach(old, ifindex, mode, 0);
	xdp_program__close(old);
	return err ? lost : " (the previous program is still attached)";
}

static void remove_pins(const char *dir)
{
	static const char *const extra[] = { SLUICE_PROG_PIN };
	struct sluice_bpf *skel = sluice_bpf__open();
	struct bpf_map *map;
	char path[256];

	if (skel) {
		bpf_object__for_each_map(map, skel->obj) {
			snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(map));
			unlink(path);
		}
		sluice_bpf__destroy(skel);
	}
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, extra[i]);
		unlink(path);
	}
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
	char path[256];
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
	if (bpf_map_update_elem(m.meta, &zero, &meta, BPF_ANY)) {
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
		err = maps_lock(&m) ? EXIT_RUNTIME : policy_commit(&m, p);
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

static const char attach_usage[] =
	"attach IFACE [--mode native|skb|auto] [--max-sources N]";

int cmd_attach(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "mode", required_argument, NULL, 'm' },
		{ "max-sources", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum xdp_attach_mode modes[2] = { XDP_MODE_NATIVE, XDP_MODE_SKB };
	int nmodes = 2, ifindex, c, err, used = -1;
	__u64 max_sources = SLUICE_MAX_SOURCES_DEFAULT;
	bool max_given = false, multiprog = false;
	DECLARE_LIBXDP_OPTS(xdp_program_opts, xopts);
	struct xdp_multiprog *mp = NULL;
	struct xdp_program *prog = NULL;
	struct sluice_bpf *skel = NULL;
	char dir[128], path[256], msg[160];
	const char *iface;
	enum xdp_attach_mode old_mode = XDP_MODE_UNSPEC, swapped_mode = XDP_MODE_UNSPEC;
	const char *kept;
	int prog_fd;
	__u32 old_id = 0;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (!strcmp(optarg, "native")) {
				nmodes = 1;
			} else if (!strcmp(optarg, "skb")) {
				modes[0] = XDP_MODE_SKB;
				nmodes = 1;
			} else if (strcmp(optarg, "auto") != 0) {
				return usage_err("bad --mode '%s': use native, skb or auto", optarg);
			}
			break;
		case 'n':
			if (!parse_u64(optarg, SLUICE_MAX_SOURCES_MIN, SLUICE_MAX_SOURCES_MAX,
				       &max_sources))
				return usage_err("bad --max-sources '%s': give %u..%u sources",
						 optarg, SLUICE_MAX_SOURCES_MIN,
						 SLUICE_MAX_SOURCES_MAX);
			max_given = true;
			break;
		case 'h':
			printf("Usage: sluice %s\n", attach_usage);
			return 0;
		default:
			return getopt_err(c, argv, attach_usage);
		}
	}
	if (optind >= argc)
		return usage_err("attach needs an interface: sluice %s", attach_usage);
	if (optind + 1 < argc)
		return usage_err("unexpected argument '%s': sluice %s", argv[optind + 1],
				 attach_usage);
	iface = argv[optind];
	if (check_ifname(iface))
		return EXIT_USAGE;
	if (!(ifindex = (int)if_nametoindex(iface)))
		return usage_err("no interface '%s': check the name with 'ip link'", iface);

	err = check_bpffs();
	if (err)
		return err;
	pin_dir(iface, dir, sizeof(dir));
	if (make_dir(SLUICE_PIN_ROOT) || make_dir(dir))
		return EXIT_RUNTIME;
	libbpf_set_print(libbpf_quiet);
	libxdp_set_print(libxdp_quiet);

	skel = sluice_bpf__open();
	if (!skel)
		return runtime_err("cannot open the embedded BPF object: %s", strerror(errno));
	err = prepare_maps(skel, dir, iface, max_sources, max_given);
	if (err)
		goto out;

	/* Re-attach: the maps stay and are reused; the program is swapped in
	 * one step where it can be, else the old one goes first. */
	old_id = pinned_prog_id(dir);
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
	xopts.prog_name = "sluice_xdp";
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
		kept = restore_old(dir, ifindex, old_mode);
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
	mp = xdp_multiprog__get_from_ifindex(ifindex);
	if (!libxdp_get_error(mp) && mp)
		multiprog = !xdp_multiprog__is_legacy(mp);
	xdp_multiprog__close(mp);
	test_hook("attached");

	snprintf(path, sizeof(path), "%s/%s", dir, SLUICE_PROG_PIN);
	unlink(path);
	if (bpf_obj_pin(prog_fd, path)) {
		err = runtime_err("cannot pin the program at %s: %s", path, strerror(errno));
		goto out;
	}
	test_hook("pinned");
	err = write_meta(iface, ifindex, used, multiprog, prog_id_of(prog_fd));
	if (err)
		goto out;
	printf("attached to %s in %s mode (%s), program id %u%s\n", iface,
	       mode_name(used),
	       multiprog ? "libxdp dispatcher" : "single program; libxdp's dispatcher was not used",
	       prog_id_of(prog_fd), old_id ? ", state kept from the previous attach" : "");
out:
	xdp_program__close(prog);
	sluice_bpf__destroy(skel);
	if (err && !pinned_prog_id(dir) && used < 0 && !old_id)
		remove_pins(dir);
	return err;
}

static const char detach_usage[] = "detach IFACE [--force]";

/* ifindex the pins were made for, 0 if unknown. */
static __u32 pinned_ifindex(const char *iface)
{
	struct sluice_meta meta = { 0 };
	struct sluice_maps m;

	if (maps_open_ro(iface, &m))
		return 0;
	if (read_meta(&m, &meta))
		meta.ifindex = 0;
	maps_close(&m);
	return meta.ifindex;
}

int cmd_detach(int argc, char **argv)
{
	enum xdp_attach_mode was_mode;
	const char *iface = NULL;
	bool force = false;
	__u32 prog_id;
	char dir[128];
	int ifindex, err;

	for (int i = 1; i < argc; i++) {
		if (is_help(argv[i])) {
			printf("Usage: sluice %s\n"
			       "  Removes the program and its pins; --force removes the pins of an\n"
			       "  interface that no longer exists.\n", detach_usage);
			return 0;
		}
		if (!strcmp(argv[i], "--force"))
			force = true;
		else if (argv[i][0] == '-')
			return usage_err("unknown option '%s': usage: sluice %s", argv[i],
					 detach_usage);
		else if (iface)
			return usage_err("unexpected argument '%s': usage: sluice %s", argv[i],
					 detach_usage);
		else
			iface = argv[i];
	}
	if (!iface)
		return usage_err("detach needs an interface: usage: sluice %s", detach_usage);
	if (check_ifname(iface))
		return EXIT_USAGE;
	pin_dir(iface, dir, sizeof(dir));
	ifindex = (int)if_nametoindex(iface);
	if (access(dir, F_OK)) {
		if (errno == EACCES)
			return runtime_err("cannot read %s: permission denied (run as root)", dir);
		if (!ifindex)
			return usage_err("no interface '%s': check the name with 'ip link'", iface);
		return usage_err("nothing to detach: %s has no sluice program (see 'sluice status')",
				 iface);
	}
	/* Pins are keyed by name: refuse to drop them for an interface this
	 * namespace does not see, or that is another one of the same name,
	 * unless told the interface is gone. */
	if (!force && (!ifindex || pinned_ifindex(iface) != (__u32)ifindex))
		return usage_err("%s here is not the interface sluice was attached to: run detach "
				 "in its network namespace (nsenter --net=...), or 'sluice detach "
				 "--force %s' if it is gone", iface, iface);
	libxdp_set_print(libxdp_quiet);
	libbpf_set_print(libbpf_quiet);
	prog_id = pinned_prog_id(dir);
	if (ifindex && pinned_ifindex(iface) == (__u32)ifindex) {
		err = detach_prog(iface, ifindex, prog_id, &was_mode);
		if (err)
			return err;
	}
	remove_pins(dir);
	if (!access(dir, F_OK))
		return runtime_err("cannot remove %s: remove it by hand", dir);
	printf("detached from %s%s\n", iface,
	       ifindex && !force ? "" : " (pins removed; the interface was not seen here)");
	return 0;
}

struct iface_status {
	char name[IF_NAMESIZE];
	bool present, attached;
	struct sluice_meta meta;
	long sources;
	__u32 capacity;
	unsigned int rules;
	struct rule def;
};

static int gather_status(const char *iface, struct iface_status *st)
{
	struct sluice_maps m;
	struct xdp_multiprog *mp;
	struct policy *p;
	int err;

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
	st->present = if_nametoindex(iface) == st->meta.ifindex && st->meta.ifindex;
	if (st->present) {
		st->attached = find_attached((int)st->meta.ifindex, st->meta.prog_id, &mp) != NULL;
		xdp_multiprog__close(mp);
	}
	st->sources = count_sources(&m);
	st->capacity = map_capacity(m.src_buckets);
	st->rules = p->n;
	st->def = p->def;
	free(p);
	maps_close(&m);
	return 0;
}

static void print_status_json(struct json *j, const struct iface_status *st)
{
	json_obj_open(j, NULL);
	json_str(j, "interface", st->name);
	json_bool(j, "present", st->present);
	json_bool(j, "attached", st->attached);
	json_str(j, "mode", mode_name(st->meta.xdp_mode));
	json_str(j, "libxdp", st->meta.multiprog ? "dispatcher" : "single");
	json_u64(j, "prog_id", st->meta.prog_id);
	json_u64(j, "attached_at", st->meta.attached_at);
	json_u64(j, "tracked_sources", st->sources > 0 ? (__u64)st->sources : 0);
	json_u64(j, "capacity", st->capacity);
	json_u64(j, "rules", st->rules);
	json_obj_open(j, "default");
	json_str(j, "action", action_name(st->def.action));
	json_u64(j, "rate", st->def.rate);
	json_u64(j, "burst", st->def.burst);
	json_obj_close(j);
	json_obj_close(j);
}

static void print_status_text(const struct iface_status *st)
{
	char when[32];
	time_t t = (time_t)st->meta.attached_at;

	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&t));
	printf("%s: %s, %s mode (%s), program id %u, since %s\n", st->name,
	       !st->present ? "INTERFACE GONE (run 'sluice detach' to remove the pins)" :
	       st->attached ? "attached" : "NOT ATTACHED (pins only; run 'sluice attach' again)",
	       mode_name(st->meta.xdp_mode),
	       st->meta.multiprog ? "libxdp dispatcher" : "single program",
	       st->meta.prog_id, when);
	printf("  sources: %ld tracked of %u\n", st->sources, st->capacity);
	if (st->def.action == SLUICE_ACT_LIMIT)
		printf("  default: limit %llu/s burst %llu\n",
		       (unsigned long long)st->def.rate, (unsigned long long)st->def.burst);
	else
		printf("  default: %s\n", st->def.action == SLUICE_ACT_ALLOW ?
		       "not limited (set one with 'sluice limit default --rate PPS')" :
		       action_name(st->def.action));
	printf("  rules: %u (see 'sluice limit list')\n", st->rules);
}

int cmd_status(int argc, char **argv)
{
	char names[64][IF_NAMESIZE];
	struct iface_status st;
	struct json j;
	int n, err = 0;

	if (argc == 2 && is_help(argv[1])) {
		printf("Usage: sluice status [-j] [-i IFACE]\n");
		return 0;
	}
	if (argc > 1)
		return usage_err("unexpected argument '%s': usage: sluice status [-j]", argv[1]);
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
