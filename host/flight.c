// SPDX-License-Identifier: LGPL-2.1
/*
 * A flight recorder's triggers (record --trigger RULE, doc/man/
 * tracevisor-record.1):
 *
 *   event=SYSTEM:EVENT[,filter=FILTER]   a host event (the filter is
 *       ftrace's, evaluated in the kernel): a tracefs instance of its own,
 *       "tracevisor-trig-PID-N", with only that event, read as text from
 *       its trace_pipe (its time stamp and CPU are all that is needed);
 *   exit-latency>DURATION[,vm=NAME][,reason=REASON]   a VM exit open
 *       longer than DURATION, seen by kvm/flight_bpf.c in the kernel while
 *       it is still open; hlt exits are left out unless reason=hlt;
 *   guest=NAME:SYSTEM:EVENT[,filter=FILTER]   a guest's event, watched by
 *       its agent (host/flight_guest.c), whose hits come through
 *       tv_flight_guest_hit().
 *
 * One watcher thread polls them all.  A hit becomes the one pending
 * trigger unless one is pending already (busy), the holdoff since the last
 * snapshot has not passed, or --max-snapshots were taken: each refusal is
 * counted for the caller to say.  The session's thread takes the snapshot
 * when tv_flight_due() says: --post after the hit, or for an exit --post
 * after the exit's end (so that the snapshot holds the whole stall; at
 * most TV_FLIGHT_EXIT_WAIT_NS after the hit).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <tracefs.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "flight.h"
#include "flight_xen.h"
#include "flight_guest.h"
#include "proto.h"
#include "../xen/xen_flight.h"
#include "../kvm/flight_bpf.h"
#include "../kvm/kvm_recorder.h"
#include "../kvm/vcpu_scan.h"

#define MAX_RULES 16
#define TRIG_BUFFER_KB "64"
#define RULE_MAX 512

enum rule_kind { RULE_EVENT, RULE_EXIT, RULE_GUEST };

struct rule {
	enum rule_kind kind;
	char text[RULE_MAX];
	char system[64], event[128];
	const char *filter;		/* inside text, or NULL */
	uint64_t limit_ns;
	char vm[64];			/* "": any; a guest= rule: the guest's name */
	char reason[48];		/* "": any but hlt */
	struct tracefs_instance *inst;	/* event rules */
	int pipe_fd;
	struct tv_flight_bpf *bpf;	/* exit rules */
	struct tv_xen_exit_watch *xw;	/* exit rules on Xen (o.xen): host/flight_xen.c */
	struct tv_flight *f;		/* for the BPF callback */
};

/* The pending trigger. */
struct pending {
	int rule;
	uint64_t time_ns;		/* the event's time stamp, the exit's kvm_exit */
	int cpu;			/* event rules */
	struct tv_flight_exit_hit exit;	/* exit rules */
	struct tv_xen_exit_hit xhit;	/* exit rules on Xen */
	char vm[64];
	double hit_s;			/* CLOCK_MONOTONIC seconds when seen */
	double due_s;			/* 0: not known yet (an exit still open) */
	uint64_t latency_ns;		/* exits: the whole exit, once closed */
	int exit_open;			/* exits: still open when due (TV_FLIGHT_EXIT_WAIT_NS) */
};

struct tv_flight {
	struct tv_flight_opts o;
	struct rule rules[MAX_RULES];
	size_t nr;
	int epfd, stop_fd, hit_fd;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;		/* everything below */
	bool has_pending, taking;
	struct pending p;
	double holdoff_until;
	unsigned int taken;
	unsigned int busy, holdoff, max;	/* refusals since the last tv_flight_refused() */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "200ms", "1s", "1.5s", "500us", "100000ns" (a unit is required).  Return: 0 or -1. */
int tv_flight_parse_duration(const char *s, uint64_t *ns)
{
	static const struct { const char *unit; double mult; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	};
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0 || !isdigit((unsigned char)*s))
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit) && v * units[i].mult < 1e18) {
			*ns = (uint64_t)(v * units[i].mult + 0.5);
			return 0;
		}
	return -1;
}

