/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The command objects main() dispatches to (cli.h), each defined in its
 * object's file under cmd/ or daemon/. */
#ifndef SLUICE_COMMANDS_H
#define SLUICE_COMMANDS_H

struct cli_cmd;
extern const struct cli_cmd attach_cmd, detach_cmd, status_cmd, limit_obj, policy_obj, stats_cmd,
	top_cmd, query_cmd, ban_obj, exporter_cmd, check_cmd;

#endif /* SLUICE_COMMANDS_H */
