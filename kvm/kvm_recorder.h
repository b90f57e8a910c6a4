/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The host recorder (kvm/kvm_recorder.c) as the layers above use it: the session
 * recording (host/recorder.c), the guests (host/guest.c) and the live view
 * (kvm/top.c) drive it; a client program records through
 * tv_session_record_start() (<tracevisor/record.h>).
 */
#ifndef TV_KVM_KVM_RECORDER_H
#define TV_KVM_KVM_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tracevisor/tracevisor.h"

/*
 * Threads: a recorder runs one capture thread per CPU between
 * tv_recorder_start() and _stop(); call every tv_recorder_* function from
 * one thread, except tv_recorder_write_marker(), tv_recorder_add_vcpu(),
 * tv_recorder_set_vm_name(), which the guest
 * threads call too (an internal lock covers the vCPU map, VM names and
 * the domain list; a marker is one write(), atomic in the kernel).
 */
struct tv_recorder;

/*
 * The tracefs instance of a flight recorder's event trigger
 * (host/flight.c): "tracevisor-trig-PID-N".  It holds no session data, so
 * tv_tracefs_cleanup_stale() removes a dead recorder's without recovery.
 */
#define TV_TRIGGER_INSTANCE_PREFIX "tracevisor-trig-"

/**
 * tv_recorder_create - prepare a recording: tracefs instance, events, output
 * @opts: what to record and where (copied; the strings must outlive @out)
 * @out: the new recorder, owned by the caller (tv_recorder_destroy())
 *
 * Cleans up stale instances of killed runs, creates this run's own tracefs
 * instance, enables the events and writes the static part of the session
 * (formats, header_page).  Nothing is traced until tv_recorder_start().
 * Threads: create, start, stop and destroy from one thread; the recorder
 * runs one capture thread per CPU of its own between start and stop.
 * Return: 0, or -errno (the instance and the output directory are removed).
 */
int tv_recorder_create(const struct tv_record_opts *opts, struct tv_recorder **out);

/**
 * tv_recorder_start - start tracing and the per-CPU capture threads
 * @rec: a created recorder
 *
 * Return: 0 or -errno (logged).
 */
int tv_recorder_start(struct tv_recorder *rec);

/**
 * tv_recorder_stop - stop tracing, flush every CPU, write the metadata
 * @rec: a started recorder
 *
 * Joins the capture threads, writes DIR/host/meta, vcpus, task maps and
 * DIR/session.meta, and counts losses (tv_recorder_cpu_stats()).
 * Return: 0 or -errno (logged).
 */
int tv_recorder_stop(struct tv_recorder *rec);

/**
 * tv_recorder_flush - write everything traced so far into the session
 * @rec: a started recorder
 * @timeout_ms: how long to wait for the capture threads
 *
 * Every capture thread writes what its CPU buffer holds, the partly filled
 * sub-buffer included, so that a reader following the session
 * (tv_reader_open_follow()) sees every event traced before the call.
 * Return: 0, -EINVAL (not recording) or -ETIMEDOUT (logged).
 */
int tv_recorder_flush(struct tv_recorder *rec, int timeout_ms);

/**
 * tv_recorder_checkpoint - write the vCPU map and task maps as they are now
 * @rec: a created recorder
 *
 * tv_recorder_stop() writes them at the end; a live view calls this so that
 * a following reader can name the VMs and vCPUs while the recording runs.
 * Return: 0 or -errno (logged).
 */
int tv_recorder_checkpoint(struct tv_recorder *rec);

/**
 * tv_recorder_destroy - remove the tracefs instance and free @rec
 * @rec: a recorder, started or not, or NULL
 *
 * The session directory stays.
 */
void tv_recorder_destroy(struct tv_recorder *rec);

/**
 * tv_recorder_scan_vcpus - rescan /proc for VM processes while recording
 * @rec: a started recorder
 *
 * VMs started after tv_recorder_start() are added to host/vcpus.
 * Threads: from the thread that drives @rec.
 * Return: 0 or -errno.
 */
int tv_recorder_scan_vcpus(struct tv_recorder *rec);