static int rule_bad(const char *text, const char *why)
{
	tv_err("Invalid trigger: rule=\"%s\": %s", text, why);
	return -EINVAL;
}

/* exit-latency>DURATION[,vm=NAME][,reason=REASON] after "exit-latency>". */
static int rule_parse_exit(struct rule *r, char *spec)
{
	char *save = NULL, *item = strtok_r(spec, ",", &save);

	if (!item || tv_flight_parse_duration(item, &r->limit_ns) || !r->limit_ns)
		return rule_bad(r->text, "exit-latency>DURATION needs a duration with its unit (ns, us, ms, s), above 0");
	r->kind = RULE_EXIT;
	while ((item = strtok_r(NULL, ",", &save))) {
		if (!strncmp(item, "vm=", 3) && item[3] && strlen(item + 3) < sizeof(r->vm))
			snprintf(r->vm, sizeof(r->vm), "%s", item + 3);
		else if (!strncmp(item, "reason=", 7) && item[7] && strlen(item + 7) < sizeof(r->reason))
			snprintf(r->reason, sizeof(r->reason), "%s", item + 7);
		else
			return rule_bad(r->text, "after the duration only vm=NAME and reason=REASON");
	}
	return 0;
}

/* The codes of an exit reason's name, VMX's and SVM's (either may be absent: ~0). */
static int reason_codes(const char *name, unsigned int *vmx, unsigned int *svm)
{
	*vmx = *svm = ~0u;
	for (unsigned int code = 0; code < 0x500; code++) {
		const char *v = tv_kvm_exit_reason_name(TV_KVM_ISA_VMX, code);
		const char *s = tv_kvm_exit_reason_name(TV_KVM_ISA_SVM, code);

		if (v && !strcasecmp(v, name) && *vmx == ~0u)
			*vmx = code;
		if (s && !strcasecmp(s, name) && *svm == ~0u)
			*svm = code;
	}
	return *vmx == ~0u && *svm == ~0u ? -ENOENT : 0;
}

static int rule_parse(struct rule *r, const char *text)
{
	char spec[RULE_MAX], *colon;
	unsigned int vmx, svm;

	memset(r, 0, sizeof(*r));
	r->pipe_fd = -1;
	if (strlen(text) >= sizeof(r->text))
		return rule_bad(text, "longer than 511 bytes");
	snprintf(r->text, sizeof(r->text), "%s", text);
	snprintf(spec, sizeof(spec), "%s", text);
	if (!strncmp(spec, "exit-latency>", 13)) {
		if (rule_parse_exit(r, spec + 13))
			return -EINVAL;
		if (r->reason[0] && reason_codes(r->reason, &vmx, &svm))
			return rule_bad(text, "unknown exit reason (names as stat shows them: hlt, HLT, npf, EPT_VIOLATION...)");
		return 0;
	}
	if (!strncmp(spec, "guest=", 6)) {
		r->kind = RULE_GUEST;
		return tv_flight_guest_rule_parse(r->text, r->vm, sizeof(r->vm), r->system, sizeof(r->system),
						  r->event, sizeof(r->event), &r->filter);
	}
	if (strncmp(spec, "event=", 6))
		return rule_bad(text, "a rule is event=SYSTEM:EVENT[,filter=FILTER], guest=NAME:SYSTEM:EVENT[,filter=FILTER] or exit-latency>DURATION[,vm=NAME][,reason=REASON]");
	r->kind = RULE_EVENT;
	/* the filter is the rest, commas and all */
	colon = strstr(spec, ",filter=");
	if (colon) {
		*colon = '\0';
		r->filter = r->text + (colon - spec) + 8;
		if (!*r->filter)
			return rule_bad(text, "filter= is empty");
	}
	colon = strchr(spec + 6, ':');
	if (!colon || colon == spec + 6 || !colon[1] || strpbrk(spec + 6, "*?[/ ") ||
	    (size_t)(colon - spec - 6) >= sizeof(r->system) || strlen(colon + 1) >= sizeof(r->event))
		return rule_bad(text, "event= needs one SYSTEM:EVENT (no glob)");
	snprintf(r->system, sizeof(r->system), "%.*s", (int)(colon - spec - 6), spec + 6);
	snprintf(r->event, sizeof(r->event), "%s", colon + 1);
	return 0;
}

