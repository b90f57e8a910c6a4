// SPDX-License-Identifier: GPL-2.0
/*
 * lib/format/vcpu_map.c against a fake /proc tree: fd symlinks to
 * "anon_inode:kvm-vm" / "anon_inode:kvm-vcpu:N", QEMU's "CPU N/KVM" thread
 * names, "-name guest=vm1,debug-threads=on", a single-threaded VMM with one
 * vCPU, a process that is no VMM; then the vcpus file round trip.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracevisor/tracevisor.h"
#include "tv_test.h"
#include "vcpu_scan.h"
#include "tv_internal.h"

static char root[] = "/tmp/tv-vcpumap.XXXXXX";

static void mkdirs(const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; *p; p++) {
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
	}
	mkdir(path, 0755);
}

static void put(const char *rel, const void *data, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fwrite(data, 1, len, f);
	fclose(f);
}

static void fd(int pid, int n, const char *target)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%d/fd", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/fd/%d", root, pid, n);
	if (symlink(target, path))
		perror(path);
}

static void task(int pid, int tid, const char *comm)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "%d/task/%d", pid, tid);
	mkdirs(rel);
	snprintf(rel, sizeof(rel), "%d/task/%d/comm", pid, tid);
	put(rel, comm, strlen(comm));
}

static void check_thread(const struct tv_vcpu_map *m, pid_t tid, pid_t vm_pid, int vcpu,
			 const char *name)
{
	const struct tv_vcpu_thread *t = tv_vcpu_map_find(m, tid);

	TV_CHECK(t != NULL, "thread %d not found", tid);
	if (!t)
		return;
	TV_CHECK(t->tid == tid && t->vm_pid == vm_pid && t->vcpu == vcpu && !strcmp(t->vm_name, name),
		 "thread %d: vm_pid %d vcpu %d name '%s', expected %d %d '%s'", tid, t->vm_pid,
		 t->vcpu, t->vm_name, vm_pid, vcpu, name);
}

static void rm_rf(const char *path)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", path);
}

int main(void)
{
	static const char qemu_cmdline[] = "qemu-system-x86_64\0-m\0512\0-name\0guest=vm1,debug-threads=on\0-smp\0002";
	static const char named_cmdline[] = "my-vmm\0-name\0my vm\0";
	struct tv_vcpu_map m = { 0 }, back = { 0 };
	char path[512];

	if (!mkdtemp(root))
		return 1;
	/* QEMU: a VM fd, two vCPU fds, vCPU threads named "CPU N/KVM" and others */
	mkdirs("1000");
	put("1000/cmdline", qemu_cmdline, sizeof(qemu_cmdline));
	put("1000/comm", "qemu-system-x86\n", 16);
	fd(1000, 0, "/dev/null");
	fd(1000, 11, "anon_inode:kvm-vm");
	fd(1000, 12, "anon_inode:kvm-vcpu:0");
	fd(1000, 13, "anon_inode:kvm-vcpu:1");
	fd(1000, 14, "anon_inode:[eventfd]");
	task(1000, 1000, "qemu-system-x86\n");
	task(1000, 1001, "CPU 0/KVM\n");
	task(1000, 1002, "CPU 1/KVM\n");
	task(1000, 1003, "IO mon_iothread\n");
	/* a single-threaded VMM with one vCPU: its only thread runs vCPU 0 */
	mkdirs("2000");
	put("2000/cmdline", "tv-testvmm\0--outs\0" "3", 20);
	put("2000/comm", "tv-testvmm\n", 11);
	fd(2000, 3, "/dev/kvm");
	fd(2000, 4, "anon_inode:kvm-vm");
	fd(2000, 5, "anon_inode:kvm-vcpu:0");
	task(2000, 2000, "tv-testvmm\n");
	/* "-name NAME" with a space: the vcpus file is whitespace-separated */
	mkdirs("3000");
	put("3000/cmdline", named_cmdline, sizeof(named_cmdline));
	put("3000/comm", "my-vmm\n", 7);
	fd(3000, 7, "anon_inode:kvm-vm");
	task(3000, 3000, "my-vmm\n");
	task(3000, 3005, "CPU 3/KVM\n");
	/* not a VMM: /dev/kvm open but no VM */
	mkdirs("4000");
	put("4000/comm", "bash\n", 5);
	fd(4000, 0, "/dev/pts/0");
	fd(4000, 3, "/dev/kvm");
	task(4000, 4000, "bash\n");
	mkdirs("self");
	mkdirs("sys");

	TV_CHECK(tv_vcpu_map_scan(&m, root) == 0, "scan");
	TV_CHECK(m.nr == 7, "%zu threads", m.nr);
	check_thread(&m, 1000, 1000, -1, "vm1");
	check_thread(&m, 1001, 1000, 0, "vm1");
	check_thread(&m, 1002, 1000, 1, "vm1");
	check_thread(&m, 1003, 1000, -1, "vm1");
	check_thread(&m, 2000, 2000, 0, "tv-testvmm");
	check_thread(&m, 3000, 3000, -1, "my_vm");
	check_thread(&m, 3005, 3000, 3, "my_vm");
	TV_CHECK(tv_vcpu_map_find(&m, 4000) == NULL, "bash is no vCPU thread");
	TV_CHECK(tv_vcpu_map_find(&m, 1) == NULL, "unknown tid");
	TV_CHECK(tv_vcpu_map_find(NULL, 1001) == NULL, "NULL map");

	/* a second scan merges: no duplicates */
	TV_CHECK(tv_vcpu_map_scan(&m, root) == 0 && m.nr == 7, "rescan: %zu", m.nr);

	/* the vcpus file */
	snprintf(path, sizeof(path), "%s/vcpus", root);
	TV_CHECK(tv_vcpu_map_write(&m, path) == 0, "write");
	TV_CHECK(tv_vcpu_map_read(&back, path) == 0, "read");
	TV_CHECK(back.nr == m.nr, "read %zu of %zu", back.nr, m.nr);
	for (size_t i = 0; i < m.nr; i++)
		check_thread(&back, m.threads[i].tid, m.threads[i].vm_pid, m.threads[i].vcpu,
			     m.threads[i].vm_name);
	tv_vcpu_map_free(&back);

	/* malformed lines are skipped, later lines for a tid win */
	{
		static const char text[] = "# tid vm_pid vcpu vm_name\n5001 5000 0 a\ngarbage\n"
					   "-3 1 1 x\n5001 5000 2 b\n5002 5000\n";

		put("vcpus", text, strlen(text));
	}
	TV_CHECK(tv_vcpu_map_read(&back, path) == 0, "read malformed");
	TV_CHECK(back.nr == 1, "%zu entries", back.nr);
	check_thread(&back, 5001, 5000, 2, "b");
	tv_vcpu_map_free(&back);
	TV_CHECK(back.threads == NULL && back.nr == 0, "free");
	snprintf(path, sizeof(path), "%s/none", root);
	TV_CHECK(tv_vcpu_map_read(&back, path) == -ENOENT, "missing file");
	TV_CHECK(tv_vcpu_map_scan(&back, path) == -ENOENT, "missing proc root");

	tv_vcpu_map_free(&m);
	rm_rf(root);
	return tv_test_done("test_decode_vcpu_map");
}
