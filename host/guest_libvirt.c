// SPDX-License-Identifier: LGPL-2.1
/*
 * A libvirt domain name as a --guest SPEC: its QEMU pid, vCPU threads
 * (QMP query-cpus-fast through virDomainQemuMonitorCommand), and the
 * agent's channel from the domain XML (a <vsock> CID, else the unix
 * <channel> whose target name is org.tracevisor.0).
 *
 * Built when libvirt's headers are there (pkg-config libvirt libvirt-qemu),
 * but libvirt is loaded with dlopen() at run time: linking it would pull
 * 60 MB of libraries into every static-ish deployment (the lab's
 * initramfs), and hosts without libvirt keep working with vsock:/serial:.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "proto.h"
#include "guest_libvirt.h"

/* The value of attribute @attr inside the first <@tag ...> at or after @from. */
static int xml_attr(const char *from, const char *end, const char *tag, const char *attr,
		    char *out, size_t size)
{
	char open_tag[64], key[64];
	const char *t, *a, *close;
	size_t n;

	snprintf(open_tag, sizeof(open_tag), "<%s ", tag);
	snprintf(key, sizeof(key), " %s=", attr);
	t = strstr(from, open_tag);
	if (!t || (end && t >= end))
		return -ENOENT;
	close = strchr(t, '>');
	a = strstr(t, key);
	if (!close || !a || a > close)
		return -ENOENT;
	a += strlen(key);
	if (*a != '\'' && *a != '"')
		return -ENOENT;
	n = strcspn(a + 1, "'\"");
	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(out, a + 1, n);
	out[n] = '\0';
	return 0;
}

void tv_guest_spec_from_libvirt_xml(struct tv_guest_spec *spec, const char *xml)
{
	const char *vsock = strstr(xml, "<vsock"), *ch = xml;
	char val[256];

	if (vsock && !xml_attr(vsock, strstr(vsock, "</vsock>"), "cid", "address", val, sizeof(val)))
		spec->vsock_cid = (unsigned)strtoul(val, NULL, 10);
	if (spec->vsock_cid >= 3)
		return;
	spec->vsock_cid = 0;
	while ((ch = strstr(ch, "<channel type='unix'>"))) {
		const char *end = strstr(ch, "</channel>");

		if (!end)
			break;
		if (!xml_attr(ch, end, "target", "name", val, sizeof(val)) &&
		    !strcmp(val, TV_AGENT_SERIAL_NAME) &&
		    !xml_attr(ch, end, "source", "path", val, sizeof(val))) {
			snprintf(spec->serial, sizeof(spec->serial), "%s", val);
			return;
		}
		ch = end;
	}
}

/*
 * QMP query-cpus-fast: {"return": [{"thread-id": 1234, "props": {"thread-id":
 * 0, ...}, "cpu-index": 0, ...}, ...]}.  Only the keys of each vCPU object
 * itself count (props has a thread-id of its own: the SMT thread).
 */
void tv_guest_spec_from_qmp_cpus(struct tv_guest_spec *spec, const char *reply)
{
	const char *p = strstr(reply, "\"return\"");
	long tid = -1, idx = -1;
	int depth = 0;

	spec->nr_vcpus = 0;
	p = p ? strchr(p, '[') : NULL;
	if (!p)
		return;
	for (p++; *p && depth >= 0; p++) {
		if (*p == '{') {
			if (depth++ == 0)
				tid = idx = -1;
		} else if (*p == '}') {
			if (--depth == 0 && tid > 0 && idx >= 0 && idx < TV_GUEST_MAX_VCPUS) {
				spec->vcpu_tid[idx] = (pid_t)tid;
				if ((unsigned long)idx >= spec->nr_vcpus)
					spec->nr_vcpus = (unsigned int)idx + 1;
			}
		} else if (*p == ']' && depth == 0) {
			break;
		} else if (*p == '"') {
			const char *key = p + 1, *q = strchr(key, '"');
			long *val = NULL;

			if (!q)
				break;
			if (depth == 1 && !strncmp(key, "thread-id\"", 10))
				val = &tid;
			else if (depth == 1 && !strncmp(key, "cpu-index\"", 10))
				val = &idx;
			p = q;
			if (val) {
				q += 1 + strspn(q + 1, " \t\n:");
				if (*q >= '0' && *q <= '9')
					*val = strtol(q, NULL, 10);
			}
		}
	}
}

#ifdef TV_HAVE_LIBVIRT
#include <dlfcn.h>
#include <libvirt/libvirt.h>
#include <libvirt/libvirt-qemu.h>

