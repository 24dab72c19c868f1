// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The deliberately racy check_bucket_judge, linked into
 * build/tests/sluice_check_racy in place of user/daemon/check/bucket.c:
 * the bucket is read, judged and written back with the lock let go in
 * between, so concurrent checks of one source admit too many.
 * tests/check/concurrency.sh must see this build over-admit. */
#include <unistd.h>
#include "check.h"

int check_bucket_judge(struct check_server *s, const struct sluice_limit *l, __u64 st,
		       __u64 now, __u64 *next)
{
	int verdict;

	pthread_mutex_unlock(&s->lock);
	verdict = limit_judge(l, st, now, 1, next);
	usleep(200);
	pthread_mutex_lock(&s->lock);
	return verdict;
}