/**
 * tv_tracefs_cleanup_stale - remove tracefs instances of dead tracevisor runs
 *
 * An instance whose recorder was killed (its pid gone, or reused: the
 * process start time differs) and whose session directory still exists
 * and is incomplete is first salvaged into that session, as
 * tv_session_recover() does (one info line); the others are removed.
 * Instances of running recorders are left alone.
 * Return: the number of instances removed.
 */
int tv_tracefs_cleanup_stale(void);

/**
 * tv_recorder_write_marker - write a raw marker into the recording's trace
 * @rec: a started recorder
 * @buf: payload (copied); its first 4 bytes are the marker id (trace_marker_raw)
 * @len: bytes, 8..4096
 *
 * The record lands in the instance's own buffer as an ftrace:raw_data
 * event, timestamped in the trace clock.  Threads: safe from any thread.
 * Return: 0 or -errno.
 */
int tv_recorder_write_marker(struct tv_recorder *rec, const void *buf, size_t len);

/**
 * tv_recorder_set_vm_name - label the vCPU threads of @vm_pid with @name in host/vcpus
 * @rec: the recorder
 * @vm_pid: the VMM process
 * @name: label (copied)
 *
 * Threads: safe from guest threads while recording.
 * Return: 0 or -errno.
 */
int tv_recorder_set_vm_name(struct tv_recorder *rec, pid_t vm_pid, const char *name);

/**
 * tv_recorder_add_vcpu - thread @tid of process @vm_pid runs vCPU @vcpu
 * @rec: the recorder
 * @tid: the vCPU thread
 * @vm_pid: its process
 * @vcpu: vCPU index
 *
 * Known from the VMM (e.g. QMP query-cpus-fast): listed in host/vcpus even
 * when the process holds no KVM fds (a TCG QEMU).  Call before
 * tv_recorder_stop().  Threads: safe from guest threads while recording.
 * Return: 0 or -ENOMEM.
 */
int tv_recorder_add_vcpu(struct tv_recorder *rec, pid_t tid, pid_t vm_pid, int vcpu);

/* What a flight recorder's snapshot froze (tv_recorder_flight_freeze()). */
struct tv_flight_shot {
	uint64_t start_ns;		/* CLOCK_MONOTONIC when the freeze began */
	uint64_t frozen_ns;		/* CLOCK_MONOTONIC once frozen */
	uint64_t freeze_cost_ns;	/* the freeze itself (a swap, or tracing off) */
	uint64_t gap_ns;		/* tracing off while read (no snapshot buffer), else 0 */
	uint64_t *cpu_bytes;		/* per CPU written */
	bool frozen;			/* tracing off until written (stop-read-restart) */
};

/**
 * tv_recorder_flight_freeze - freeze a flight recorder's ring, at once
 * @rec: a started recorder with opts.flight_bytes
 * @shot: filled (the caller frees it with tv_flight_shot_free(), whatever the return)
 *
 * A swap with the instance's snapshot buffer (recording goes on in the
 * other), or tracing off where there is none (until written).  First, before
 * any directory is made: the trigger-to-freeze time is this call's.
 * Return: 0, -EINVAL (not a started flight recorder), -errno (logged).
 */
int tv_recorder_flight_freeze(struct tv_recorder *rec, struct tv_flight_shot *shot);
/**
 * tv_recorder_flight_write - the frozen ring into @dir (a snapshot's host/)
 * @rec: the recorder
 * @dir: made by the caller
 * @shot: as tv_recorder_flight_freeze() filled it
 *
 * Writes formats, cpuN.raw, vcpus, task maps and meta (status complete,
 * flight_gap_ns), and turns tracing back on when the freeze stopped it,
 * even when a write failed.  Return: 0 or -errno (logged).
 */
int tv_recorder_flight_write(struct tv_recorder *rec, const char *dir, struct tv_flight_shot *shot);
/* Frees @shot; tracing back on if it was frozen and never written. */
void tv_flight_shot_free(struct tv_recorder *rec, struct tv_flight_shot *shot);
/* "snapshot-buffer" or "stop-read-restart": how this kernel lets a snapshot freeze. */
const char *tv_recorder_flight_method(const struct tv_recorder *rec);
/* The ring per CPU in KB of a flight recorder, 0 for a streaming one. */
unsigned int tv_recorder_flight_kb(const struct tv_recorder *rec);

#endif
