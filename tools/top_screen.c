// SPDX-License-Identifier: GPL-2.0
/*
 * tracevisor top's full-screen view (ncurses), in the spirit of kvm_stat's:
 * the intervals are read by the view's own thread (tv_top_start()), so keys
 * are answered at once, and every key re-draws the latest interval.
 *
 *   s  sort: total, count, rate, p99     v  one VM, the next, all
 *   c  one vCPU of the rows shown (drill-down), the next, all
 *   +  interval x2     -  interval /2     r  reset (sort, VM, vCPU, view)
 *   g  guest view (top --guest): per vCPU, the guest tasks and IRQs with
 *      the most exits and exit time, all reasons summed
 *   h  help            q  quit (also Ctrl-C)
 */
#define _GNU_SOURCE
#include <curses.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dlfcn.h>

#include "tracevisor/tracevisor.h"
#include "cmd.h"

/*
 * ncurses loaded with dlopen() when the view starts: linked, every command
 * loaded it and libtinfo (495 symbol lookups at start), `record --xen` in a
 * PV dom0 among them (bench/xen-bench, startup row).  Below the loader,
 * each name the view calls (or curses.h's macros expand to) is the pointer.
 */
#define CURSES_FUNCS(X)                                                              \
	X(SCREEN *, newterm, (const char *, FILE *, FILE *))                        \
	X(void, delscreen, (SCREEN *))                                              \
	X(int, endwin, (void))                                                      \
	X(int, cbreak, (void))                                                      \
	X(int, noecho, (void))                                                      \
	X(int, curs_set, (int))                                                     \
	X(int, nodelay, (WINDOW *, bool))                                           \
	X(int, keypad, (WINDOW *, bool))                                            \
	X(int, mvprintw, (int, int, const char *, ...))                             \
	X(int, printw, (const char *, ...))                                         \
	X(int, wattr_on, (WINDOW *, attr_t, void *))                                \
	X(int, wattr_off, (WINDOW *, attr_t, void *))                               \
	X(int, werase, (WINDOW *))                                                  \
	X(int, wgetch, (WINDOW *))                                                  \
	X(int, wrefresh, (WINDOW *))
#define CURSES_MEMBER(ret, name, args) ret(*name) args;
static struct {
	CURSES_FUNCS(CURSES_MEMBER)
	int *LINES;
	WINDOW **stdscr;
} tv_curses;
#undef CURSES_MEMBER

