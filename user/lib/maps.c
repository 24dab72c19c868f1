// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Pinned maps of an attached interface: finding, opening and reading them.
 * The policy they hold is read and committed by store.c. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "maps.h"
#include "opts.h"
#include "output.h"
#include "parse.h"
#include "sluice.skel.h"

/* Whether dir holds a pin named name. */
static bool pin_present(const char *dir, const char *name)
{
	char path[SLUICE_PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

void pin_dir(const char *iface, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", pin_root(), iface);
}

int list_attached(char out[][IF_NAMESIZE], int max)
{
	DIR *d = opendir(pin_root());
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || de->d_type != DT_DIR)
			continue;
		if (strlen(de->d_name) >= IF_NAMESIZE)
			continue;
		if (n < max)
			snprintf(out[n], IF_NAMESIZE, "%s", de->d_name);
		n++;
	}
	closedir(d);
	return n < max ? n : max;
}

int pick_iface(char *iface, size_t len)
{
	char names[8][IF_NAMESIZE];
	char dir[SLUICE_DIR_MAX];
	int n;

	n = pin_root_readable();
	if (n)
		return n;
	if (opts.iface) {
		pin_dir(opts.iface, dir, sizeof(dir));
		if (access(dir, F_OK)) {
			if (!if_nametoindex(opts.iface))
				return usage_err("no interface '%s': check the name with 'ip link'",
						 opts.iface);
			return usage_err("%s has no sluice program: run 'sluice attach %s' first",
					 opts.iface, opts.iface);
		}
		snprintf(iface, len, "%s", opts.iface);
		return 0;
	}
	n = list_attached(names, 8);
	if (n == 0)
		return usage_err("no interface has a sluice program: run 'sluice attach IFACE' first");
	if (n > 1)
		return usage_err("%d interfaces have sluice attached (%s, %s%s): pick one with -i IFACE",
				 n, names[0], names[1], n > 2 ? ", ..." : "");
	snprintf(iface, len, "%s", names[0]);
	return 0;
}

static int open_pin(const char *dir, const struct bpf_map *map, __u32 file_flags)
{
	struct bpf_obj_get_opts o = { .sz = sizeof(o), .file_flags = file_flags };
	char path[SLUICE_PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, bpf_map__name(map));
	return bpf_obj_get_opts(path, &o);
}

static int map_info(int fd, struct bpf_map_info *info);

enum pins_of { PINS_EARLIER, PINS_OURS, PINS_OTHER };

/* Who made the pins under dir, as far as their policy text's first line
 * (SLUICE_POLICY_TEXT_BY) says, in words into buf[len] when len: "version
 * X", "another build of sluice X" (ours), or "an earlier version of
 * sluice" (none said, or it cannot be read). */
static enum pins_of pins_version(const char *dir, char *buf, size_t len)
{
	struct bpf_obj_get_opts o = { .sz = sizeof(o), .file_flags = BPF_F_RDONLY };
	const size_t by = sizeof(SLUICE_POLICY_TEXT_BY) - 1;
	char path[SLUICE_PATH_MAX], v[64] = "";
	struct sluice_policy_text *t = NULL;
	struct bpf_map_info info;
	enum pins_of of = PINS_EARLIER;
	__u32 zero = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/policy_text", dir);
	fd = bpf_obj_get_opts(path, &o);
	if (fd >= 0 && !map_info(fd, &info) && info.value_size == sizeof(*t))
		t = calloc(1, sizeof(*t));
	if (t && !bpf_map_lookup_elem(fd, &zero, t) && t->len > by && t->len < sizeof(t->text) &&
	    !strncmp(t->text, SLUICE_POLICY_TEXT_BY, by)) {
		size_t n = strcspn(t->text + by, " \n");

		if (n && n < sizeof(v))
			snprintf(v, sizeof(v), "%.*s", (int)n, t->text + by);
	}
	free(t);
	if (fd >= 0)
		close(fd);
	if (v[0])
		of = strcmp(v, SLUICE_VERSION) ? PINS_OTHER : PINS_OURS;
	if (len)
		snprintf(buf, len, of == PINS_OTHER ? "version %s" : of == PINS_OURS ?
			 "another build of sluice %s" : "an earlier version of sluice", v);
	return of;
}

/* The one line for pins another version made, pointing to the attach
 * that upgrades them in place (never to detach, which drops their state). */
static int another_version(const char *dir, const char *iface, const char *what,
			   const char *map, const char *how)
{
	char who[96];

	pins_version(dir, who, sizeof(who));
	return usage_err("%s: pins of %s (%s %s%s%s): run 'sluice attach %s' to upgrade in place, "
			 "keeping the policy, the bans and per-source state", iface, who, what, map,
			 *how ? " " : "", how, iface);
}

_Static_assert(SLUICE_MAPI_COUNT <= 32, "MAP_BIT() needs a wider mask");

