// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The Redis Cluster client of the agent (user/daemon/cluster/rcluster.c)
 * as a naive one would be: MOVED and ASK are plain error replies (the
 * sync fails, the host falls back), and the slot's owner is read from the
 * seeds once, at the first connect, and kept for good. Linked in place of
 * rcluster.o into build/tests/sluice-rcluster-noredirect:
 * tests/cluster/rcluster.sh must fail against it (its agents fall back
 * during a resharding and never follow the slot). */
#define _GNU_SOURCE	/* memrchr, as rcluster.c */
#include <string.h>

/* No error reply is a MOVED or an ASK: rcluster.c's redirect_of() tells
 * them apart with strncmp() alone. */
static int noredirect_strncmp(const char *a, const char *b, size_t n)
{
	if (!strcmp(b, "MOVED ") || !strcmp(b, "ASK "))
		return 1;
	return strncmp(a, b, n);
}
#define strncmp noredirect_strncmp
#define rcluster_locate rcluster_locate_each_time
#include "../../user/daemon/cluster/rcluster.c"
#undef rcluster_locate

/* The owner found at the first connect, for good. */
int rcluster_locate(struct redis *r, __u64 deadline)
{
	static bool located;

	if (located) {
		where_set(r, &r->rc->owner);
		return 0;
	}
	if (rcluster_locate_each_time(r, deadline))
		return -1;
	located = true;
	return 0;
}
