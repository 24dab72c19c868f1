/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the daemons (exporter, check-server, cluster join) tell the service
 * manager, by sd_notify(3): READY=1 once they serve, STATUS= lines,
 * STOPPING=1 on their way out, and WATCHDOG=1 from their main loop when
 * the manager asks for it (WATCHDOG_USEC, sd_watchdog_enabled(3)). Without
 * NOTIFY_SOCKET each call does nothing. */
#ifndef SLUICE_NOTIFY_H
#define SLUICE_NOTIFY_H

#include <stdbool.h>
#include <linux/types.h>

/* The watchdog's schedule: a loop asks notify_due() when it may sleep no
 * longer, and proves itself before notify_alive(). */
struct notify {
	__u64 every_ns;		/* a third of WATCHDOG_USEC (one miss is forgiven); 0: none */
	__u64 next_ns;		/* when the next WATCHDOG=1 is due */
};

/* Reads WATCHDOG_USEC (for this process); the first WATCHDOG=1 is due now. */
void notify_init(struct notify *n);

/* READY=1 with a STATUS= line. */
void notify_ready(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void notify_status(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* STOPPING=1 with a STATUS= line. */
void notify_stopping(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Whether a WATCHDOG=1 is due at now; if so the next one is scheduled,
 * whether or not this one is sent. */
bool notify_due(struct notify *n, __u64 now);
/* WATCHDOG=1: the loop that asked notify_due() has shown it works. */
void notify_alive(const struct notify *n);
/* How long a self-check may take: half the interval, 10 ms to 2 s. */
unsigned int notify_check_ms(const struct notify *n);
/* How long a loop may sleep from now: max_ns, or less when the watchdog's
 * next WATCHDOG=1 is due sooner. */
__u64 notify_sleep_ns(const struct notify *n, __u64 now, __u64 max_ns);

#endif /* SLUICE_NOTIFY_H */
