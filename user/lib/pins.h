/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Where the pins live, and who may read them (pins.c). */
#ifndef SLUICE_PINS_H
#define SLUICE_PINS_H

#include <stddef.h>
#include <sys/types.h>

/* Where pins live by default; code asks pin_root() (pins.c), which also
 * finds the host's bpffs from inside `ip netns exec`. */
#define SLUICE_BPFFS		"/sys/fs/bpf"
#define SLUICE_PIN_ROOT		SLUICE_BPFFS "/sluice"
#define SLUICE_PROG_PIN		"prog"
/* The new program's pin until it is renamed over SLUICE_PROG_PIN, so that
 * the program pin is never missing (bpffs refuses names with a dot). */
#define SLUICE_PROG_PIN_NEW	"prog_new"
/* The writers' lock: a directory in the pin directory that only root may
 * open (0700 root:root), flock()ed by every command that changes the
 * policy. The pin directory itself is readable by the pins' group, and a
 * lock any reader can open is one any reader can hold. */
#define SLUICE_LOCK_PIN		"lock"
/* The pin of a map earlier versions had and this one has not (keyed
 * buckets now live in the source table): an upgrade and a detach remove
 * it. */
#define SLUICE_RETIRED_PIN	"src_buckets"
/* The group that may read the pins when attach is given no --group. */
#define SLUICE_PIN_GROUP	"sluice"
#define SLUICE_BPFFS_ARG_MAX	128	/* longest --bpffs DIR */
#define SLUICE_DIR_MAX		192	/* a pin directory: root + "/" + iface */
#define SLUICE_PATH_MAX		256	/* a pin: directory + "/" + name */

/* The directory that holds one pin directory per interface: sluice/ in
 * --bpffs DIR, $SLUICE_BPFFS, or the host's bpffs, found even from inside
 * `ip netns exec` (which hides it). Resolved once; main() does it first. */
const char *pin_root(void);
/* 0 when pin_root() can be used; else prints why and returns the exit code. */
int pin_root_check(void);
/* pin_root_check, and the pin root can be read by this process. */
int pin_root_readable(void);
/* The group attach gives the pins: NAME, which must exist (else a usage
 * error), or with NULL SLUICE_PIN_GROUP, created as a system group if
 * missing. Prints the error and returns its exit code. */
int pins_group(const char *name, gid_t *gid);
/* Makes the pin root and dir (0750) and every map pin (0640) owned by root
 * and readable by gid; the program pin and the lock are root's alone
 * (0600, 0700). */
int pins_set_access(const char *dir, gid_t gid);
/* Takes the writers' lock of pin directory dir (SLUICE_LOCK_PIN, made if
 * missing: pins of a version without it), waiting for it: the held
 * descriptor (closing it unlocks), or -1 with errno (EACCES: not root). */
int pins_lock(const char *dir);
#endif /* SLUICE_PINS_H */
