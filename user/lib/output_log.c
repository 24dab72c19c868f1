// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Log lines on stderr: plain "sluice: ..." for a person at a terminal or a
 * script, "<N>sluice: ..." when stderr is the journal, so that journald
 * keeps each line's priority (sd-daemon(3)). */
#define _GNU_SOURCE	/* vasprintf */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "opts.h"
#include "output.h"

#define LOG_LINE_MAX	1024

bool log_to_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char end;
	int fd;

	if (!env || sscanf(env, "%llu:%llu%c", &dev, &ino, &end) != 2)
		return false;
	fd = fileno(stderr);
	return fd >= 0 && !fstat(fd, &st) && (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

bool log_enabled(int prio)
{
	return prio <= LOG_NOTICE + opts.verbose;
}

/* One write of the whole line, so that lines of several threads do not mix. */
void log_line(int prio, const char *text)
{
	char line[LOG_LINE_MAX + 32];
	int n = 0;

	if (prio < LOG_EMERG || prio > LOG_DEBUG)
		prio = LOG_ERR;
	if (log_to_journal())
		n = snprintf(line, sizeof(line), "<%d>", prio);
	snprintf(line + n, sizeof(line) - (size_t)n, "sluice: %s%s\n",
		 prio == LOG_WARNING ? "warning: " : "", text);
	fputs(line, stderr);
}

/* One line, whatever the words from outside hold. */
static void log_clean(int prio, char *text)
{
	for (char *p = text; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	log_line(prio, text);
}

void log_event(int prio, const char *fmt, ...)
{
	char text[LOG_LINE_MAX];
	va_list ap;

	if (!log_enabled(prio))
		return;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap); /* NOLINT(clang-analyzer-valist.Uninitialized): va_start above */
	va_end(ap);
	log_clean(prio, text);
}

void log_lines(int prio, const char *fmt, va_list ap)
{
	char *text = NULL, *rest, *line;

	if (!log_enabled(prio) || vasprintf(&text, fmt, ap) < 0) /* NOLINT(clang-analyzer-valist.Uninitialized): callers va_start */
		return;
	for (rest = text; (line = strsep(&rest, "\n"));)
		if (*line)
			log_clean(prio, line);
	free(text);
}
