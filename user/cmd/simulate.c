// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* sluice simulate: a trace or a named pattern of arrivals run on a fake
 * clock through the datapath's own math (algo.h: token bucket, fixed and
 * sliding window), beside two references that exist only here (the exact
 * sliding log and a leaky bucket as a queue); counts, errors and a gnuplot
 * picture of admitted versus time. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "core.h"
#include "sluice/algo.h"
#include "cli.h"
#include "rule.h"
#include "simulate.h"
#include "simulate_arrivals.h"

#define SIM_DURATION_MAX	(24ULL * 3600 * SLUICE_NS_PER_SEC)
/* Up to this many admissions a series is drawn event by event; past it,
 * one point per 1/SIM_PLOT_CELLS of the run (the most in a window). */
#define SIM_PLOT_EVENTS		20000
#define SIM_PLOT_CELLS		4000
#define SIM_PATH_MAX		192	/* a file of the plot's temp dir */

struct sim_options {
	const char *trace;	/* --trace FILE, or NULL */
	int pattern;		/* enum sim_pattern, or -1 when not given */
	const char *plot;	/* --plot FILE, or NULL */
	/* As given; read below by lib/rule.c's parsers. */
	const char *rate, *window, *burst, *duration;
};

static const struct sim_options sim_defaults = { .pattern = -1, .duration = "10s" };

/* --rate, --window, --burst and --duration are read together below, as
 * 'limit set' reads them: each one's bounds depend on the rate's unit. */
enum { S_TRACE, S_PATTERN, S_RATE, S_WINDOW, S_BURST, S_DURATION, S_PLOT };
#define G_ARRIVALS	1	/* --trace or --pattern: one run simulates one set of arrivals */

static const struct cli_opt sim_opts[] = {
	[S_TRACE] = CLI_STR("trace", 0, "FILE", "arrival times, seconds, one a line",
			    struct sim_options, trace, .need = CLI_ALL, .group = G_ARRIVALS),
	[S_PATTERN] = CLI_ENUM("pattern", 0, "steady|bursty|boundary|ramp", "a named arrival pattern",
			       struct sim_options, pattern, pattern_names, .need = CLI_ALL,
			       .group = G_ARRIVALS),
	[S_RATE] = CLI_STR("rate", 0, "N[/s|/m|/h]", "the limit, as for 'limit set'",
			   struct sim_options, rate, .need = CLI_ALL),
	[S_WINDOW] = CLI_STR("window", 0, "DURATION", "the windows' window (default: the rate's unit)",
			     struct sim_options, window),
	[S_BURST] = CLI_STR("burst", 0, "N",
			    "the token bucket's burst, the queue's length (default: one second's worth)",
			    struct sim_options, burst),
	[S_DURATION] = CLI_STR("duration", 0, "DURATION", "how long a pattern runs",
			       struct sim_options, duration),
	[S_PLOT] = CLI_STR("plot", 0, "FILE.svg|FILE.png", "draw admitted versus time with gnuplot",
			   struct sim_options, plot),
	CLI_OPT_END,
};

static const char *const sim_names[A_MAX] = {
	[A_TOKEN_BUCKET] = "token-bucket",
	[A_LEAKY_QUEUE] = "leaky-bucket-queue",
	[A_FIXED_WINDOW] = "fixed-window",
	[A_SLIDING_WINDOW] = "sliding-window",
	[A_SLIDING_LOG] = "sliding-log",
};

/* Each algorithm's colour and dash in both plots. */
static const char *const sim_styles[A_MAX] = {
	[A_TOKEN_BUCKET] = "lc rgb '#1b9e77' lw 2",
	[A_LEAKY_QUEUE] = "lc rgb '#7570b3' lw 2 dt 2",
	[A_FIXED_WINDOW] = "lc rgb '#d95f02' lw 2",
	[A_SLIDING_WINDOW] = "lc rgb '#e7298a' lw 2",
	[A_SLIDING_LOG] = "lc rgb '#202020' lw 1.5 dt 3",
};

static bool bit_get(const __u8 *m, size_t i)
{
	return m[i >> 3] & (1u << (i & 7));
}