int tv_flight_rules_check(const char *const *rules, size_t nr)
{
	struct rule r;

	if (nr > MAX_RULES) {
		tv_err("Too many triggers: %zu (at most %d)", nr, MAX_RULES);
		return -EINVAL;
	}
	for (size_t i = 0; i < nr; i++) {
		if (rule_parse(&r, rules[i]))
			return -EINVAL;
		if (r.kind == RULE_EVENT && !tracefs_event_file_exists(NULL, r.system, r.event, "enable")) {
			tv_err("Invalid trigger: rule=\"%s\": no such event %s:%s in tracefs", r.text,
			       r.system, r.event);
			return -ENOENT;
		}
	}
	return 0;
}

/*
 * A hit of rule @i: the pending trigger, unless refused.  Called by the
 * watcher thread.
 */
static int flight_hit(struct tv_flight *f, const struct pending *p)
{
	uint64_t one = 1;
	double now = now_s();
	int taken = 0;

	pthread_mutex_lock(&f->lock);
	if (f->has_pending || f->taking) {
		f->busy++;
	} else if (f->taken >= f->o.max_snapshots) {
		f->max++;
	} else if (now < f->holdoff_until) {
		f->holdoff++;
	} else {
		f->p = *p;
		f->p.hit_s = now;
		f->has_pending = true;
		taken = 1;
	}
	pthread_mutex_unlock(&f->lock);
	tv_debug("Trigger hit: rule=%d, time_ns=%llu, taken=%d", p->rule, (unsigned long long)p->time_ns, taken);
	if (write(f->hit_fd, &one, sizeof(one)) < 0)
		tv_debug("Cannot wake the session for a trigger: errno=%d", errno);
	return taken;
}

int tv_flight_guest_hit(struct tv_flight *f, size_t rule, const char *guest, uint64_t time_ns, int cpu)
{
	struct pending p = { .rule = (int)rule, .time_ns = time_ns, .cpu = cpu };

	if (rule >= f->nr || f->rules[rule].kind != RULE_GUEST || strcmp(f->rules[rule].vm, guest))
		return -EINVAL;
	return flight_hit(f, &p);
}

/* An event rule's pipe is readable: the first event it holds fires (the rest is drained). */
static void read_event_rule(struct tv_flight *f, int i)
{
	struct rule *r = &f->rules[i];
	char buf[8192];
	bool fired = false;
	ssize_t n;

	while ((n = read(r->pipe_fd, buf, sizeof(buf) - 1)) > 0) {
		struct pending p = { .rule = i };

		buf[n] = '\0';
		for (char *save, *line = strtok_r(buf, "\n", &save); line && !fired;
		     line = strtok_r(NULL, "\n", &save)) {
			if (tv_proto_trace_line_parse(line, &p.cpu, &p.time_ns))
				continue;
			flight_hit(f, &p);
			fired = true;
		}
	}
}

/* The BPF watchdog saw an exit of an exit rule pass its limit. */
static void exit_hit(void *ctx, const struct tv_flight_exit_hit *hit)
{
	struct rule *r = ctx;
	struct tv_flight *f = r->f;
	struct pending p = { .rule = (int)(r - f->rules), .time_ns = hit->exit_ts, .exit = *hit,
			     .cpu = -1 };

	tv_kvm_vm_name("/proc", hit->tgid, p.vm, sizeof(p.vm));
	if (r->vm[0] && strcmp(r->vm, p.vm) && atoi(r->vm) != hit->tgid)
		return;		/* another VM's */
	flight_hit(f, &p);
}

