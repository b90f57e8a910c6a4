// SPDX-License-Identifier: GPL-2.0
/*
 * The committed sample sessions (tests/samples/NAME/, made by
 * tests/samples/gen_samples.py) against their expected output, which was
 * written from what the generator encoded, not from tracevisor:
 *   - `tracevisor report`, `report --json` and (where expected-stat.json
 *     exists) `stat --json` must print exactly the expected files, with
 *     expected.stderr on stderr (absent: nothing) and exit status 1 when a
 *     session is corrupt, 0 otherwise; never a signal.
 *   - the library itself (tv_reader_open/next, tv_event_fields_json,
 *     tv_kvm_stat_compute) must deliver the same events and log the same
 *     errors.
 * Run from the repository root (the test runner does); $TV names the
 * tracevisor binary (default build/tracevisor).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <event-parse.h>

#include "tracevisor/tracevisor.h"
#include "tv_test.h"
#include "kvm_stat.h"

#define SAMPLES "tests/samples"

static char tmpdir[] = "/tmp/tv-decode.XXXXXX";


static char *expected(const char *sample, const char *file)
{
	char path[512];

	snprintf(path, sizeof(path), SAMPLES "/%s/%s", sample, file);
	return tv_test_slurp(path);
}

/* Equal, or say where they part. */
static int same_text(const char *what, const char *got, const char *want)
{
	size_t line = 1;
	const char *g = got, *w = want;

	if (!strcmp(got, want))
		return 1;
	while (*g && *g == *w) {
		if (*g == '\n')
			line++;
		g++;
		w++;
	}
	fprintf(stderr, "%s: differs at line %zu\n  got:  %.200s\n  want: %.200s\n", what, line,
		strndupa(g, strcspn(g, "\n")), strndupa(w, strcspn(w, "\n")));
	return 0;
}

