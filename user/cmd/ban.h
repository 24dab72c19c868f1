/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the ban object's files (ban.c, ban_prefix.c, ban_load.c) share:
 * the prefix bans of the picked interface, opened and shown. */
#ifndef SLUICE_CMD_BAN_H
#define SLUICE_CMD_BAN_H

#include "core.h"

/* Opens the picked interface's maps and ban table; edit: writable and
 * locked, with expired bans swept. */
int prefix_bans_open(struct sluice_maps *m, struct bantab *t, bool edit);
void prefix_bans_close(struct sluice_maps *m, struct bantab *t);
/* The same read-only and unlocked, for ban list: 0; 1 when the trie may
 * not be read (not root: nothing printed, the maps closed, t's lists as
 * read, which the pins' group may); -1 after an error (printed). */
int prefix_bans_peek(struct sluice_maps *m, struct bantab *t);
/* Lifts the ban on exactly prefix c (from list `list`, or from every list
 * when list < 0): 1 when there was one, 0 when not, or an exit status. */
int prefix_ban_del(const struct sluice_maps *m, struct bantab *t, const struct cidr *c, int list);
/* Appends every prefix ban of t (of list `list`, or all when list < 0) to
 * ban list's output. */
int prefix_bans_list(const struct bantab *t, int list, struct json *j);
extern const struct cli_cmd ban_add_cmd, ban_load_cmd;

#endif /* SLUICE_CMD_BAN_H */