/* Xen's consumer saw an exit of an exit rule pass its limit (xen/xen_flight.c). */
static void xen_exit_hit(void *ctx, const struct tv_xen_exit_hit *hit)
{
	struct rule *r = ctx;
	struct pending p = { .rule = (int)(r - r->f->rules), .time_ns = hit->exit_ns, .xhit = *hit,
			     .cpu = (int)hit->pcpu };

	flight_hit(r->f, &p);
}

static void *watch_thread(void *arg)
{
	struct tv_flight *f = arg;
	struct epoll_event ev[8];

	for (;;) {
		int n = epoll_wait(f->epfd, ev, 8, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		for (int k = 0; k < n; k++) {
			int i = (int)ev[k].data.u32;

			if (i < 0 || (size_t)i >= f->nr)
				return NULL;	/* the stop eventfd */
			if (f->rules[i].kind == RULE_EVENT)
				read_event_rule(f, i);
			else if (f->rules[i].xw)
				tv_flight_xen_consume(f->rules[i].xw, xen_exit_hit, &f->rules[i]);
			else
				tv_flight_bpf_consume(f->rules[i].bpf);
		}
	}
	tv_err("Cannot wait for triggers: errno=%d (%s); the flight recorder takes snapshots on request only",
	       errno, strerror(errno));
	return NULL;
}

static int inst_write(struct rule *r, const char *file, const char *val)
{
	if (tracefs_instance_file_write(r->inst, file, val) >= 0)
		return 0;
	tv_err("Cannot arm trigger: rule=\"%s\", file=\"%s\", value=\"%s\", errno=%d (%s)", r->text,
	       file, val, errno, strerror(errno));
	return errno ? -errno : -EIO;
}

/* An event rule's own instance, tracing only its event (filtered in the kernel). */
static int arm_event(struct tv_flight *f, struct rule *r, int i)
{
	char name[64], *pipe = NULL;
	int ret;

	snprintf(name, sizeof(name), TV_TRIGGER_INSTANCE_PREFIX "%d-%d", (int)getpid(), i);
	r->inst = tracefs_instance_create(name);
	if (!r->inst) {
		tv_err("Cannot create tracefs instance: name=\"%s\", errno=%d (%s)", name, errno,
		       strerror(errno));
		return errno ? -errno : -EIO;
	}
	ret = inst_write(r, "tracing_on", "0");
	if (!ret)
		ret = inst_write(r, "buffer_size_kb", TRIG_BUFFER_KB);
	if (!ret)
		ret = inst_write(r, "trace_clock", f->o.clock ? f->o.clock : "local");
	if (!ret && !tracefs_event_file_exists(r->inst, r->system, r->event, "enable")) {
		tv_err("Invalid trigger: rule=\"%s\": no such event %s:%s in tracefs", r->text, r->system,
		       r->event);
		ret = -ENOENT;
	}
	if (!ret && r->filter && tracefs_event_file_write(r->inst, r->system, r->event, "filter", r->filter) < 0) {
		tv_err("Invalid trigger: rule=\"%s\": the kernel refused the filter (see %s/instances/%s/error_log)",
		       r->text, tracefs_tracing_dir(), name);
		ret = -EINVAL;
	}
	if (!ret && tracefs_event_file_write(r->inst, r->system, r->event, "enable", "1") < 0) {
		tv_err("Cannot arm trigger: rule=\"%s\": cannot enable %s:%s, errno=%d (%s)", r->text,
		       r->system, r->event, errno, strerror(errno));
		ret = errno ? -errno : -EIO;
	}
	if (!ret) {
		pipe = tracefs_instance_get_file(r->inst, "trace_pipe");
		r->pipe_fd = pipe ? open(pipe, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
		if (r->pipe_fd < 0) {
			ret = -errno;
			tv_err("Cannot open trace pipe: path=\"%s\", errno=%d (%s)", pipe ? pipe : name,
			       -ret, strerror(-ret));
		}
		tracefs_put_tracing_file(pipe);
	}
	return ret ? ret : inst_write(r, "tracing_on", "1");
}

static int arm_exit(struct tv_flight *f, struct rule *r)
{
	struct tv_flight_bpf_opts bo = { .limit_ns = r->limit_ns };

	r->f = f;
	if (f->o.xen)
		return tv_flight_xen_arm(f->o.xen, r->text, r->limit_ns, r->vm, r->reason, &r->xw);
	if (r->reason[0]) {
		bo.match_reason = 1;
		reason_codes(r->reason, &bo.reason_vmx, &bo.reason_svm);
	} else {
		reason_codes("hlt", &bo.reason_vmx, &bo.reason_svm);
	}
	return tv_flight_bpf_open(&bo, exit_hit, r, &r->bpf);
}

static int flight_watch(struct tv_flight *f, int i, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };

	return epoll_ctl(f->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static int flight_arm(struct tv_flight *f)
{
	int ret = 0;

	f->epfd = epoll_create1(EPOLL_CLOEXEC);
	f->stop_fd = eventfd(0, EFD_CLOEXEC);
	f->hit_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (f->epfd < 0 || f->stop_fd < 0 || f->hit_fd < 0)
		return -errno;
	for (size_t i = 0; i < f->nr && !ret; i++) {
		struct rule *r = &f->rules[i];

		if (r->kind == RULE_GUEST)
			continue;	/* its agent watches it */
		ret = r->kind == RULE_EVENT ? arm_event(f, r, (int)i) : arm_exit(f, r);
		if (!ret)
			ret = flight_watch(f, (int)i, r->kind == RULE_EVENT ? r->pipe_fd
						      : r->xw ? tv_xen_exit_watch_fd(r->xw)
							      : tv_flight_bpf_fd(r->bpf));
	}
	if (!ret)
		ret = flight_watch(f, -1, f->stop_fd);
	if (!ret) {
		ret = -pthread_create(&f->thread, NULL, watch_thread, f);
		f->started = !ret;
	}
	return ret;
}

int tv_flight_arm(const struct tv_flight_opts *o, struct tv_flight **out)
{
	struct tv_flight *f = calloc(1, sizeof(*f));
	int ret = 0;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->epfd = f->stop_fd = f->hit_fd = -1;
	pthread_mutex_init(&f->lock, NULL);
	f->o = *o;
	if (!f->o.max_snapshots)
		f->o.max_snapshots = TV_FLIGHT_DEFAULT_MAX_SNAPSHOTS;
	f->nr = o->nr_rules;
	if (f->nr > MAX_RULES)
		ret = -EINVAL;
	for (size_t i = 0; i < f->nr && !ret; i++)
		ret = rule_parse(&f->rules[i], o->rules[i]);
	if (!ret)
		ret = flight_arm(f);
	if (ret) {
		tv_flight_disarm(f);
		return ret;
	}
	*out = f;
	return 0;
}

int tv_flight_fd(const struct tv_flight *f)
{
	return f->hit_fd;
}

static double opt_s(uint64_t ns)
{
	return (double)ns / 1e9;
}

/* Under the lock: when the pending trigger is due; an exit's once it closed. */
static void pending_update(struct tv_flight *f, double now)
{
	struct pending *p = &f->p;
	struct rule *r = &f->rules[p->rule];
	uint64_t latency;
	int closed;

	if (p->due_s > 0)
		return;
	if (r->kind != RULE_EXIT) {
		p->due_s = p->hit_s + opt_s(f->o.post_ns);
		return;
	}
	closed = r->xw ? tv_xen_exit_watch_closed(r->xw, &p->xhit, &latency)
		       : tv_flight_bpf_closed(r->bpf, &p->exit, &latency);
	if (closed == 1) {
		p->latency_ns = latency;
		p->due_s = now + opt_s(f->o.post_ns);
	} else if (closed < 0 || now - p->hit_s >= TV_FLIGHT_EXIT_WAIT_NS / 1e9) {
		/* gone (its thread ended), or stalled for ever: what is there now */
		p->exit_open = closed == 0;
		p->latency_ns = (uint64_t)((now - p->hit_s) * 1e9) + r->limit_ns;
		p->due_s = now;
	}
}

int tv_flight_next_ms(struct tv_flight *f)
{
	double now = now_s();
	int ms = -1;
	uint64_t v;

	if (read(f->hit_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		tv_debug("Cannot read the trigger eventfd: errno=%d", errno);
	pthread_mutex_lock(&f->lock);
	if (f->has_pending) {
		pending_update(f, now);
		/* an open exit: look again in 10 ms */
		ms = f->p.due_s > 0 ? (f->p.due_s > now ? (int)((f->p.due_s - now) * 1000) + 1 : 0) : 10;
	}
	pthread_mutex_unlock(&f->lock);
	return ms;
}

static void fire_key(struct tv_flight_fire *fire, size_t *nk, size_t *used, const char *key,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void fire_key(struct tv_flight_fire *fire, size_t *nk, size_t *used, const char *key,
		     const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*nk >= 2 * TV_FLIGHT_MAX_KEYS || *used >= sizeof(fire->buf))
		return;
	va_start(ap, fmt);
	n = vsnprintf(fire->buf + *used, sizeof(fire->buf) - *used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(fire->buf) - *used)
		return;
	fire->keys[(*nk)++] = key;
	fire->keys[(*nk)++] = fire->buf + *used;
	*used += (size_t)n + 1;
}

/* A Xen exit's keys: its domain, vCPU and pCPU, times in the xen-tsc clock (TSC / cpu_khz). */
static void fire_xen(struct tv_flight *f, struct tv_flight_fire *fire, size_t *nk, size_t *used)
{
	const struct pending *p = &f->p;
	char vm[64], reason[64];

	tv_flight_xen_names(f->o.xen, &p->xhit, vm, sizeof(vm), reason, sizeof(reason));
	fire_key(fire, nk, used, "trigger_clock", p->xhit.system_time ? "xen-system" : "xen-tsc");
	fire_key(fire, nk, used, "trigger_tsc", "%llu", (unsigned long long)p->xhit.exit_tsc);
	fire_key(fire, nk, used, "trigger_vm", "%s", vm);
	fire_key(fire, nk, used, "trigger_domid", "%u", p->xhit.domid);
	fire_key(fire, nk, used, "trigger_vcpu", "%u", p->xhit.vcpu);
	fire_key(fire, nk, used, "trigger_cpu", "%u", p->xhit.pcpu);
	fire_key(fire, nk, used, "trigger_reason", "%s", reason);
	fire_key(fire, nk, used, "trigger_latency_ns", "%llu", (unsigned long long)p->latency_ns);
	if (p->exit_open)
		fire_key(fire, nk, used, "trigger_exit_open", "1");
}

/* The session.meta keys of the pending trigger (doc/session-format.md). */
static void fire_fill(struct tv_flight *f, struct tv_flight_fire *fire)
{
	const struct pending *p = &f->p;
	const struct rule *r = &f->rules[p->rule];
	size_t nk = 0, used = 0;
	char reason[64];

	memset(fire, 0, sizeof(*fire));
	fire_key(fire, &nk, &used, "trigger", "%s", r->text);
	fire_key(fire, &nk, &used, "trigger_time", "%llu", (unsigned long long)p->time_ns);
	if (r->xw) {
		fire_xen(f, fire, &nk, &used);
	} else if (r->kind != RULE_EXIT) {
		/* a guest's stamp is in the guest's trace clock, the session's */
		fire_key(fire, &nk, &used, "trigger_clock", "%s", f->o.clock ? f->o.clock : "local");
		if (r->kind == RULE_GUEST)
			fire_key(fire, &nk, &used, "trigger_guest", "%s", r->vm);
		fire_key(fire, &nk, &used, "trigger_event", "%s:%s", r->system, r->event);
		fire_key(fire, &nk, &used, "trigger_cpu", "%d", p->cpu);
	} else {
		tv_kvm_exit_reason_label((enum tv_kvm_isa)p->exit.isa, p->exit.reason, reason, sizeof(reason));
		fire_key(fire, &nk, &used, "trigger_clock", "mono");
		fire_key(fire, &nk, &used, "trigger_vm", "%s", p->vm);
		fire_key(fire, &nk, &used, "trigger_pid", "%d", (int)p->exit.tgid);
		fire_key(fire, &nk, &used, "trigger_tid", "%d", (int)p->exit.tid);
		fire_key(fire, &nk, &used, "trigger_vcpu", "%u", p->exit.vcpu);
		fire_key(fire, &nk, &used, "trigger_reason", "%s", reason);
		fire_key(fire, &nk, &used, "trigger_latency_ns", "%llu", (unsigned long long)p->latency_ns);
		fire_key(fire, &nk, &used, "trigger_seen_ns", "%llu",
			 (unsigned long long)(p->exit.seen_ns - p->exit.exit_ts));
		if (p->exit_open)
			fire_key(fire, &nk, &used, "trigger_exit_open", "1");
	}
	fire->keys[nk] = NULL;
}

int tv_flight_due(struct tv_flight *f, struct tv_flight_fire *fire)
{
	double now = now_s();
	int due = 0;

	pthread_mutex_lock(&f->lock);
	if (f->has_pending) {
		pending_update(f, now);
		if (f->p.due_s > 0 && now >= f->p.due_s) {
			fire_fill(f, fire);
			f->has_pending = false;
			f->taking = true;
			due = 1;
		}
	}
	pthread_mutex_unlock(&f->lock);
	return due;
}

void tv_flight_done(struct tv_flight *f, int ok)
{
	pthread_mutex_lock(&f->lock);
	f->taking = false;
	f->taken += ok != 0;
	f->holdoff_until = now_s() + opt_s(f->o.holdoff_ns);
	pthread_mutex_unlock(&f->lock);
}

void tv_flight_refused(struct tv_flight *f, unsigned int *busy, unsigned int *holdoff,
		       unsigned int *max)
{
	pthread_mutex_lock(&f->lock);
	*busy = f->busy;
	*holdoff = f->holdoff;
	*max = f->max;
	f->busy = f->holdoff = f->max = 0;
	pthread_mutex_unlock(&f->lock);
}

void tv_flight_disarm(struct tv_flight *f)
{
	uint64_t one = 1;

	if (!f)
		return;
	if (f->started) {
		if (write(f->stop_fd, &one, sizeof(one)) != sizeof(one))
			pthread_cancel(f->thread);
		pthread_join(f->thread, NULL);
	}
	for (size_t i = 0; i < f->nr; i++) {
		struct rule *r = &f->rules[i];

		if (r->pipe_fd >= 0)
			close(r->pipe_fd);
		if (r->inst) {
			tracefs_instance_destroy(r->inst);
			tracefs_instance_free(r->inst);
		}
		tv_flight_bpf_close(r->bpf);
		tv_flight_xen_disarm(f->o.xen, r->xw);
	}
	if (f->epfd >= 0)
		close(f->epfd);
	if (f->stop_fd >= 0)
		close(f->stop_fd);
	if (f->hit_fd >= 0)
		close(f->hit_fd);
	pthread_mutex_destroy(&f->lock);
	free(f);
}