static void bit_set(__u8 *m, size_t i)
{
	m[i >> 3] |= (__u8)(1u << (i & 7));
}

/* --- the algorithms ------------------------------------------------------ */

/* One of algo.h's limits, as the policy table holds it (store.c's
 * policy_to_table), judged arrival by arrival from an empty bucket. */
static void run_limit(struct sim *s, enum sim_algo a, const struct sluice_limit *l)
{
	__u64 st = 0, next;

	for (size_t i = 0; i < s->n; i++)
		if (limit_admit(l, st, s->t[i], 1, &next)) {
			st = next;
			bit_set(s->adm[a], i);
			s->admitted[a]++;
		}
}

/* The exact sliding log: every admitted time of the last window; admitted
 * while fewer than N lie in (t - W, t]. */
static int run_log(struct sim *s)
{
	__u64 *ring = calloc(s->budget, sizeof(*ring));
	size_t head = 0, used = 0;

	if (!ring)
		return runtime_err("out of memory for the sliding log");
	for (size_t i = 0; i < s->n; i++) {
		__u64 t = s->t[i];

		while (used && ring[head] + s->window_ns <= t) {
			head = (head + 1) % s->budget;
			used--;
		}
		if (used < s->budget) {
			ring[(head + used) % s->budget] = t;
			used++;
			bit_set(s->adm[A_SLIDING_LOG], i);
			s->admitted[A_SLIDING_LOG]++;
		}
	}
	free(ring);
	return 0;
}

/*
 * A leaky bucket as a queue of B places, drained one packet every T =
 * period / rate: a packet is in the queue from its arrival until it has
 * drained, one T after it started draining; an arrival that finds B there
 * is dropped. Time is kept in ns x rate, so T (period x 1e9 in those units)
 * is exact. The packets queued form one train, each draining T after the
 * one before, so the queue's length is ceil((end of the last - now) / T).
 */
static int run_queue(struct sim *s)
{
	unsigned __int128 tick = (unsigned __int128)s->r.period * SLUICE_NS_PER_SEC;
	unsigned __int128 last = 0, now, begin, wait, sum = 0, max = 0, queued;
	size_t k = 0;

	s->depart = malloc((s->n ? s->n : 1) * sizeof(*s->depart));
	if (!s->depart)
		return runtime_err("out of memory for the leaky queue");
	for (size_t i = 0; i < s->n; i++) {
		now = (unsigned __int128)s->t[i] * s->r.rate;
		queued = last > now ? (last - now + tick - 1) / tick : 0;
		if (queued >= s->burst)
			continue;
		begin = last > now ? last : now;
		last = begin + tick;
		wait = begin - now;
		sum += wait;
		if (wait > max)
			max = wait;
		/* when it starts draining, rounded up to the ns */
		s->depart[k++] = (__u64)((begin + s->r.rate - 1) / s->r.rate);
		bit_set(s->adm[A_LEAKY_QUEUE], i);
	}
	s->admitted[A_LEAKY_QUEUE] = k;
	s->delay_max_ns = (__u64)((max + s->r.rate - 1) / s->r.rate);
	s->delay_mean_ns = k ? (__u64)((sum + (unsigned __int128)k * s->r.rate / 2) /
				       ((unsigned __int128)k * s->r.rate)) : 0;
	return 0;
}

/* The times an algorithm admitted at (the leaky queue: when they left it),
 * in order. */
struct cursor {
	const __u64 *t;
	const __u8 *bits;	/* NULL: every time counts */
	size_t n, i;
};

static struct cursor series(const struct sim *s, int a)
{
	struct cursor c = { .t = s->t, .n = s->n };

	if (a == A_LEAKY_QUEUE) {
		c.t = s->depart;
		c.n = s->admitted[A_LEAKY_QUEUE];
	} else if (a >= 0) {
		c.bits = s->adm[a];
	}
	return c;
}

static bool cursor_next(struct cursor *c, __u64 *at)
{
	while (c->i < c->n) {
		size_t k = c->i++;

		if (!c->bits || bit_get(c->bits, k)) {
			*at = c->t[k];
			return true;
		}
	}
	return false;
}

