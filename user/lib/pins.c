// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Where the pins live (the host's bpffs, also from inside `ip netns exec`)
 * and who may read them (root writes, one group reads). */
#define _GNU_SOURCE	/* O_PATH */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/magic.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "pins.h"
#include "opts.h"
#include "output.h"
#include "sluice.skel.h"

#define ANCESTORS_MAX 64	/* parent processes looked at for the host's bpffs */

extern char **environ;

/* The resolved pin root: computed once, then only read. */
static struct {
	bool done;
	int err;		/* exit code when there is no usable bpffs, with why */
	int fd;			/* a held directory the root is reached through, or -1 */
	char root[SLUICE_DIR_MAX];
	char why[400];
} loc = { .fd = -1 };

static bool is_bpffs(const char *path, dev_t *dev)
{
	struct statfs sf;
	struct stat st;

	if (statfs(path, &sf) || sf.f_type != BPF_FS_MAGIC || stat(path, &st))
		return false;
	if (dev)
		*dev = st.st_dev;
	return true;
}

static bool read_link(const char *path, char *buf, size_t len)
{
	ssize_t n = readlink(path, buf, len - 1);

	if (n < 0)
		return false;
	buf[n] = '\0';
	return true;
}

/* The parent of pid, from /proc/PID/stat (readable for any process); 0 if
 * unknown. The name field may hold spaces and parentheses: skip past the
 * last ')'. */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd, ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return 0;
	return (pid_t)ppid;
}

/*
 * `ip netns exec` runs the command in a mount namespace of its own, with a
 * new /sys over the host's: /sys/fs/bpf there is an empty sysfs directory.
 * The host's bpffs is still at /sys/fs/bpf under the root of a process in
 * the host's mount namespace: pid 1, or else the nearest parent process in
 * another mount namespace (the shell that ran `ip netns exec`), whose
 * /proc/PID/root we may walk when we are root with the same or more
 * capabilities. Writes that path to out; false if there is none.
 */
static bool find_host_bpffs(char *out, size_t len, dev_t *dev)
{
	char own_ns[64], ns[64], path[64];
	pid_t pid = 1;

	if (!read_link("/proc/self/ns/mnt", own_ns, sizeof(own_ns)))
		return false;
	for (int i = 0; i < ANCESTORS_MAX && pid > 0; i++) {
		snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
		if (read_link(path, ns, sizeof(ns))) {
			if (pid == 1 && !strcmp(ns, own_ns))
				return false;	/* the host's mount namespace (or the container's) */
			if (strcmp(ns, own_ns) != 0) {
				snprintf(out, len, "/proc/%d/root" SLUICE_BPFFS, (int)pid);
				if (is_bpffs(out, dev))
					return true;
			}
		}
		pid = pid == 1 ? getppid() : parent_of(pid);
		if (pid == 1)
			break;	/* looked at already */
	}
	return false;
}

static void set_libxdp_bpffs(const char *dir)
{
	/* libxdp keeps its own pins and lock there: the same bpffs as ours. */
	if (!getenv(XDP_BPFFS_ENVVAR))
		setenv(XDP_BPFFS_ENVVAR, dir, 1);
}

static void resolve(void)
{
	const char *dir = opts.bpffs ? opts.bpffs : getenv("SLUICE_BPFFS");
	const char *from = opts.bpffs ? "--bpffs" : "SLUICE_BPFFS";
	char host[64], held[32];
	dev_t own_dev = 0, host_dev = 0;
	bool own;

	loc.done = true;
	if (dir && *dir) {
		if (strlen(dir) > SLUICE_BPFFS_ARG_MAX) {
			loc.err = EXIT_USAGE;
			snprintf(loc.why, sizeof(loc.why), "%s is longer than %d characters: "
				 "give a shorter path", from, SLUICE_BPFFS_ARG_MAX);
		} else if (!is_bpffs(dir, NULL)) {
			loc.err = EXIT_USAGE;
			snprintf(loc.why, sizeof(loc.why), "%s '%.*s' is not a mounted bpffs: give "
				 "the directory bpffs is mounted on, e.g. %s", from,
				 SLUICE_BPFFS_ARG_MAX, dir, SLUICE_BPFFS);
		}
		snprintf(loc.root, sizeof(loc.root), "%.*s/sluice", SLUICE_BPFFS_ARG_MAX, dir);
		if (!loc.err)
			set_libxdp_bpffs(dir);
		return;
	}
	own = is_bpffs(SLUICE_BPFFS, &own_dev);
	/* A bpffs of our own that is not the host's (mounted inside `ip netns
	 * exec`) would lose every pin when the command exits: the host's wins. */
	if (find_host_bpffs(host, sizeof(host), &host_dev) && !(own && own_dev == host_dev)) {
		loc.fd = open(host, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (loc.fd >= 0) {
			snprintf(held, sizeof(held), "/proc/self/fd/%d", loc.fd);
			snprintf(loc.root, sizeof(loc.root), "%s/sluice", held);
			set_libxdp_bpffs(held);
			return;
		}
	}
	snprintf(loc.root, sizeof(loc.root), "%s", SLUICE_PIN_ROOT);
	if (own)
		return;
	loc.err = EXIT_RUNTIME;
	snprintf(loc.why, sizeof(loc.why),
		 "bpffs is not mounted at %s and the host's could not be reached: on the host, "
		 "mount it with 'mount -t bpf bpf %s'; under 'ip netns exec' (which remounts /sys) "
		 "as a user that cannot read /proc/1/root or its parent's, run 'nsenter "
		 "--net=/run/netns/NS sluice ...' instead, or give --bpffs DIR",
		 SLUICE_BPFFS, SLUICE_BPFFS);
}

const char *pin_root(void)
{
	if (!loc.done)
		resolve();
	return loc.root;
}

int pin_root_check(void)
{
	pin_root();
	if (loc.err)
		err_msg("%s", loc.why);
	return loc.err;
}

int pin_root_readable(void)
{
	int err = pin_root_check();

	if (err)
		return err;
	if (access(pin_root(), X_OK) && errno == EACCES)
		return runtime_err("cannot read %s: permission denied (run as root, or as a member "
				   "of the pins' group for commands that only read)", pin_root());
	return 0;
}

/* groupadd --system NAME, without a shell; 0 when the group exists after. */
static int run_groupadd(const char *name)
{
	static const char *const paths[] = { "groupadd", "/usr/sbin/groupadd", "/sbin/groupadd" };
	char *argv[] = { "groupadd", "--system", (char *)name, NULL };
	posix_spawn_file_actions_t fa;
	int err = ENOENT, status = 0;
	pid_t pid;

	if (posix_spawn_file_actions_init(&fa))
		return -1;
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]) && err == ENOENT; i++)
		err = i == 0 ? posix_spawnp(&pid, paths[i], &fa, NULL, argv, environ)
			     : posix_spawn(&pid, paths[i], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err)
		return runtime_err("cannot run groupadd to create group '%s': %s: create it "
				   "with 'groupadd --system %s' or pass --group NAME",
				   name, strerror(err), name);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return runtime_err("cannot wait for groupadd: %s", strerror(errno));
	/* 9: the group exists, made meanwhile by someone else. */
	if (!WIFEXITED(status) || (WEXITSTATUS(status) && WEXITSTATUS(status) != 9))
		return runtime_err("groupadd --system %s failed (exit %d): create the group by "
				   "hand or pass --group NAME", name,
				   WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}