/* Return: 0, or -ENOENT (said) when libncursesw.so.6 or a name is missing. */
static int curses_load(void)
{
	void *h = tv_curses.newterm ? NULL : dlopen("libncursesw.so.6", RTLD_NOW | RTLD_LOCAL);
	const char *missing = NULL;

	if (tv_curses.newterm)
		return 0;
	if (!h) {
		tv_cli_error("top", "Cannot load the full-screen view's library: %s (use --batch or --json)",
			     dlerror());
		return -ENOENT;
	}
	/* a function pointer from dlsym()'s object pointer: POSIX allows it */
#define CURSES_SYM(ret, name, args)                                                  \
	if (!(*(void **)&tv_curses.name = dlsym(h, #name)) && !missing)             \
		missing = #name;
	CURSES_FUNCS(CURSES_SYM)
#undef CURSES_SYM
	tv_curses.LINES = dlsym(h, "LINES");
	tv_curses.stdscr = dlsym(h, "stdscr");
	if (missing || !tv_curses.LINES || !tv_curses.stdscr) {
		tv_cli_error("top", "Cannot load %s from libncursesw.so.6 (use --batch or --json)",
			     missing ? missing : !tv_curses.LINES ? "LINES" : "stdscr");
		tv_curses.newterm = NULL;
		return -ENOENT;
	}
	return 0;
}

#undef LINES
#define LINES (*tv_curses.LINES)
#undef stdscr
#define stdscr (*tv_curses.stdscr)
#define newterm (tv_curses.newterm)
#define delscreen (tv_curses.delscreen)
#define endwin (tv_curses.endwin)
#define cbreak (tv_curses.cbreak)
#define noecho (tv_curses.noecho)
#define curs_set (tv_curses.curs_set)
#define nodelay (tv_curses.nodelay)
#define keypad (tv_curses.keypad)
#define mvprintw (tv_curses.mvprintw)
#define printw (tv_curses.printw)
#define wattr_on (tv_curses.wattr_on)
#define wattr_off (tv_curses.wattr_off)
#define werase (tv_curses.werase)
#define wgetch (tv_curses.wgetch)
#define wrefresh (tv_curses.wrefresh)

static const char *const sort_names[] = { "total", "count", "rate", "p99" };

struct screen {
	struct tv_top *top;
	const char *dir;
	struct tv_top_interval cur;	/* the latest interval, our copy */
	int have;
	enum tv_top_sort sort;
	char vm[80];			/* "" all VMs */
	char vcpu[24];			/* "" all vCPUs */
	int help;
	int guest_view;			/* g: rows summed per vCPU and guest task */
	double cpu_prev, cpu_pct;
};

/* The guest view's row: a vCPU's guest task (and context), all reasons. */
struct guest_row {
	const struct tv_exit_stat_row *first;	/* vm, vcpu, guest fields */
	uint64_t count, total_ns, max_ns;
	const char *top_reason;			/* the reason with the most time */
	uint64_t top_reason_ns;
};

static int row_shown(const struct screen *s, const struct tv_exit_stat_row *r)
{
	return (!s->vm[0] || !strcmp(r->vm, s->vm)) && (!s->vcpu[0] || !strcmp(r->vcpu, s->vcpu));
}

/*
 * The value after @cur among the rows' @field values (VMs, or the vCPUs of
 * the rows shown), in row order; "" after the last one: all again.
 */
static void cycle(const struct screen *s, char *cur, size_t size, int vcpu)
{
	int after = !cur[0];

	for (size_t i = 0; i < s->cur.stat.nr_rows; i++) {
		const struct tv_exit_stat_row *r = &s->cur.stat.rows[i];
		const char *v = vcpu ? r->vcpu : r->vm;

		if (vcpu && s->vm[0] && strcmp(r->vm, s->vm))
			continue;
		if (after && strcmp(v, cur)) {
			snprintf(cur, size, "%s", v);
			return;
		}
		if (!strcmp(v, cur))
			after = 1;
	}
	cur[0] = '\0';
}

static void draw_help(void)
{
	static const char *const lines[] = {
		"tracevisor top: keys",
		"",
		"  s   sort by total time, count, rate, p99 (descending)",
		"  v   show one VM, the next one, all VMs",
		"  c   drill down: one vCPU of the rows shown, the next, all",
		"  +   double the interval     -   halve it",
		"  g   guest view (top --guest): per vCPU, the guest tasks, IRQs and",
		"      syscalls with the most exit time (count with sort count/rate)",
		"  r   reset sort, VM, vCPU and view",
		"  h   this help (any key goes back)",
		"  q   quit (Ctrl-C too): the kept session is complete",
	};

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		mvprintw(2 + (int)i, 2, "%s", lines[i]);
}

static void draw_row(int y, const struct screen *s, const struct tv_exit_stat_row *r)
{
	char b[4][24];

	if (!r->has_latency) {
		mvprintw(y, 0, "%-24.24s %-7.7s %-26.26s %9llu %10.1f %9s %9s %9s %10s",
			 tv_cli_text(r->vm), tv_cli_text(r->vcpu), tv_cli_text(r->reason), (unsigned long long)r->count, tv_top_row_rate(&s->cur, r), "-", "-",
			 "-", "-");
		if (r->kind[0] && r->share >= 0)
			printw(" %6.1f%%", 100 * r->share);
		return;
	}
	mvprintw(y, 0, "%-24.24s %-7.7s %-26.26s %9llu %10.1f %9s %9s %9s %10s",
		 tv_cli_text(r->vm), tv_cli_text(r->vcpu), tv_cli_text(r->reason), (unsigned long long)r->count, tv_top_row_rate(&s->cur, r),
		 tv_cli_fmt_ns(r->p50_ns, b[0], 24), tv_cli_fmt_ns(r->p99_ns, b[1], 24),
		 tv_cli_fmt_ns(r->max_ns, b[2], 24), tv_cli_fmt_ns(r->total_ns, b[3], 24));
	if (r->kind[0] && r->share >= 0)	/* top --xen: a runstate's share */
		printw(" %6.1f%%", 100 * r->share);
}

static int same_guest_row(const struct tv_exit_stat_row *a, const struct tv_exit_stat_row *b)
{
	return !strcmp(a->vm, b->vm) && !strcmp(a->vcpu, b->vcpu) &&
	       !strcmp(a->guest_task, b->guest_task) && a->guest_pid == b->guest_pid &&
	       !strcmp(a->guest_context, b->guest_context);
}

static int cmp_guest_rows(const void *x, const void *y, void *arg)
{
	const struct guest_row *a = x, *b = y;
	int by_count = *(const int *)arg;
	uint64_t ka = by_count ? a->count : a->total_ns, kb = by_count ? b->count : b->total_ns;

	if (ka != kb)
		return ka < kb ? 1 : -1;
	return strcmp(a->first->vm, b->first->vm) ?: strcmp(a->first->vcpu, b->first->vcpu);
}

/* The guest view: the rows shown, summed per vCPU and guest task. */
static int draw_guest_view(struct screen *s, int y)
{
	struct guest_row *g = calloc(s->cur.stat.nr_rows + 1, sizeof(*g));
	size_t n = 0;
	int by_count = s->sort == TV_TOP_SORT_COUNT || s->sort == TV_TOP_SORT_RATE;
	char b[2][24], task[96];

	if (!g)
		return y;
	for (size_t i = 0; i < s->cur.stat.nr_rows; i++) {
		const struct tv_exit_stat_row *r = &s->cur.stat.rows[i];
		size_t k;

		if (!row_shown(s, r) || !r->guest_task[0])
			continue;
		for (k = 0; k < n && !same_guest_row(g[k].first, r); k++)
			;
		if (k == n)
			g[n++].first = r;
		g[k].count += r->count;
		g[k].total_ns += r->total_ns;
		g[k].max_ns = r->max_ns > g[k].max_ns ? r->max_ns : g[k].max_ns;
		if (!g[k].top_reason || r->total_ns > g[k].top_reason_ns) {
			g[k].top_reason = r->reason;
			g[k].top_reason_ns = r->total_ns;
		}
	}
	qsort_r(g, n, sizeof(*g), cmp_guest_rows, &by_count);
	attron(A_REVERSE);
	mvprintw(y++, 0, "%-24s %-7s %-32s %9s %10s %9s %10s  %s", "VM", "VCPU", "GUEST TASK", "COUNT",
		 "RATE/s", "MAX", "TOTAL", "MOST TIME IN");
	attroff(A_REVERSE);
	for (size_t k = 0; k < n && y < LINES - 1; k++)
		mvprintw(y++, 0, "%-24.24s %-7.7s %-32.32s %9llu %10.1f %9s %10s  %s", tv_cli_text(g[k].first->vm),
			 tv_cli_text(g[k].first->vcpu), tv_cli_guest_task(g[k].first, task, sizeof(task)),
			 (unsigned long long)g[k].count,
			 s->cur.interval_ns ? (double)g[k].count * 1e9 / (double)s->cur.interval_ns : 0,
			 tv_cli_fmt_ns(g[k].max_ns, b[0], 24), tv_cli_fmt_ns(g[k].total_ns, b[1], 24),
			 tv_cli_text(g[k].top_reason));
	if (!n && s->have)
		mvprintw(y++, 0, "(no exit joined with a guest task: start top with --guest SPEC)");
	free(g);
	return y;
}

static void draw(struct screen *s)
{
	double secs = (double)s->cur.interval_ns / 1e9;
	uint64_t exits = 0;
	int y = 2;

	erase();
	for (size_t i = 0; i < s->cur.stat.nr_rows; i++)
		if (row_shown(s, &s->cur.stat.rows[i]))
			exits += s->cur.stat.rows[i].count;
	mvprintw(0, 0, "tracevisor top - %s - %.2fs interval (next %.2fs) - %.0f exits/s - %llu lost - top %.1f%% CPU",
		 s->dir, secs, (double)tv_top_get_interval(s->top) / 1e9,
		 secs > 0 ? (double)exits / secs : 0, (unsigned long long)s->cur.lost, s->cpu_pct);
	mvprintw(1, 0, "sort: %s   vm: %s   vcpu: %s%s%s%s", sort_names[s->sort], s->vm[0] ? tv_cli_text(s->vm) : "all",
		 s->vcpu[0] ? tv_cli_text(s->vcpu) : "all", s->guest_view ? "   view: guest tasks" : "",
		 strcmp(s->cur.stat.mode, "pvm") ? "" : "   (PVM: no kvm_exit)",
		 tv_top_running(s->top) ? "" : "   (replay ended)");
	if (s->help) {
		draw_help();
		refresh();
		return;
	}
	if (s->guest_view) {
		draw_guest_view(s, y);
		mvprintw(LINES - 1, 0, "s sort  v VM  c vCPU  g exits view  +/- interval  r reset  h help  q quit");
		refresh();
		return;
	}
	attron(A_REVERSE);
	mvprintw(y++, 0, "%-24s %-7s %-26s %9s %10s %9s %9s %9s %10s%s", "VM", "VCPU", "REASON", "COUNT",
		 "RATE/s", "P50", "P99", "MAX", "TOTAL", strcmp(s->cur.stat.mode, "xen") ? "" : "   SHARE");
	attroff(A_REVERSE);
	for (size_t i = 0; i < s->cur.stat.nr_rows && y < LINES - 1; i++)
		if (row_shown(s, &s->cur.stat.rows[i]))
			draw_row(y++, s, &s->cur.stat.rows[i]);
	if (!s->have)
		mvprintw(y, 0, "(waiting for the first interval)");
	else if (!exits)
		mvprintw(y, 0, "(no VM exits in this interval)");
	mvprintw(LINES - 1, 0, "s sort  v VM  c vCPU  g guest view  +/- interval  r reset  h help  q quit");
	refresh();
}

/* Take the latest published interval. */
static int take_latest(struct screen *s)
{
	struct tv_top_interval iv;
	uint64_t n;
	int ret;

	if (read(tv_top_fd(s->top), &n, sizeof(n)) < 0 && errno != EAGAIN)
		return -errno;
	ret = tv_top_latest(s->top, &iv);
	if (ret <= 0)
		return ret;
	tv_top_interval_free(&s->cur);
	s->cur = iv;
	s->have = 1;
	s->cpu_pct = tv_cli_cpu_percent(&s->cpu_prev, iv.interval_ns);
	tv_top_sort(&s->cur.stat, s->sort);
	return 0;
}

/* One key; returns 1 to quit. */
static int key(struct screen *s, int k)
{
	if (s->help) {
		s->help = 0;
		return k == 'q';
	}
	switch (k) {
	case 'q':
		return 1;
	case 's':
		s->sort = (enum tv_top_sort)((s->sort + 1) % 4);
		tv_top_sort(&s->cur.stat, s->sort);
		break;
	case 'v':
		cycle(s, s->vm, sizeof(s->vm), 0);
		s->vcpu[0] = '\0';
		break;
	case 'c':
		cycle(s, s->vcpu, sizeof(s->vcpu), 1);
		break;
	case '+':
		tv_top_set_interval(s->top, tv_top_get_interval(s->top) * 2);
		break;
	case '-':
		tv_top_set_interval(s->top, tv_top_get_interval(s->top) / 2);
		break;
	case 'g':
		s->guest_view = !s->guest_view;
		break;
	case 'r':
		s->sort = TV_TOP_SORT_TOTAL;
		s->guest_view = 0;
		s->vm[0] = s->vcpu[0] = '\0';
		tv_top_sort(&s->cur.stat, s->sort);
		break;
	case 'h':
	case '?':
		s->help = 1;
		break;
	default:
		break;
	}
	return 0;
}

int tv_cli_top_screen(struct tv_top *top, int sfd, const char *dir, int sort)
{
	struct screen s = { .top = top, .dir = dir, .sort = (enum tv_top_sort)sort };
	struct pollfd pfd[3] = {
		{ .fd = STDIN_FILENO, .events = POLLIN },
		{ .fd = tv_top_fd(top), .events = POLLIN },
		{ .fd = sfd, .events = POLLIN },
	};
	int ret = 0, quit = 0;

	SCREEN *scr;

	if (curses_load())
		return -ENOENT;
	tv_cli_cpu_percent(&s.cpu_prev, 0);
	/* newterm, not initscr: an unknown terminal must not exit() the
	 * process with the recording's tracefs instance still there */
	scr = newterm(NULL, stdout, stdin);
	if (!scr) {
		tv_cli_error("top", "Cannot start the full-screen view: TERM=\"%s\" is unknown (use --batch or --json)",
			     getenv("TERM") ? getenv("TERM") : "");
		return -ENOTTY;
	}
	cbreak();
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	curs_set(0);
	draw(&s);
	while (!quit && !ret) {
		int k;

		if (poll(pfd, 3, -1) < 0) {
			if (errno != EINTR)
				ret = -errno;
			continue;
		}
		if (pfd[2].revents & POLLIN)
			break;	/* Ctrl-C: the caller stops the view */
		if (pfd[1].revents & POLLIN)
			ret = take_latest(&s);
		while (!quit && (k = getch()) != ERR)
			quit = key(&s, k);
		draw(&s);
	}
	endwin();
	delscreen(scr);
	tv_top_interval_free(&s.cur);
	return ret;
}