/* Where the plot's points of one series go. */
struct plot_out {
	FILE *f;
	bool every;		/* a point per change, else per cell */
	__u64 first, cell_ns;	/* the cells: from first, cell_ns each */
	__u64 cell, cum, most;	/* the open cell: its last total, its most in a window */
	bool open;
};

/* The open cell's point: at its end, the total then and the most in a
 * window during it. */
static void plot_cell(struct plot_out *p)
{
	__u64 at = p->first + (p->cell + 1) * p->cell_ns;

	fprintf(p->f, "%llu.%09llu %llu %llu\n", at / SLUICE_NS_PER_SEC, at % SLUICE_NS_PER_SEC,
		p->cum, p->most);
	p->most = 0;
	p->open = false;
}

static void plot_point(struct plot_out *p, __u64 at, __u64 cum, __u64 in)
{
	__u64 cell;

	if (!p || !p->f)
		return;
	if (p->every) {
		fprintf(p->f, "%llu.%09llu %llu %llu\n", at / SLUICE_NS_PER_SEC,
			at % SLUICE_NS_PER_SEC, cum, in);
		return;
	}
	cell = (at - p->first) / p->cell_ns;
	if (p->open && cell != p->cell)
		plot_cell(p);
	p->open = true;
	p->cell = cell;
	p->cum = cum;
	if (in > p->most)
		p->most = in;
}

/*
 * The most admitted in any window-long interval, (t - W, t] at each
 * admission t; with p, the series' points: the running total and what the
 * last window held, at each admission and each time one leaves the window.
 */
static __u64 window_walk(const struct sim *s, int a, struct plot_out *p)
{
	struct cursor in = series(s, a), out = series(s, a);
	__u64 at = 0, lt = 0, most = 0, count = 0, cum = 0;
	bool more_in = cursor_next(&in, &at), more_out = cursor_next(&out, &lt);

	while (more_in || more_out) {
		/* leaving (at lt + W) before entering at the same time: the
		 * interval is (t - W, t] */
		if (more_out && count && (!more_in || lt + s->window_ns <= at)) {
			count--;
			plot_point(p, lt + s->window_ns, cum, count);
			more_out = cursor_next(&out, &lt);
			continue;
		}
		if (!more_in)
			break;
		count++;
		cum++;
		if (count > most)
			most = count;
		plot_point(p, at, cum, count);
		more_in = cursor_next(&in, &at);
	}
	if (p && p->f && !p->every && p->open)
		plot_cell(p);
	return most;
}

static int simulate(struct sim *s)
{
	struct sluice_limit tb, fw, sw;
	struct rule r = s->r;
	int err;

	for (int a = 0; a < A_MAX; a++) {
		s->adm[a] = calloc(s->n / 8 + 1, 1);
		if (!s->adm[a])
			return runtime_err("out of memory for %zu arrivals", s->n);
	}
	/* the limits exactly as a rule of each algorithm puts them in the
	 * policy table */
	r.action = SLUICE_ACT_LIMIT;
	r.ban_ns = 0;
	r.algo = SLUICE_ALGO_TOKEN_BUCKET;
	r.burst = s->burst;
	rule_limit(&r, &tb);
	r.window_ns = s->window_ns;
	r.burst = s->budget;
	r.algo = SLUICE_ALGO_FIXED_WINDOW;
	rule_limit(&r, &fw);
	r.algo = SLUICE_ALGO_SLIDING_WINDOW;
	rule_limit(&r, &sw);
	run_limit(s, A_TOKEN_BUCKET, &tb);
	run_limit(s, A_FIXED_WINDOW, &fw);
	run_limit(s, A_SLIDING_WINDOW, &sw);
	err = run_log(s);
	if (!err)
		err = run_queue(s);
	if (err)
		return err;
	for (size_t i = 0; i < s->n; i++) {
		bool w = bit_get(s->adm[A_SLIDING_WINDOW], i), l = bit_get(s->adm[A_SLIDING_LOG], i);

		s->over += w && !l;
		s->under += l && !w;
	}
	for (int a = 0; a < A_MAX; a++)
		s->max_in_window[a] = window_walk(s, a, NULL);
	return 0;
}

