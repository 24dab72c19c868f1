// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* One request judged against its bucket, with the server's lock held
 * from the read of the bucket to the write of its new state: so
 * concurrent checks of one source are judged one after the other.
 * tests/check/racy_bucket.c is this function with the lock let go. */
#include "check.h"

int check_bucket_judge(struct check_server *s, const struct sluice_limit *l, __u64 st,
		       __u64 now, __u64 *next)
{
	(void)s;
	return limit_judge(l, st, now, 1, next);
}