/* Run tracevisor with @args; its stdout and stderr land in @out, @err. */
static int run_tv(char *const args[], char **out, char **err)
{
	const char *tv = getenv("TV") ? getenv("TV") : "build/tracevisor";
	char opath[600], epath[600];
	int status = -1;
	pid_t pid;

	snprintf(opath, sizeof(opath), "%s/stdout", tmpdir);
	snprintf(epath, sizeof(epath), "%s/stderr", tmpdir);
	pid = fork();
	if (pid == 0) {
		int o = open(opath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(epath, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(126);
		unsetenv("TRACEVISOR_DEBUG");
		alarm(60);	/* a reader that loops for ever dies of SIGALRM */
		execv(tv, args);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		abort();
	*out = tv_test_slurp(opath);
	*err = tv_test_slurp(epath);
	if (!*out || !*err)
		abort();
	return status;
}

/* Expected stderr lines are "tracevisor report: ..."; other commands say their name. */
static char *stderr_for(const char *want, const char *cmd)
{
	struct tv_strbuf sb = { 0 };

	tv_strbuf_append(&sb, "%s", "");
	for (const char *p = want; *p;) {
		size_t n = strcspn(p, "\n");
		const char *prefix = "tracevisor report: ";

		if (!strncmp(p, prefix, strlen(prefix)))
			tv_strbuf_append(&sb, "tracevisor %s: %.*s\n", cmd,
					 (int)(n - strlen(prefix)), p + strlen(prefix));
		else
			tv_strbuf_append(&sb, "%.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
	return sb.data;
}

/* Does @want_err hold an error (not only warnings)?  Then the exit status is 1. */
static int has_error(const char *want_err)
{
	for (const char *p = want_err; p && *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != 0))
		if (strncmp(p, "tracevisor report: warning: ", 28))
			return 1;
	return 0;
}

static void check_cli(const char *sample, const char *cmd, const char *opt,
		      const char *want_file, const char *want_err)
{
	char dir[300], what[400];
	char *args[5], *out = NULL, *err = NULL, *want, *werr;
	int status, n = 0;

	snprintf(dir, sizeof(dir), SAMPLES "/%s", sample);
	args[n++] = "tracevisor";
	args[n++] = (char *)cmd;
	if (opt)
		args[n++] = (char *)opt;
	args[n++] = dir;
	args[n] = NULL;
	snprintf(what, sizeof(what), "%s: tracevisor %s%s%s", sample, cmd, opt ? " " : "",
		 opt ? opt : "");
	status = run_tv(args, &out, &err);
	want = expected(sample, want_file);
	werr = stderr_for(want_err ? want_err : "", cmd);
	TV_CHECK(WIFEXITED(status), "%s: not a normal exit (status 0x%x)", what, status);
	if (WIFEXITED(status))
		TV_CHECK(WEXITSTATUS(status) == has_error(want_err), "%s: exit status %d, stderr: %s",
			 what, WEXITSTATUS(status), err);
	TV_CHECK(want != NULL, "%s: no %s", what, want_file);
	if (want)
		TV_CHECK(same_text(what, out, want), "%s: stdout is not %s", what, want_file);
	TV_CHECK(same_text(what, err, werr), "%s: stderr differs", what);
	free(out);
	free(err);
	free(want);
	free(werr);
}

/* ------------------------------------------------------- library level */

static struct tv_strbuf logged;

static void log_cb(enum tv_log_level level, const char *msg, void *ctx)
{
	(void)ctx;
	tv_strbuf_append(&logged, "tracevisor report: %s%s\n",
			 level == TV_LOG_WARN ? "warning: " : "", msg);
}

static void event_json(const struct tv_event *ev, struct tv_strbuf *sb)
{
	const char *comm = tep_data_comm_from_pid(ev->tep, ev->pid);

	tv_strbuf_append(sb, "{\"ts\":%llu,\"domain\":", (unsigned long long)ev->ts);
	tv_strbuf_append_json_string(sb, ev->domain, strlen(ev->domain));
	tv_strbuf_append(sb, ",\"cpu\":%d,\"pid\":%d,\"comm\":", ev->cpu, ev->pid);
	tv_strbuf_append_json_string(sb, comm, strlen(comm));
	tv_strbuf_append(sb, ",\"event\":\"%s:%s\"", ev->format->system, ev->format->name);
	if (ev->missed_before)
		tv_strbuf_append(sb, ",\"lost_before\":%lld", ev->missed_before);
	tv_strbuf_append(sb, ",\"fields\":");
	tv_event_fields_json(ev, sb);
	tv_strbuf_append(sb, "}\n");
}

static void check_library(const char *sample, const char *want_err)
{
	struct tv_strbuf got = { 0 };
	struct tv_reader *rd = NULL;
	struct tv_event ev;
	uint64_t last_ts = 0;
	char dir[300], *want = expected(sample, "expected.json");
	int ret, n = 0, ordered = 1;

	snprintf(dir, sizeof(dir), SAMPLES "/%s", sample);
	tv_strbuf_reset(&logged);
	tv_strbuf_append(&got, "%s", "");
	tv_strbuf_append(&logged, "%s", "");
	ret = tv_reader_open(dir, &rd);
	while (!ret && (ret = tv_reader_next(rd, &ev)) > 0) {
		event_json(&ev, &got);
		if (n++ && ev.ts < last_ts)
			ordered = 0;
		last_ts = ev.ts;
		ret = 0;
	}
	tv_reader_close(rd);
	TV_CHECK(ordered, "%s: library events out of time order", sample);
	if (has_error(want_err))
		TV_CHECK(ret == -EBADMSG || ret == -ENOENT || ret == -EINVAL, "%s: library returned %d", sample, ret);
	else
		TV_CHECK(ret == 0, "%s: library returned %d", sample, ret);
	TV_CHECK(want && same_text(sample, got.data, want), "%s: library events differ from expected.json",
		 sample);
	TV_CHECK(same_text(sample, logged.data, want_err ? want_err : ""),
		 "%s: library log differs from expected.stderr", sample);
	tv_strbuf_free(&got);
	free(want);
}

static void check_stat_library(const char *sample, const char *want)
{
	struct tv_exit_stat st;
	char dir[300];
	size_t rows = 0;
	int ret;

	snprintf(dir, sizeof(dir), SAMPLES "/%s", sample);
	for (const char *p = want; (p = strstr(p, "\n{")); p++)
		rows++;
	ret = tv_kvm_stat_compute(dir, &st);
	TV_CHECK(ret == 0, "%s: tv_kvm_stat_compute returned %d", sample, ret);
	if (ret)
		return;
	TV_CHECK(st.have_exit_entry && !strcmp(st.mode, "exits"), "%s: mode %s", sample, st.mode);
	TV_CHECK(st.nr_rows == rows, "%s: %zu rows, expected %zu", sample, st.nr_rows, rows);
	/* vmx-exits ends with an exit whose entry was not recorded */
	TV_CHECK(st.unmatched_exits == (strcmp(sample, "vmx-exits") ? 0U : 1U),
		 "%s: %llu unmatched exits", sample, (unsigned long long)st.unmatched_exits);
	for (size_t i = 0; i < st.nr_rows; i++) {
		const struct tv_exit_stat_row *r = &st.rows[i];
		uint64_t sum = 0;

		for (int b = 0; b < 64; b++)
			sum += r->hist[b];
		if (r->has_latency)
			TV_CHECK(r->min_ns <= r->p50_ns && r->p50_ns <= r->p99_ns &&
				 r->p99_ns <= r->max_ns && r->max_ns <= r->total_ns && sum &&
				 sum <= r->count, "%s: row %s/%s/%s inconsistent", sample, r->vm,
				 r->vcpu, r->reason);
	}
	tv_exit_stat_free(&st);
}

/* A sample that decodes in full has at least this many events. */
static int min_events(const char *sample)
{
	return !strncmp(sample, "corrupt", 7) || !strcmp(sample, "truncated") ||
	       !strncmp(sample, "fuzz-", 5) ||
	       !strcmp(sample, "not-a-session") ? 0 : !strcmp(sample, "no-session-meta") ? 2 : 5;
}

int main(void)
{
	const char *root = getenv("TV_ROOT");
	struct dirent **names;
	int n, samples = 0;

	if (root && chdir(root)) {
		perror(root);
		return 1;
	}
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	tv_log_set_callback(log_cb, NULL);
	tv_log_set_level(TV_LOG_INFO);
	n = scandir(SAMPLES, &names, NULL, alphasort);
	TV_CHECK(n > 0, "cannot list %s (run from the repository root)", SAMPLES);
	for (int i = 0; i < n; i++) {
		const char *s = names[i]->d_name;
		char *want_err, *stat, *json;
		int lines = 0;

		json = expected(s, "expected.json");
		if (!json) {
			free(names[i]);
			continue;
		}
		samples++;
		for (char *p = json; *p; p++)
			lines += *p == '\n';
		TV_CHECK(lines >= min_events(s), "%s: expected.json has only %d events", s, lines);
		want_err = expected(s, "expected.stderr");
		check_cli(s, "report", NULL, "expected.txt", want_err);
		check_cli(s, "report", "--json", "expected.json", want_err);
		stat = expected(s, "expected-stat.json");
		if (stat) {
			check_cli(s, "stat", "--json", "expected-stat.json", NULL);
			check_stat_library(s, stat);
		}
		check_library(s, want_err);
		printf("%-20s %4d events%s%s\n", s, lines, stat ? ", stat" : "",
		       has_error(want_err) ? ", fails as expected" : want_err ? ", warns" : "");
		free(want_err);
		free(stat);
		free(json);
		free(names[i]);
	}
	free(names);
	TV_CHECK(samples >= 12, "only %d samples in %s", samples, SAMPLES);
	tv_strbuf_free(&logged);
	{
		char p[64];

		snprintf(p, sizeof(p), "%s/stderr", tmpdir);
		unlink(p);
		snprintf(p, sizeof(p), "%s/stdout", tmpdir);
		unlink(p);
	}
	rmdir(tmpdir);
	return tv_test_done("test_decode");
}