/* --- output -------------------------------------------------------------- */

void ns_words(__u64 ns, char *buf, size_t len)
{
	if (ns >= SLUICE_NS_PER_SEC)
		snprintf(buf, len, "%.6gs", (double)ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, len, "%.6gms", (double)ns / 1e6);
	else if (ns >= 1000)
		snprintf(buf, len, "%.6gus", (double)ns / 1e3);
	else
		snprintf(buf, len, "%lluns", ns);
}

static double relative_error(const struct sim *s)
{
	double log = (double)s->admitted[A_SLIDING_LOG];

	return log ? ((double)s->admitted[A_SLIDING_WINDOW] - log) / log : 0.0;
}

static void print_json(const struct sim *s)
{
	struct json j;

	json_begin(&j, stdout);
	json_obj_open(&j, NULL);
	json_u64(&j, "arrivals", s->n);
	json_double(&j, "rate_per_sec", (double)s->r.rate / (double)s->r.period);
	json_u64(&j, "window_ns", s->window_ns);
	json_u64(&j, "budget", s->budget);
	json_u64(&j, "burst", s->burst);
	json_arr_open(&j, "algorithms");
	for (int a = 0; a < A_MAX; a++) {
		json_obj_open(&j, NULL);
		json_str(&j, "name", sim_names[a]);
		json_u64(&j, "admitted", s->admitted[a]);
		json_u64(&j, "rejected", s->n - s->admitted[a]);
		json_u64(&j, "max_in_window", s->max_in_window[a]);
		if (a == A_LEAKY_QUEUE) {
			json_u64(&j, "mean_delay_ns", s->delay_mean_ns);
			json_u64(&j, "max_delay_ns", s->delay_max_ns);
		}
		json_obj_close(&j);
	}
	json_arr_close(&j);
	json_obj_open(&j, "sliding_window_vs_log");
	json_u64(&j, "over", s->over);
	json_u64(&j, "under", s->under);
	json_double(&j, "relative_error", relative_error(s));
	json_obj_close(&j);
	json_obj_close(&j);
	json_end(&j);
}

static void print_text(const struct sim *s)
{
	char rate[32], win[24], span[24], mean[24], max[24];

	rule_rate_words(&s->r, rate, sizeof(rate));
	duration_words(s->window_ns, win, sizeof(win));
	ns_words(s->t[s->n - 1] - s->t[0], span, sizeof(span));
	printf("%zu arrivals (%s) over %s; --rate %s --window %s: budget %llu a window; "
	       "--burst %llu\n", s->n, s->source, span, rate, win, s->budget, s->burst);
	printf("%-20s %10s %10s %10s %13s\n", "algorithm", "arrivals", "admitted", "rejected",
	       "max_in_window");
	for (int a = 0; a < A_MAX; a++) {
		printf("%-20s %10zu %10zu %10zu %13llu", sim_names[a], s->n, s->admitted[a],
		       s->n - s->admitted[a], s->max_in_window[a]);
		if (a == A_LEAKY_QUEUE) {
			ns_words(s->delay_mean_ns, mean, sizeof(mean));
			ns_words(s->delay_max_ns, max, sizeof(max));
			printf("  queueing delay mean %s, max %s", mean, max);
		} else if (a == A_SLIDING_WINDOW) {
			printf("  vs sliding-log: %zu over, %zu under, admitted %+.4f%%", s->over,
			       s->under, 100.0 * relative_error(s));
		}
		putchar('\n');
	}
}

/* --- the picture: gnuplot ------------------------------------------------ */

/* Whether gnuplot is in PATH; its path in path. */
static bool gnuplot_found(char *path, size_t len)
{
	const char *env = getenv("PATH");
	char dirs[4096], *save = NULL;

	snprintf(dirs, sizeof(dirs), "%s", env && *env ? env : "/usr/bin:/bin");
	for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		snprintf(path, len, "%s/gnuplot", *d ? d : ".");
		if (access(path, X_OK) == 0)
			return true;
	}
	return false;
}