int pins_group(const char *name, gid_t *gid)
{
	const struct group *gr;

	if (name) {
		gr = getgrnam(name);	/* NOLINT(concurrency-mt-unsafe): one thread */
		if (!gr)
			return usage_err("no group '%s': create it first (groupadd --system %s), or "
					 "leave out --group to use '%s'", name, name, SLUICE_PIN_GROUP);
		*gid = gr->gr_gid;
		return 0;
	}
	gr = getgrnam(SLUICE_PIN_GROUP);	/* NOLINT(concurrency-mt-unsafe) */
	if (!gr) {
		if (run_groupadd(SLUICE_PIN_GROUP))
			return EXIT_RUNTIME;
		gr = getgrnam(SLUICE_PIN_GROUP);	/* NOLINT(concurrency-mt-unsafe) */
		if (!gr)
			return runtime_err("groupadd made no group '%s': create it by hand or pass "
					   "--group NAME", SLUICE_PIN_GROUP);
	}
	*gid = gr->gr_gid;
	return 0;
}

static int set_access(const char *path, gid_t gid, mode_t mode)
{
	if (chown(path, 0, gid) || chmod(path, mode))
		return runtime_err("cannot set the owner and mode of %s: %s", path,
				   strerror(errno));
	return 0;
}

/* The lock's path under dir; made (0700, root's) if missing. */
static int lock_path(const char *dir, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", dir, SLUICE_LOCK_PIN);
	return mkdir(path, 0700) && errno != EEXIST ? -1 : 0;
}

int pins_lock(const char *dir)
{
	char path[SLUICE_PATH_MAX];
	int fd, saved;

	/* A reader may neither make it (the directory is not the group's to
	 * write) nor open it (0700 root): only writers can block writers. */
	if (lock_path(dir, path, sizeof(path)))
		return -1;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (flock(fd, LOCK_EX)) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

int pins_set_access(const char *dir, gid_t gid)
{
	struct sluice_bpf *skel;
	char path[SLUICE_PATH_MAX];
	struct bpf_map *map;
	int err;

	/* Readers walk the root and the dir and open the maps read-only; the
	 * program pin is of no use to them. */
	err = set_access(pin_root(), gid, 0750);
	if (!err)
		err = set_access(dir, gid, 0750);
	snprintf(path, sizeof(path), "%s/%s", dir, SLUICE_PROG_PIN);
	if (!err)
		err = set_access(path, 0, 0600);
	if (!err && lock_path(dir, path, sizeof(path)))
		err = runtime_err("cannot create %s: %s", path, strerror(errno));
	if (!err)
		err = set_access(path, 0, 0700);
	if (err)
		return err;
	skel = sluice_bpf__open();
	if (!skel)
		return runtime_err("cannot open the embedded BPF object: %s", strerror(errno));
	/* The source table's seed is root's alone (sluice/sources.h): whoever
	 * knows it can aim a flood at one source's buckets. */
	bpf_object__for_each_map(map, skel->obj) {
		bool secret = map == skel->maps.src_seed;

		snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(map));
		err = set_access(path, secret ? 0 : gid, secret ? 0600 : 0640);
		if (err)
			break;
	}
	sluice_bpf__destroy(skel);
	return err;
}
