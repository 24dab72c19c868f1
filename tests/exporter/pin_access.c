// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* pin_access: what the calling process can do with every pin under DIR,
 * for the exporter's privilege test (run with the exporter's credentials).
 *
 *   pin_access DIR...
 *       one JSON line per pin: {"pin": PATH, "rw": R, "wo": R, "ro": R,
 *       "by_id": R}, each R "ok" or the errno name of the failure: opening
 *       it read-write, write-only, read-only, and (when read-only worked)
 *       getting a new descriptor from its id, which is not bound by the
 *       pin's permissions; {"unreadable_dir": PATH} for a directory it may
 *       not list. Opens only: nothing is read or written. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

static const char *res(int fd)
{
	if (fd >= 0) {
		close(fd);
		return "ok";
	}
	return strerrorname_np(errno) ? strerrorname_np(errno) : "error";
}

static int open_pin(const char *path, __u32 flags)
{
	struct bpf_obj_get_opts o = { .sz = sizeof(o), .file_flags = flags };

	return bpf_obj_get_opts(path, &o);
}

/* A new fd for the object behind ro_fd, found by its id. */
static int by_id(int ro_fd)
{
	struct bpf_prog_info pi = {};
	struct bpf_map_info mi = {};
	char link[64], kind[64] = "";
	__u32 len;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", ro_fd);
	if (readlink(link, kind, sizeof(kind) - 1) < 0)
		return -1;
	if (strstr(kind, "bpf-map")) {
		len = sizeof(mi);
		if (bpf_obj_get_info_by_fd(ro_fd, &mi, &len))
			return -1;
		return bpf_map_get_fd_by_id(mi.id);
	}
	len = sizeof(pi);
	if (bpf_obj_get_info_by_fd(ro_fd, &pi, &len))
		return -1;
	return bpf_prog_get_fd_by_id(pi.id);
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	const char *rw, *wo, *ro, *id = "n/a";
	int fd;

	(void)st;
	(void)ftw;
	if (type == FTW_DNR) {
		printf("{\"unreadable_dir\": \"%s\"}\n", path);
		return 0;
	}
	if (type != FTW_F)
		return 0;
	rw = res(open_pin(path, 0));
	wo = res(open_pin(path, BPF_F_WRONLY));
	fd = open_pin(path, BPF_F_RDONLY);
	if (fd >= 0)
		id = res(by_id(fd));
	ro = res(fd);
	printf("{\"pin\": \"%s\", \"rw\": \"%s\", \"wo\": \"%s\", \"ro\": \"%s\", \"by_id\": \"%s\"}\n",
	       path, rw, wo, ro, id);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: pin_access DIR...\n");
		return 2;
	}
	for (int i = 1; i < argc; i++)
		if (nftw(argv[i], visit, 16, FTW_PHYS)) {
			fprintf(stderr, "pin_access: cannot walk %s: %s\n", argv[i],
				strerror(errno));
			return 1;
		}
	return 0;
}