/* The plot kind FILE's extension names: "svg", "png", or NULL. */
static const char *plot_kind(const char *file)
{
	const char *dot = strrchr(file, '.');

	if (!dot || dot == file || dot[-1] == '/')
		return NULL;
	if (!strcasecmp(dot, ".svg"))
		return "svg";
	if (!strcasecmp(dot, ".png"))
		return "png";
	return NULL;
}

/* The temp dir's files, removed at the end. */
struct plot_dir {
	char dir[64];
	char files[A_MAX + 4][SIM_PATH_MAX];
	int nfiles;
};

/* A file of the temp dir, to be removed with it. */
static void plot_name(struct plot_dir *d, const char *name, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", d->dir, name);
	if (d->nfiles < (int)(sizeof(d->files) / sizeof(d->files[0])))
		snprintf(d->files[d->nfiles++], sizeof(d->files[0]), "%s", path);
}

static FILE *plot_file(struct plot_dir *d, const char *name, char *path, size_t len)
{
	plot_name(d, name, path, len);
	return fopen(path, "w");
}

static void plot_dir_remove(struct plot_dir *d)
{
	for (int i = 0; i < d->nfiles; i++)
		unlink(d->files[i]);
	rmdir(d->dir);
}

/* One series' data file: "seconds total in-window" a line. */
static int write_series(const struct sim *s, struct plot_dir *d, int a, const char *name)
{
	struct plot_out p = { 0 };
	char path[SIM_PATH_MAX], file[48];
	__u64 events = a < 0 ? s->n : s->admitted[a], span;
	int bad;

	snprintf(file, sizeof(file), "%s.dat", name);
	p.f = plot_file(d, file, path, sizeof(path));
	if (!p.f)
		return runtime_err("cannot write %s: %s", path, strerror(errno));
	p.every = events <= SIM_PLOT_EVENTS;
	p.first = s->t[0];
	span = s->t[s->n - 1] - s->t[0];
	if (a == A_LEAKY_QUEUE && events && s->depart[events - 1] > s->t[s->n - 1])
		span = s->depart[events - 1] - s->t[0];
	span += s->window_ns;
	p.cell_ns = span / SIM_PLOT_CELLS + 1;
	/* from 0 at the first arrival, so the curves start together */
	fprintf(p.f, "%llu.%09llu 0 0\n", s->t[0] / SLUICE_NS_PER_SEC,
		s->t[0] % SLUICE_NS_PER_SEC);
	window_walk(s, a, &p);
	bad = ferror(p.f);
	if (fclose(p.f) || bad)
		return runtime_err("cannot write %s: %s", path, strerror(errno));
	return 0;
}

/* gnuplot quotes: in single quotes, a quote is doubled. */
static void gp_quoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

static int write_script(const struct sim *s, struct plot_dir *d, const char *kind,
			const char *image, char *path, size_t len)
{
	char rate[32], win[24], title[160];
	FILE *f = plot_file(d, "plot.gp", path, len);
	int bad;

	if (!f)
		return runtime_err("cannot write %s: %s", path, strerror(errno));
	rule_rate_words(&s->r, rate, sizeof(rate));
	duration_words(s->window_ns, win, sizeof(win));
	snprintf(title, sizeof(title), "%s: --rate %s, --window %s (budget %llu), --burst %llu",
		 s->source, rate, win, s->budget, s->burst);
	if (!strcmp(kind, "svg"))
		fputs("set terminal svg size 1000,750 dynamic noenhanced font 'sans,11' background '#ffffff'\n",
		      f);
	else
		fputs("set terminal pngcairo size 1000,750 noenhanced font 'sans,10' background '#ffffff'\n", f);
	fputs("set output ", f);
	gp_quoted(f, image);
	fputs("\nset multiplot layout 2,1 title ", f);
	gp_quoted(f, title);
	fprintf(f, "\nset key outside right top reverse Left\nset grid\nset xlabel 'time (s)'\n"
		"set format x '%%g'\nset lmargin 10\nset rmargin 25\n"
		"set yrange [0:*]\nset offsets 0, 0, graph 0.08, 0\n"
		"set ylabel 'admitted so far'\nplot ");
	for (int a = 0; a < A_MAX; a++)
		fprintf(f, "'%s/%s.dat' using 1:2 with steps %s title '%s', \\\n  ", d->dir,
			sim_names[a], sim_styles[a], sim_names[a]);
	fprintf(f, "'%s/arrivals.dat' using 1:2 with steps lc rgb '#999999' lw 1 title 'arrivals'\n",
		d->dir);
	fprintf(f, "set ylabel 'admitted in the last window'\n"
		"plot %llu with lines dt 2 lc rgb '#888888' title 'budget N', "
		"%llu with lines dt 4 lc rgb '#bbbbbb' title '2N'", s->budget, 2 * s->budget);
	for (int a = 0; a < A_MAX; a++)
		fprintf(f, ", \\\n  '%s/%s.dat' using 1:3 with steps %s title '%s'", d->dir,
			sim_names[a], sim_styles[a], sim_names[a]);
	fputs("\nunset multiplot\nset output\n", f);
	bad = ferror(f);
	if (fclose(f) || bad)
		return runtime_err("cannot write %s: %s", path, strerror(errno));
	return 0;
}