/* Whether the pinned map fd is the map this build of sluice declares: a
 * pin left by another version (a detach skipped on upgrade) may differ in
 * layout, and would be read wrong. The source table's size is the
 * operator's (--max-sources): its slots and their counts. */
static bool pin_matches(int fd, const struct bpf_map *want, bool sized_by_attach)
{
	struct bpf_map_info info;

	return !map_info(fd, &info) && info.type == (__u32)bpf_map__type(want) &&
	       info.key_size == bpf_map__key_size(want) &&
	       info.value_size == bpf_map__value_size(want) &&
	       (sized_by_attach || info.max_entries == bpf_map__max_entries(want));
}

/* Whether a pin that did not open (errno) may be gone without: the seed of
 * the source table is root's alone (sluice/sources.h), so a reader of the
 * pins' group opens the rest and reads the table without it. */
static bool may_lack(unsigned int bit, unsigned int writable)
{
	return bit == MAP_BIT(src_seed) && !(writable & bit) &&
	       (errno == EACCES || errno == EPERM);
}

/* writable: MAP_BIT()s of the maps opened read-write, the others read-only.
 * quiet: fail with -1 and print nothing (the exporter skips and counts). */
static int maps_open_flags(const char *iface, struct sluice_maps *m, unsigned int writable,
			   bool quiet)
{
	char missing[BPF_OBJ_NAME_LEN] = "";	/* a pin that is not there */
	const char *stale = NULL;
	struct sluice_bpf *skel;
	bool denied_write = false;
	int err = 0;

	memset(m, 0, sizeof(*m));
	snprintf(m->iface, sizeof(m->iface), "%s", iface);
	pin_dir(iface, m->dir, sizeof(m->dir));
	m->lock = -1;
	m->ncpus = libbpf_num_possible_cpus();
	if (m->ncpus <= 0)
		return quiet ? -1 : runtime_err("cannot count possible CPUs: is /sys mounted?");

	/* The skeleton names the maps; nothing is loaded. */
	skel = sluice_bpf__open();
	if (!skel)
		return quiet ? -1 : runtime_err("cannot open the embedded BPF object: %s",
						strerror(errno));
#define OPEN_PIN(name)							\
	m->name = open_pin(m->dir, skel->maps.name,			\
			   (writable & MAP_BIT(name)) ? 0 : BPF_F_RDONLY);	\
	if (m->name < 0 && !err && !may_lack(MAP_BIT(name), writable)) {	\
		err = errno;						\
		denied_write = writable & MAP_BIT(name);		\
		snprintf(missing, sizeof(missing), "%s",		\
			 bpf_map__name(skel->maps.name));		\
	}
	SLUICE_MAPS(OPEN_PIN)
#undef OPEN_PIN
#define CHECK_PIN(name)							\
	if (!err && m->name >= 0 &&					\
	    !pin_matches(m->name, skel->maps.name,			\
				 m->name == m->src_table ||		\
				 m->name == m->src_counts) && !stale)	\
		stale = bpf_map__name(skel->maps.name);
	SLUICE_MAPS(CHECK_PIN)
#undef CHECK_PIN
	if (!err && !stale && pin_present(m->dir, SLUICE_RETIRED_PIN))
		stale = SLUICE_RETIRED_PIN;	/* a version whose slots read otherwise */
	if (stale && !err) {
		maps_close(m);
		err = quiet ? -1 : another_version(m->dir, iface, "map", stale,
						   "differs from this version's");
		sluice_bpf__destroy(skel);	/* after: it holds stale's text */
		return err;
	}
	sluice_bpf__destroy(skel);
	if (err) {
		maps_close(m);
		if (quiet)
			return -1;
		/* A map this version added, or an attach that died: attach
		 * makes what is missing and keeps the rest. A detach that died
		 * leaves some pins too: detach removes them. */
		if (err == ENOENT && pins_version(m->dir, NULL, 0) == PINS_OTHER)
			return another_version(m->dir, iface, "no map", missing, "");
		if (err == ENOENT)
			return usage_err("pins under %s have no map %s (made by another version of "
					 "sluice, or an attach or detach that did not finish): "
					 "'sluice attach %s' upgrades them in place, keeping their "
					 "state; 'sluice detach %s' removes them",
					 m->dir, missing, iface, iface);
		if (err == EACCES && denied_write)
			return runtime_err("cannot open the maps under %s for writing: %s (only root "
					   "may change them; the pins' group may only read)",
					   m->dir, strerror(err));
		return runtime_err("cannot open the maps under %s: %s (run as root, or as a "
				   "member of the pins' group to read)", m->dir, strerror(err));
	}
	return 0;
}

int maps_open(const char *iface, struct sluice_maps *m)
{
	return maps_open_flags(iface, m, ~0U, false);
}

int maps_open_ro(const char *iface, struct sluice_maps *m)
{
	return maps_open_flags(iface, m, 0, false);
}

int maps_open_writing(const char *iface, struct sluice_maps *m, unsigned int writable)
{
	return maps_open_flags(iface, m, writable, false);
}

