// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Privilege dropping: switch to an unprivileged user and group, keep at most
 * the one capability bpf(2) needs on this kernel, and close every way back. */
#define _GNU_SOURCE	/* getresuid, setresuid, setresgid */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "core.h"
#include "privdrop.h"

#define PROBE_NAME	"sluice-privdrop-probe"	/* longer than any interface name */

int run_as_lookup(const char *user, const char *group, const char *dflt, struct run_as *ra)
{
	const struct passwd *pw;
	const struct group *gr;

	memset(ra, 0, sizeof(*ra));
	if (!*user || strlen(user) >= sizeof(ra->user))
		return usage_err("bad --user '%s': give a user name, e.g. %s", user, dflt);
	if (!*group || strlen(group) >= sizeof(ra->group))
		return usage_err("bad --group '%s': give a group name, e.g. sluice", group);
	pw = getpwnam(user);
	if (!pw && !strcmp(user, dflt))
		return usage_err("no user '%s': install the sluice package, which creates it, "
				 "or run as root with --user USER (an unprivileged user of its own)",
				 user);
	if (!pw)
		return usage_err("no user '%s': create it or pick another with --user", user);
	if (pw->pw_uid == 0)
		return usage_err("--user %s is uid 0, which could rewrite the pinned policy: "
				 "pick an unprivileged user (default %s)", user, dflt);
	ra->uid = pw->pw_uid;
	ra->gid = pw->pw_gid;
	gr = getgrnam(group);
	if (!gr)
		return usage_err("no group '%s': 'sluice attach' creates it, or give the pins' "
				 "group with --group", group);
	if (gr->gr_gid == 0)
		return usage_err("--group %s is gid 0: give the pins' group (default %s)", group,
				 RUN_AS_GROUP_DEFAULT);
	ra->pin_gid = gr->gr_gid;
	snprintf(ra->user, sizeof(ra->user), "%s", user);
	snprintf(ra->group, sizeof(ra->group), "%s", group);
	return 0;
}

static int capget_raw(struct __user_cap_data_struct data[2])
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };

	return (int)syscall(SYS_capget, &hdr, data);
}

static int capset_raw(const struct __user_cap_data_struct data[2])
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };

	return (int)syscall(SYS_capset, &hdr, data);
}

/* Can this process use pins without any capability? Since Linux 6.5
 * kernel.unprivileged_bpf_disabled gates only creating maps and loading
 * programs; before, it gated every bpf(2) command. Tried in a child that
 * drops everything: EPERM (not ENOENT or EACCES) means gated. */
static bool bpf_needs_cap(void)
{
	struct __user_cap_data_struct none[2] = {};
	char path[128];
	int status;
	pid_t pid;

	pin_dir(PROBE_NAME, path, sizeof(path));
	pid = fork();
	if (pid < 0)
		return true;
	if (pid == 0) {
		int fd;

		if (capset_raw(none))
			_exit(1);
		fd = bpf_obj_get(path);
		_exit(fd < 0 && errno == EPERM ? 1 : 0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return true;
	return !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

static bool in_groups(gid_t g)
{
	gid_t list[256];
	int n = getgroups(256, list);

	if (getegid() == g)
		return true;
	for (int i = 0; i < n; i++)
		if (list[i] == g)
			return true;
	return false;
}

int run_as_switch(const struct run_as *ra, char *kept, size_t len)
{
	struct __user_cap_data_struct caps[2] = {}, have[2] = {};
	uid_t r, e, s;
	bool need_bpf;

	need_bpf = bpf_needs_cap();
	if (getresuid(&r, &e, &s))
		return runtime_err("cannot read this process's user ids: %s", strerror(errno));
	if (r == ra->uid && e == ra->uid && s == ra->uid) {
		/* Started as that user already (systemd User=, SupplementaryGroups=). */
		if (!in_groups(ra->pin_gid))
			return runtime_err("running as %s but not in group %s, so the pins are "
					   "unreadable: add the group (systemd: "
					   "SupplementaryGroups=%s) or start as root", ra->user,
					   ra->group, ra->group);
	} else {
		/* The bounding set goes first, while CAP_SETPCAP is effective. */
		for (int c = 0; c <= CAP_LAST_CAP + 8; c++)
			if (!need_bpf || c != CAP_BPF)
				prctl(PR_CAPBSET_DROP, c, 0, 0, 0);
		if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || setgroups(1, &ra->pin_gid) ||
		    setresgid(ra->gid, ra->gid, ra->gid) || setresuid(ra->uid, ra->uid, ra->uid))
			return runtime_err("cannot become user %s with group %s: %s: start it as "
					   "root, or as %s with group %s", ra->user, ra->group,
					   strerror(errno), ra->user, ra->group);
		prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
	}

	if (capget_raw(have))
		return runtime_err("cannot read capabilities: %s", strerror(errno));
	if (need_bpf) {
		if (!(have[CAP_BPF / 32].permitted & (1U << (CAP_BPF % 32))))
			return runtime_err("this kernel lets only CAP_BPF use pinned maps "
					   "(kernel.unprivileged_bpf_disabled): start as root, or "
					   "grant it (systemd: AmbientCapabilities=CAP_BPF)");
		caps[CAP_BPF / 32].permitted = caps[CAP_BPF / 32].effective = 1U << (CAP_BPF % 32);
	}
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (capset_raw(caps))
		return runtime_err("cannot drop capabilities: %s", strerror(errno));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		return runtime_err("cannot set no_new_privs: %s", strerror(errno));
	snprintf(kept, len, "running as %s, group %s, %s", ra->user, ra->group,
		 need_bpf ? "only CAP_BPF (kernel.unprivileged_bpf_disabled gates bpf(2) here)" :
			    "no capabilities");
	return 0;
}
