/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Privilege dropping for the servers: after binding their socket and
 * loading what needs root, they go on as an unprivileged user whose only
 * way to the maps is a group that may read the pins, never write them. */
#ifndef SLUICE_PRIVDROP_H
#define SLUICE_PRIVDROP_H

#include <stddef.h>
#include <sys/types.h>

/* Each server has a system user of its own, which the package creates: a
 * user shared with other daemons (nobody) lets any of them signal (stop)
 * the server or read its memory. */
#define EXPORTER_USER_DEFAULT	"sluice-exporter"
#define RUN_AS_GROUP_DEFAULT	"sluice"	/* the group of the pins */

struct run_as {
	char user[64];
	char group[64];
	uid_t uid;
	gid_t gid;		/* the user's own group */
	gid_t pin_gid;		/* the pins' group, the only supplementary one */
};

/* Looks up USER and GROUP. Prints a usage error and returns EXIT_USAGE
 * when either is unknown or USER is root (uid 0 could rewrite the pins),
 * else 0; a missing USER that is the command's default (dflt) is said to
 * come with the package. Changes nothing. */
int run_as_lookup(const char *user, const char *group, const char *dflt, struct run_as *ra);

/* Becomes ra's user, with ra's pin group as the only supplementary group,
 * and keeps no capability but the one bpf(2) needs here (none where the
 * kernel lets anyone use pinned maps it may open, CAP_BPF where
 * kernel.unprivileged_bpf_disabled gates every command): bounding and
 * ambient sets cleared, no_new_privs and not dumpable. Call it before any
 * thread starts (capabilities are per thread). Already running as that
 * user (systemd's User=) is fine. Returns 0 and describes the result in
 * kept, or prints the error and returns EXIT_RUNTIME. */
int run_as_switch(const struct run_as *ra, char *kept, size_t len);

#endif /* SLUICE_PRIVDROP_H */
