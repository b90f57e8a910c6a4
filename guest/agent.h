/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest agent's shared state and the functions its files share
 * (guest/agent*.c: one job per file; agent.c has main()).
 */
#ifndef TV_GUEST_AGENT_H
#define TV_GUEST_AGENT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto.h"

/* 2: filter.N in START, filters in META; 3: HELLO echoing START's nonce,
 * a START during a session ends it and starts anew, the host's frames are
 * searched for after stray bytes; 4: a flight recorder (START's flight_bytes,
 * trigger.N; SNAP, SNAP_DATA, SNAP_FILE, SNAP_END, TRIGGER) */
#define AGENT_VERSION "4"
#define MAX_EVENTS 64
#define MAX_SPECS 64
#define AGENT_MAX_TRIGGERS 16	/* START's trigger.N: N below it (the host's --trigger limit) */		/* items of the host's event list that may have a filter */
#define SEND_TIMEOUT_MS 10000
#define DEFAULT_EVENTS "sched:sched_switch,sched:sched_wakeup,irq:irq_handler_entry," \
	"irq:irq_handler_exit,irq:softirq_entry,irq:softirq_exit," \
	"raw_syscalls:sys_enter,raw_syscalls:sys_exit"

extern int verbose;
extern int no_hcalls;

/* "tracevisor-agent: MESSAGE" on stderr. */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

struct agent_cpu {
	struct session *s;
	int cpu;
	int fd;
	int pipe[2];		/* trace_pipe_raw -> pipe -> channel (splice) */
	size_t chunk;		/* bytes per splice: whole sub-buffers */
	int no_splice;		/* splice unsupported: read() + write() */
	pthread_t thread;
	int started;
	unsigned long long bytes;
};

/*
 * Threads: one reader thread per CPU (cpu_thread) and the main thread (the
 * host channel's receiver, probes, stop) share a session.
 *   fd, and every frame written to it   send_lock (a frame is never split)
 *   dead                                 send_lock, read and written under it
 *   stop                                 atomic: set once by stop_cpus() on
 *                                        the main thread, polled by readers;
 *                                        release/acquire so that a reader
 *                                        that sees it sees what the main
 *                                        thread wrote before (the end order)
 *   cpus[i] (but .bytes)                 set before the threads start,
 *                                        read-only while they run
 *   cpus[i].bytes                        its reader thread only, read by
 *                                        main after pthread_join()
 *   the rest                             set before the threads start
 */
struct session {
	int fd;			/* the channel: socket or virtio-serial port */
	pthread_mutex_t send_lock;
	int dead;		/* the channel failed: drop further output */
	atomic_int stop;
	char tracing[64];	/* tracefs mount point */
	char inst[192];		/* our instance directory */
	int marker_fd;
	int ncpus;
	size_t subbuf_size;
	unsigned buffer_kb;
	uint16_t guest;
	char clock[32];
	char events_spec[1024];		/* the host's list, or empty: default */
	char ust_spec[1024];		/* START's "ust": globs for traced processes, "" none */
	char ust_mode[16];		/* START's ust_mode, "" none: the processes' default */
	uint32_t ust_subbuf_size, ust_nr_subbufs;	/* START's, 0 none */
	char *events[MAX_EVENTS];	/* "sys/event" that are enabled */
	int nr_events;
	char *filters[MAX_SPECS];	/* START's filter.N: item N's, or NULL */
	int nr_filters;			/* how many filter.N START had */
	char error[512];		/* why enable_events() failed, for ERROR */
	uint64_t nonce;			/* START's, echoed in HELLO; 0: none (older host) */
	unsigned char *restart;		/* a START received during the session, or NULL */
	size_t restart_len;
	struct agent_cpu *cpus;
	unsigned long long flight_bytes;	/* START's: a flight recorder, 0: streaming */
	struct agent_flight *flight;	/* its triggers (agent_flight.c), or NULL */
};

/* agent_channel.c */
int wait_writable(int fd);
int write_all(int fd, const void *buf, size_t len);
int send_frame(struct session *s, uint16_t type, uint32_t arg, const void *payload,
		      size_t len);
int send_text(struct session *s, uint16_t type, const char *text);
int send_text_arg(struct session *s, uint16_t type, uint32_t arg, const char *text);
int recv_frame(int fd, struct tv_proto_hdr *hdr, unsigned char **payload, int timeout_ms);

/* agent_tracefs.c */
char *read_file(const char *path, size_t *len);
/* agent_xenchan.c: a Xen domU's console channel named one of @names, opened; -1 none */
int open_xen_channel(const char *const *names, size_t nr_names);
int write_file(const char *path, const char *val);
int inst_write(struct session *s, const char *file, const char *val);
int enable_events(struct session *s, const char *list);
/* Dynamic probes (agent_dynevents.c). */
int is_dynamic_spec(const char *spec);
int create_dynamic_probe(struct session *s, const char *spec, char *event, size_t size);
void remove_dynamic_probes(struct session *s, int ours);
int setup_instance(struct session *s);
size_t subbuf_size(struct session *s);

/* agent_files.c */
int send_file(struct session *s, const char *src, const char *name);
int send_file_as(struct session *s, uint16_t type, uint32_t arg, const char *src, const char *name);
int send_formats(struct session *s);
int send_meta(struct session *s);

/* agent_cpus.c */
int start_cpus(struct session *s);
void stop_cpus(struct session *s);
int send_counts(struct session *s, uint16_t type);

/* agent_probes.c */
void answer_hcall(struct session *s, const unsigned char *p, size_t len);
void answer_ping(struct session *s, const unsigned char *p, size_t len);

/* agent_ust.c: the guest's traced processes (own thread) */
int ust_start(struct session *s, const char *globs);
void ust_stop(void);
/*
 * A flight recorder's SNAP @id: the traced processes' newest sub-buffers as
 * SNAP_UST frames, sent by the ust thread while the caller (the main
 * thread, send_lock not held) waits.  Nothing without ust or flight_bytes.
 */
void ust_snapshot(uint32_t id);

/* agent_flight.c: the ring kept in the guest until the host's SNAP; triggers */
/* START's flight_bytes, trigger.N, trigger_filter.N: 1 taken, 0 not one, -errno */
int flight_start_opt(struct session *s, const char *key, const char *val);
void flight_size(struct session *s, int ncpus);
/* The triggers' instances (before READY): 0, or -errno with s->error set. */
int flight_arm(struct session *s);
/* Their watcher thread (after READY: it sends TRIGGER). */
void flight_watch(struct session *s);
/* No TRIGGER after this (the end: nothing may follow END). */
void flight_unwatch(struct session *s);
void flight_snapshot(struct session *s, uint32_t id);
void flight_cleanup(struct session *s);

/* agent_session.c */
void run_session(int fd);

/* agent_listen.c */
int listen_vsock(unsigned port);
int open_serial(const char *want);

#endif