/* Runs gnuplot on script; its output goes to log. */
static int run_gnuplot(const char *gnuplot, const char *script, const char *log)
{
	char line[256] = "", last[256] = "";
	int status, fd;
	FILE *f;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return runtime_err("cannot start gnuplot: %s", strerror(errno));
	if (pid == 0) {
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0)
			_exit(126);
		close(STDIN_FILENO);
		execl(gnuplot, "gnuplot", script, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return runtime_err("cannot wait for gnuplot: %s", strerror(errno));
	f = fopen(log, "r");
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[strspn(line, " \t^")])
			snprintf(last, sizeof(last), "%s", line);
	}
	if (f)
		fclose(f);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return runtime_err("gnuplot failed (%s %d)%s%s", WIFEXITED(status) ? "exit" : "signal",
				   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
				   *last ? ": " : "", last);
	if (*last)
		return runtime_err("gnuplot: %s", last);
	return 0;
}

/* The image gnuplot drew, copied to where --plot asked. */
static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	FILE *in = fopen(from, "rb"), *out;
	size_t n, total = 0;
	int bad;

	if (!in)
		return runtime_err("gnuplot wrote no picture: %s", strerror(errno));
	out = fopen(to, "wb");
	if (!out) {
		fclose(in);
		return runtime_err("cannot write --plot %s: %s", to, strerror(errno));
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0) {
		total += n;
		if (fwrite(buf, 1, n, out) != n)
			break;
	}
	bad = ferror(in) || ferror(out);
	fclose(in);
	if (fclose(out) || bad || !total)
		return runtime_err("cannot write --plot %s: %s", to,
				   total ? strerror(errno) : "gnuplot drew nothing");
	return 0;
}

static int plot(const struct sim *s, const char *gnuplot, const char *file, const char *kind)
{
	const char *tmp = getenv("TMPDIR");
	struct plot_dir d = { .nfiles = 0 };
	char script[SIM_PATH_MAX], image[SIM_PATH_MAX], log[SIM_PATH_MAX], name[16];
	int err = 0;

	snprintf(d.dir, sizeof(d.dir), "%s/sluice-sim.XXXXXX",
		 tmp && *tmp && strlen(tmp) < 32 ? tmp : "/tmp");
	if (!mkdtemp(d.dir))
		return runtime_err("cannot make a temporary directory in %s: %s",
				   tmp && *tmp ? tmp : "/tmp", strerror(errno));
	err = write_series(s, &d, -1, "arrivals");
	for (int a = 0; a < A_MAX && !err; a++)
		err = write_series(s, &d, a, sim_names[a]);
	snprintf(name, sizeof(name), "plot.%s", kind);
	plot_name(&d, name, image, sizeof(image));
	plot_name(&d, "gnuplot.log", log, sizeof(log));
	if (!err)
		err = write_script(s, &d, kind, image, script, sizeof(script));
	if (!err)
		err = run_gnuplot(gnuplot, script, log);
	if (!err)
		err = copy_file(image, file);
	plot_dir_remove(&d);
	return err;
}