struct virt_api {
	void *lib, *qemu_lib;
	virConnectPtr (*connect_open)(const char *);
	int (*connect_close)(virConnectPtr);
	virDomainPtr (*lookup)(virConnectPtr, const char *);
	char *(*xml_desc)(virDomainPtr, unsigned int);
	int (*domain_free)(virDomainPtr);
	const char *(*last_error)(void);
	int (*monitor)(virDomainPtr, const char *, char **, unsigned int);
};

static int virt_load(struct virt_api *v)
{
	v->lib = dlopen("libvirt.so.0", RTLD_NOW | RTLD_LOCAL);
	v->qemu_lib = v->lib ? dlopen("libvirt-qemu.so.0", RTLD_NOW | RTLD_LOCAL) : NULL;
	if (!v->qemu_lib) {
		tv_err("Cannot load libvirt: %s (install libvirt0, or use vsock:CID / serial:PATH)",
		       dlerror());
		return -ENOTSUP;
	}
	*(void **)&v->connect_open = dlsym(v->lib, "virConnectOpen");
	*(void **)&v->connect_close = dlsym(v->lib, "virConnectClose");
	*(void **)&v->lookup = dlsym(v->lib, "virDomainLookupByName");
	*(void **)&v->xml_desc = dlsym(v->lib, "virDomainGetXMLDesc");
	*(void **)&v->domain_free = dlsym(v->lib, "virDomainFree");
	*(void **)&v->last_error = dlsym(v->lib, "virGetLastErrorMessage");
	*(void **)&v->monitor = dlsym(v->qemu_lib, "virDomainQemuMonitorCommand");
	if (!v->connect_open || !v->connect_close || !v->lookup || !v->xml_desc ||
	    !v->domain_free || !v->last_error || !v->monitor) {
		tv_err("Cannot load libvirt: a symbol is missing");
		return -ENOTSUP;
	}
	return 0;
}

/* The QEMU pid and vCPU threads from QMP query-cpus-fast. */
static pid_t pid_from_qmp(struct virt_api *v, virDomainPtr dom, struct tv_guest_spec *spec)
{
	char *reply = NULL;
	pid_t first = 0;

	if (v->monitor(dom, "{\"execute\":\"query-cpus-fast\"}", &reply, 0) < 0 || !reply)
		return 0;
	tv_guest_spec_from_qmp_cpus(spec, reply);
	free(reply);
	/* Any vCPU thread belongs to the QEMU process: its tgid is the pid. */
	for (unsigned int i = 0; i < spec->nr_vcpus && !first; i++) {
		char path[64], line[128];
		FILE *f;
		int tgid;

		if (spec->vcpu_tid[i] <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/status", (int)spec->vcpu_tid[i]);
		f = fopen(path, "re");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "Tgid: %d", &tgid) == 1) {
				first = tgid;
				break;
			}
		if (f)
			fclose(f);
	}
	return first;
}

int tv_guest_libvirt_resolve(struct tv_guest_spec *spec)
{
	struct virt_api v = { 0 };
	virConnectPtr conn;
	virDomainPtr dom;
	char *xml;
	int ret;

	if (!spec->libvirt[0])
		return 0;
	ret = virt_load(&v);
	if (ret)
		return ret;
	conn = v.connect_open("qemu:///system");
	if (!conn) {
		tv_err("Cannot connect to libvirt: uri=\"qemu:///system\": %s", v.last_error());
		return -ECONNREFUSED;
	}
	dom = v.lookup(conn, spec->libvirt);
	if (!dom) {
		tv_err("Cannot find libvirt domain: name=\"%s\": %s", spec->libvirt, v.last_error());
		v.connect_close(conn);
		return -ENOENT;
	}
	xml = v.xml_desc(dom, 0);
	if (xml)
		tv_guest_spec_from_libvirt_xml(spec, xml);
	free(xml);
	spec->qemu_pid = pid_from_qmp(&v, dom, spec);
	v.domain_free(dom);
	v.connect_close(conn);
	if (!spec->vsock_cid && !spec->serial[0]) {
		tv_err("Libvirt domain has no agent channel: name=\"%s\" (add <vsock model='virtio'> or a unix <channel> with target name '%s')",
		       spec->libvirt, TV_AGENT_SERIAL_NAME);
		return -ENOENT;
	}
	if (!spec->qemu_pid)
		tv_warn("No vCPU threads from QMP query-cpus-fast: name=\"%s\" (host events stay unattributed)",
			spec->libvirt);
	return 0;
}

#else /* !TV_HAVE_LIBVIRT */

int tv_guest_libvirt_resolve(struct tv_guest_spec *spec)
{
	if (!spec->libvirt[0])
		return 0;
	tv_err("Cannot resolve libvirt domain: name=\"%s\": this tracevisor was built without libvirt headers (use vsock:CID or serial:PATH)",
	       spec->libvirt);
	return -ENOTSUP;
}

#endif
