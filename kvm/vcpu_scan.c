// SPDX-License-Identifier: LGPL-2.1
/*
 * Which host threads are vCPUs of which VM, from /proc: a VMM holds an
 * "anon_inode:kvm-vm" fd and one "anon_inode:kvm-vcpu:N" fd per vCPU.  A
 * thread named like QEMU's "CPU N/KVM" runs vCPU N; a single-threaded VMM
 * with one vCPU runs it on its only thread.  Other threads keep vcpu=-1 and
 * are still attributed to their VM (the trace's vcpu_id fields fill in).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "vcpu_scan.h"

struct vm_scan {
	pid_t pid;
	int nr_vcpu_fds;
	char name[64];
};

static int is_number(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

static int read_small_file(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -errno;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (int)n;
}

/* Does @pid hold a KVM VM fd?  Counts its vCPU fds on the way. */
static int scan_fds(const char *proc, pid_t pid, struct vm_scan *vm)
{
	char dir[PATH_MAX], link[PATH_MAX], target[256];
	struct dirent *de;
	DIR *d;
	int is_vm = 0;

	snprintf(dir, sizeof(dir), "%s/%d/fd", proc, (int)pid);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		ssize_t n;

		snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (!strcmp(target, "anon_inode:kvm-vm"))
			is_vm = 1;
		else if (!strncmp(target, "anon_inode:kvm-vcpu", 19))
			vm->nr_vcpu_fds++;
	}
	closedir(d);
	return is_vm;
}

void tv_kvm_vm_name(const char *proc, pid_t pid, char *name, size_t size)
{
	char path[PATH_MAX], cmdline[8192];
	int n;

	snprintf(path, sizeof(path), "%s/%d/cmdline", proc, (int)pid);
	n = read_small_file(path, cmdline, sizeof(cmdline));
	for (int i = 0; n > 0 && i < n; i += (int)strlen(cmdline + i) + 1) {
		const char *arg = cmdline + i, *val;

		if (strcmp(arg, "-name") || i + 6 >= n)
			continue;
		val = arg + 6;
		if (!strncmp(val, "guest=", 6))
			val += 6;
		snprintf(name, size, "%.*s", (int)strcspn(val, ","), val);
		break;
	}
	if (!name[0]) {
		snprintf(path, sizeof(path), "%s/%d/comm", proc, (int)pid);
		if (read_small_file(path, name, size) > 0)
			name[strcspn(name, "\n")] = '\0';
		else
			snprintf(name, size, "pid%d", (int)pid);
	}
	/* The vcpus file is whitespace-separated. */
	for (char *p = name; *p; p++)
		if (isspace((unsigned char)*p))
			*p = '_';
}

static int scan_threads(struct tv_vcpu_map *map, const char *proc, const struct vm_scan *vm)
{
	char dir[PATH_MAX], path[PATH_MAX], comm[64];
	struct dirent *de;
	DIR *d;
	int nr_threads = 0;
	pid_t only_tid = 0;

	snprintf(dir, sizeof(dir), "%s/%d/task", proc, (int)vm->pid);
	d = opendir(dir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		struct tv_vcpu_thread *t;
		int vcpu = -1;

		if (!is_number(de->d_name))
			continue;
		nr_threads++;
		only_tid = (pid_t)atoi(de->d_name);
		snprintf(path, sizeof(path), "%s/%s/comm", dir, de->d_name);
		if (read_small_file(path, comm, sizeof(comm)) > 0 &&
		    sscanf(comm, "CPU %d/KVM", &vcpu) != 1)
			vcpu = -1;
		t = tv_vcpu_map_slot(map, only_tid);
		if (!t) {
			closedir(d);
			return -ENOMEM;
		}
		t->tid = only_tid;
		t->vm_pid = vm->pid;
		if (vcpu >= 0 || t->vcpu < 0)
			t->vcpu = vcpu;
		snprintf(t->vm_name, sizeof(t->vm_name), "%s", vm->name);
	}
	closedir(d);
	if (nr_threads == 1 && vm->nr_vcpu_fds == 1) {
		struct tv_vcpu_thread *t = tv_vcpu_map_slot(map, only_tid);
		if (t && t->vcpu < 0)
			t->vcpu = 0;
	}
	return 0;
}

int tv_vcpu_map_scan(struct tv_vcpu_map *map, const char *proc_root)
{
	const char *proc = proc_root ? proc_root : "/proc";
	struct dirent *de;
	DIR *d = opendir(proc);
	int ret = 0;

	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		struct vm_scan vm = { 0 };

		if (!is_number(de->d_name))
			continue;
		vm.pid = (pid_t)atoi(de->d_name);
		if (!scan_fds(proc, vm.pid, &vm))
			continue;
		tv_kvm_vm_name(proc, vm.pid, vm.name, sizeof(vm.name));
		ret = scan_threads(map, proc, &vm);
	}
	closedir(d);
	return ret;
}
