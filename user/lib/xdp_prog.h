/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The XDP program's life on a link (xdp_prog.c): load, attach, find by its
 * pins, detach, and the pins' own bookkeeping. */
#ifndef SLUICE_XDP_PROG_H
#define SLUICE_XDP_PROG_H

#include <stdarg.h>
#include <stdbool.h>
#include <net/if.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

struct sluice_bpf;

/* What identifies the program of one pin directory: the ids the prog pins
 * and the attach metadata record, and the ids of the pinned maps. */
struct pin_ids {
	__u32 prog[3];
	__u32 maps[16];
	unsigned int nmaps;
	__u32 meta_ifindex;	/* 0: no attach got as far as writing it */
};

/* The XDP program's name, as the kernel reports it (16 bytes at most). */
#define SLUICE_PROG_NAME	"sluice_xdp"

/* Where a program of these pins runs outside this network namespace. */
struct elsewhere {
	char ns[64];		/* /run/netns/NAME, or /proc/PID/ns/net */
	char ifname[IF_NAMESIZE];
};

/* Loading, attaching and pinning need CAP_NET_ADMIN and CAP_SYS_ADMIN (or
 * CAP_BPF): without them every step fails on a permission, and the first
 * one to fail would name a file, not the cause. Prints the error and
 * returns its exit code, or 0. */
int need_root(const char *what);
void read_pin_ids(const char *dir, struct pin_ids *ids);
/* The program of these pins attached to ifindex, if any (caller closes
 * *mpp); with orphans, else a sluice program that lost its pins. */
struct xdp_program *find_prog(int ifindex, const struct pin_ids *ids, bool orphans,
			      struct xdp_multiprog **mpp);
struct xdp_program *find_ours(int ifindex, const struct pin_ids *ids,
			      struct xdp_multiprog **mpp);
/* Whether the program of these pins runs in another network namespace:
 * 1 found (out says where), 0 not found, -1 when the namespaces could not
 * be entered (not root). */
int find_elsewhere(const char *iface, const struct pin_ids *ids, struct elsewhere *out);
/* Detach the sluice program prog_id; *was_mode says in which mode it ran
 * (XDP_MODE_UNSPEC if it was not attached). */
int detach_prog(const char *iface, int ifindex, __u32 prog_id,
		enum xdp_attach_mode *was_mode);
/* Put the previous program (held by old_fd) back after a failed re-attach;
 * the words to append to the error. */
const char *restore_old(int old_fd, int ifindex, enum xdp_attach_mode mode);
void remove_pins(const char *dir);
/* libxdp's and libbpf's logs, as debug lines (-vv, or SLUICE_DEBUG). */
int libxdp_quiet(enum libxdp_print_level level, const char *fmt, va_list ap);
int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap);
/* The tables attach sizes (--max-sources, --max-bans), the source table's
 * idle time for established sources (--established-idle), and whether
 * each was given on the command line. */
struct table_sizes {
	__u64 sources, bans;
	__u64 est_idle_ns;	/* --established-idle, ns */
	bool sources_given, bans_given, est_idle_given;
};
/* Point every map at its pin so libbpf reuses existing state, and size the
 * source and ban tables: the pinned ones' sizes win unless an option
 * given disagrees (a usage error). */
int prepare_maps(struct sluice_bpf *skel, const char *dir, const char *iface,
		 const struct table_sizes *sz);
/* The attach metadata, and on fresh maps the first policy. */
int write_meta(const char *iface, int ifindex, enum xdp_attach_mode mode,
	       bool multiprog, __u32 prog_id, const struct table_sizes *sz);
__u32 prog_id_of(int fd);
/* Swap the program in place where the previous one runs alone: 0 swapped,
 * 1 not applicable, or an exit code on failure. */
int replace_in_place(struct sluice_bpf *skel, const char *iface, int ifindex,
		     __u32 old_id, const enum xdp_attach_mode *modes, int nmodes,
		     enum xdp_attach_mode *used);
/* A re-attach in another mode (--force): the new program loaded and
 * verified, then the old one taken off and the new one put on in one
 * system call, *gap_ns the time it took. 0; an exit code when the old one
 * still runs; a negative errno when the new mode was refused after the old
 * one went (restore_old). */
int switch_mode(struct sluice_bpf *skel, const char *iface, int ifindex, int old_fd,
		enum xdp_attach_mode old_mode, bool dispatcher, enum xdp_attach_mode mode,
		__u64 *gap_ns);
/* Under libxdp's dispatcher, after the new program joined it: the old
 * one leaves in one request. 0, or a negative errno (both still run). */
int leave_dispatcher(int ifindex, __u32 old_id);
/* Pin the program on the link under a temporary name, then rename it over
 * the old pin, so that the program pin is never missing. */
int pin_prog(const char *dir, int prog_fd);

#endif /* SLUICE_XDP_PROG_H */