int maps_try_open_ro(const char *iface, struct sluice_maps *m)
{
	return maps_open_flags(iface, m, 0, true);
}

void maps_close(struct sluice_maps *m)
{
#define CLOSE_FD(name)							\
	if (m->name > 0)						\
		close(m->name);						\
	m->name = -1;
	SLUICE_MAPS(CLOSE_FD)
	CLOSE_FD(lock)
#undef CLOSE_FD
}

/* Whether the pins still name the maps m opened: an attach of another
 * version may have pinned new ones while this command waited for the lock.
 * A pin that is not there replaces nothing (a detach, or maps not pinned). */
static bool maps_current(const struct sluice_maps *m)
{
	char path[SLUICE_PATH_MAX];
	bool same = true;
	int fd;

#define SAME_PIN(name)							\
	if (same && m->name >= 0) {					\
		snprintf(path, sizeof(path), "%s/%s", m->dir, #name);	\
		fd = bpf_obj_get(path);					\
		same = fd < 0 || map_id(fd) == map_id(m->name);	\
		if (fd >= 0)						\
			close(fd);					\
	}
	SLUICE_MAPS(SAME_PIN)
#undef SAME_PIN
	return same;
}

int maps_lock(struct sluice_maps *m)
{
	int err;

	m->lock = pins_lock(m->dir);
	if (m->lock < 0) {
		err = errno;
		return runtime_err("cannot take the writers' lock of %s: %s%s", m->dir,
				   strerror(err), err == EACCES ? " (only root may change the "
				   "policy; the pins' group may only read)" : "");
	}
	if (!maps_current(m))
		return runtime_err("%s was attached anew while this command waited (an upgrade or "
				   "a new --max-sources): nothing was changed; run the command again",
				   m->iface);
	return 0;
}

static int map_info(int fd, struct bpf_map_info *info)
{
	__u32 len = sizeof(*info);

	memset(info, 0, sizeof(*info));
	return bpf_obj_get_info_by_fd(fd, info, &len);
}

__u32 map_capacity(int fd)
{
	struct bpf_map_info info;

	return map_info(fd, &info) ? 0 : info.max_entries;
}

__u32 map_id(int fd)
{
	struct bpf_map_info info;

	return map_info(fd, &info) ? 0 : info.id;
}

bool maps_still_current(const struct sluice_maps *m)
{
	struct sluice_maps now;

	if (maps_try_open_ro(m->iface, &now))
		return false;	/* detached, or pins of another version */
	maps_close(&now);
	return maps_current(m);
}

static int sum_percpu(int fd, __u32 key, int ncpus, size_t words, __u64 *out)
{
	__u64 *vals = calloc((size_t)ncpus * words, sizeof(__u64));

	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &key, vals)) {
		free(vals);
		return -errno;
	}
	memset(out, 0, words * sizeof(__u64));
	for (int c = 0; c < ncpus; c++)
		for (size_t w = 0; w < words; w++)
			out[w] += vals[(size_t)c * words + w];
	free(vals);
	return 0;
}

int read_counters(const struct sluice_maps *m, struct sluice_counter out[SLUICE_R_MAX])
{
	for (__u32 r = 0; r < SLUICE_R_MAX; r++)
		if (sum_percpu(m->counters, r, m->ncpus, sizeof(out[r]) / sizeof(__u64),
			       (__u64 *)&out[r]))
			return runtime_err("cannot read counters: %s", strerror(errno));
	return 0;
}

int read_policy_counter(const struct sluice_maps *m, __u32 idx,
			struct sluice_policy_counter *out)
{
	if (sum_percpu(m->policy_counters, idx, m->ncpus, sizeof(*out) / sizeof(__u64),
		       (__u64 *)out))
		return runtime_err("cannot read policy counters: %s", strerror(errno));
	return 0;
}

int read_event(const struct sluice_maps *m, __u32 event, __u64 *out)
{
	return sum_percpu(m->events, event, m->ncpus, 1, out) ? EXIT_RUNTIME : 0;
}

int read_ban_drops(const struct sluice_maps *m, __u32 list, struct sluice_counter *out)
{
	return sum_percpu(m->ban_drops, list, m->ncpus, sizeof(*out) / sizeof(__u64),
			  (__u64 *)out) ? -1 : 0;
}

int read_meta(const struct sluice_maps *m, struct sluice_meta *out)
{
	__u32 zero = 0;

	if (bpf_map_lookup_elem(m->meta, &zero, out))
		return runtime_err("cannot read attach metadata: %s", strerror(errno));
	return 0;
}

int maps_open_picked(struct sluice_maps *m, bool edit)
{
	char iface[IF_NAMESIZE];
	int err = pick_iface(iface, sizeof(iface));

	if (!err)
		err = edit ? maps_open(iface, m) : maps_open_ro(iface, m);
	if (err || !edit)
		return err;
	err = maps_lock(m);
	if (err)
		maps_close(m);
	return err;
}