/* --- the command --------------------------------------------------------- */

static int simulate_run(const struct cli_cmd *c, struct cli_args *a)
{
	const struct sim_options *o = CLI_OPTIONS(a, struct sim_options);
	struct sim s = { .source = NULL };
	char why[512], gnuplot[4096];
	enum sim_pattern pat = o->pattern >= 0 ? (enum sim_pattern)o->pattern : P_MAX;
	__u64 duration = 0;
	const char *kind = NULL;
	int err;

	(void)c;
	/* One of --trace and --pattern, and --rate: the option table's. */
	if (a->val[S_DURATION] && pat == P_MAX)
		return usage_err("--duration goes with --pattern: a trace lasts as its times say");
	/* The words as 'limit set' reads them: the rate, the window and its
	 * budget (which a sliding window must hold), the burst. */
	s.r.unit = SLUICE_UNIT_PACKETS;
	s.r.algo = SLUICE_ALGO_SLIDING_WINDOW;
	if (rule_parse_rate("--rate", o->rate, &s.r, why, sizeof(why)) ||
	    rule_parse_window(o->window, &s.r, why, sizeof(why)))
		return usage_err("%s", why);
	s.window_ns = s.r.window_ns;
	s.budget = s.r.burst;
	s.r.burst = (s.r.rate + s.r.period - 1) / s.r.period;
	if (o->burst && rule_parse_burst(o->burst, &s.r, why, sizeof(why)))
		return usage_err("%s", why);
	s.burst = s.r.burst;
	if (pat != P_MAX &&
	    rule_parse_duration("--duration", o->duration, SLUICE_WINDOW_NS_MIN,
				SIM_DURATION_MAX, &duration, why, sizeof(why)))
		return usage_err("%s", why);
	if (o->plot) {
		kind = plot_kind(o->plot);
		if (!kind)
			return usage_err("bad --plot '%s': give a file name ending in .svg or .png",
					 o->plot);
		if (!gnuplot_found(gnuplot, sizeof(gnuplot)))
			return runtime_err("gnuplot not found in PATH: install gnuplot-nox "
					   "(tools/install-deps.sh) to draw --plot");
	}

	if (o->trace) {
		s.source = o->trace;
		err = read_trace(&s, o->trace);
	} else {
		s.source = pattern_names[pat];
		err = make_pattern(&s, pat, duration);
	}
	if (!err)
		err = simulate(&s);
	if (!err && kind)
		err = plot(&s, gnuplot, o->plot, kind);
	if (!err) {
		if (opts.json)
			print_json(&s);
		else
			print_text(&s);
	}
	free(s.t);
	free(s.depart);
	for (int i = 0; i < A_MAX; i++)
		free(s.adm[i]);
	return err;
}

const struct cli_cmd simulate_cmd = {
	.name = "simulate", .path = "simulate", .json = true, .opts = sim_opts,
	.min_pos = 0, .max_pos = 0, .run = simulate_run, CLI_DEFAULTS(sim_defaults),
	.help = "Runs arrivals on a fake clock through the datapath's own math (token bucket,\n"
		"fixed window, sliding window) and two references: the exact sliding log\n"
		"(admits while fewer than N = rate x window were admitted in the last window)\n"
		"and a leaky bucket as a queue (--burst places, drained at the rate; reports\n"
		"the queueing delay). Prints admitted, rejected and the most admitted in any\n"
		"window-long interval for each, and the sliding window's error against the log.\n"
		"--trace FILE: one arrival a line, seconds with up to 9 fraction digits\n"
		"(12345.000125000), not decreasing; '#' comments. The times are the clock, as\n"
		"CLOCK_MONOTONIC is the datapath's. At most 10000000 arrivals.\n"
		"--pattern, from t=0 for --duration (default 10s), R the rate, W the window,\n"
		"N = R x W: steady, 2R evenly; bursty, 4R for half a window in the middle of\n"
		"every other window; boundary, N in the last W/50 before every other window\n"
		"boundary and N in the W/50 after it; ramp, from 0 rising evenly to 4R.\n"
		"--plot draws admitted versus time with gnuplot.",
};
