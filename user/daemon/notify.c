// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sd_notify(3) for the daemons: see notify.h. */
#include <stdarg.h>
#include <stdio.h>
#include <systemd/sd-daemon.h>
#include "notify.h"

#define STATUS_MAX	512

void notify_init(struct notify *n)
{
	uint64_t usec = 0;

	n->every_ns = 0;
	n->next_ns = 0;
	/* > 0: a watchdog, for this very process (WATCHDOG_PID, when set). */
	if (sd_watchdog_enabled(0, &usec) > 0 && usec)
		n->every_ns = usec * 1000 / 3;
}

static void vsay(const char *first, const char *fmt, va_list ap)
{
	char status[STATUS_MAX];

	vsnprintf(status, sizeof(status), fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized): callers va_start */
	/* STATUS= is one line. */
	for (char *p = status; *p; p++)
		if (*p == '\n')
			*p = ' ';
	sd_notifyf(0, "%s%sSTATUS=%s", first ? first : "", first ? "\n" : "", status);
}

void notify_ready(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("READY=1", fmt, ap);
	va_end(ap);
}

void notify_status(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(NULL, fmt, ap);
	va_end(ap);
}

void notify_stopping(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay("STOPPING=1", fmt, ap);
	va_end(ap);
}

bool notify_due(struct notify *n, __u64 now)
{
	if (!n->every_ns || now < n->next_ns)
		return false;
	n->next_ns = now + n->every_ns;
	return true;
}

void notify_alive(const struct notify *n)
{
	if (n->every_ns)
		sd_notify(0, "WATCHDOG=1");
}

unsigned int notify_check_ms(const struct notify *n)
{
	__u64 ms = n->every_ns / 2 / 1000000;

	return ms < 10 ? 10 : ms > 2000 ? 2000 : (unsigned int)ms;
}

__u64 notify_sleep_ns(const struct notify *n, __u64 now, __u64 max_ns)
{
	if (!n->every_ns)
		return max_ns;
	if (n->next_ns <= now)
		return 0;
	return n->next_ns - now < max_ns ? n->next_ns - now : max_ns;
}
