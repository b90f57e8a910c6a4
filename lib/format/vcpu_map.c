// SPDX-License-Identifier: LGPL-2.1
/*
 * The vCPU map of a domain (DOMAIN/vcpus, doc/session-format.md): which host
 * threads run which VM's vCPUs.  Reading, writing and lookup; discovering
 * the threads from /proc is kvm/vcpu_scan.c's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"

struct tv_vcpu_thread *tv_vcpu_map_slot(struct tv_vcpu_map *map, pid_t tid)
{
	struct tv_vcpu_thread *grown;

	for (size_t i = 0; i < map->nr; i++)
		if (map->threads[i].tid == tid)
			return &map->threads[i];
	grown = realloc(map->threads, (map->nr + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	map->threads = grown;
	memset(&grown[map->nr], 0, sizeof(*grown));
	grown[map->nr].vcpu = -1;
	return &grown[map->nr++];
}
int tv_vcpu_map_add(struct tv_vcpu_map *map, pid_t tid, pid_t vm_pid, int vcpu)
{
	struct tv_vcpu_thread *t = tv_vcpu_map_slot(map, tid);

	if (!t)
		return -ENOMEM;
	t->tid = tid;
	t->vm_pid = vm_pid;
	t->vcpu = vcpu;
	return 0;
}

int tv_vcpu_map_write(const struct tv_vcpu_map *map, const char *path)
{
	FILE *f = tv_file_fcreate(path, "vCPU map");

	if (!f)
		return -errno;
	fprintf(f, "# tid vm_pid vcpu vm_name\n");
	for (size_t i = 0; i < map->nr; i++) {
		const struct tv_vcpu_thread *t = &map->threads[i];

		fprintf(f, "%d %d %d %s\n", (int)t->tid, (int)t->vm_pid, t->vcpu, t->vm_name);
	}
	if (fclose(f)) {
		int err = errno;

		tv_err("Cannot write vCPU map: path=\"%s\", errno=%d (%s)", path, err, strerror(err));
		return -err;
	}
	return 0;
}

int tv_vcpu_map_read(struct tv_vcpu_map *map, const char *path)
{
	char line[256];
	/* O_NONBLOCK: a FIFO in an untrusted session must not block; only a
	 * regular file is read. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	FILE *f = NULL;
	int ret = -EINVAL;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		tv_err("Not a regular file in the session: path=\"%s\"", path);
		goto out;
	}
	/* Bounded: a line per vCPU thread, ~30 bytes; 16 MiB is far beyond. */
	if (st.st_size > (16 << 20)) {
		tv_err("vCPU map too large: path=\"%s\", size=%lld", path, (long long)st.st_size);
		goto out;
	}
	f = fdopen(fd, "r");
	if (!f) {
		ret = -errno;
		goto out;
	}
	ret = 0;
	while (fgets(line, sizeof(line), f)) {
		struct tv_vcpu_thread t = { 0 }, *slot;
		int tid, vm_pid;

		if (line[0] == '#')
			continue;
		if (sscanf(line, "%d %d %d %63s", &tid, &vm_pid, &t.vcpu, t.vm_name) != 4 ||
		    tid <= 0) {
			tv_warn("Ignoring malformed vCPU map line: path=\"%s\"", path);
			continue;
		}
		slot = tv_vcpu_map_slot(map, tid);
		if (!slot) {
			ret = -ENOMEM;
			break;
		}
		t.tid = tid;
		t.vm_pid = vm_pid;
		*slot = t;
	}
out:
	if (f)
		fclose(f);
	else
		close(fd);
	return ret;
}

const struct tv_vcpu_thread *tv_vcpu_map_find(const struct tv_vcpu_map *map, pid_t tid)
{
	for (size_t i = 0; map && i < map->nr; i++)
		if (map->threads[i].tid == tid)
			return &map->threads[i];
	return NULL;
}

void tv_vcpu_map_free(struct tv_vcpu_map *map)
{
	free(map->threads);
	map->threads = NULL;
	map->nr = 0;
}
