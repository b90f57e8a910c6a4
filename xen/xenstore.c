// SPDX-License-Identifier: LGPL-2.1
/*
 * A Xen domain by name, as xl and xenconsoled left it in xenstore: its
 * domid (/local/domain/ID/name), its vCPUs (/local/domain/ID/cpu/N) and
 * the dom0 end of its agent channel: the PV console channel whose
 * frontend name is org.tracevisor.0 (device/console/DEVID/name), whose
 * backend (DEVID/backend) holds connection = "socket" and the unix
 * socket's path (libxl writes them; QEMU listens there).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xenstore.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "proto.h"
#include "xen_internal.h"

/* The value at @path, or NULL (errno set); the caller frees it. */
static char *xs_get(struct xs_handle *xs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static char *xs_get(struct xs_handle *xs, const char *fmt, ...)
{
	char path[256];
	unsigned int len;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return xs_read(xs, XBT_NULL, path, &len);
}

static int find_domid(struct xs_handle *xs, const char *name, unsigned int *domid)
{
	unsigned int n = 0;
	char **ids = xs_directory(xs, XBT_NULL, "/local/domain", &n);
	int ret = -ENOENT;

	if (!ids)
		return -errno;
	for (unsigned int i = 0; i < n && ret; i++) {
		char *v = xs_get(xs, "/local/domain/%s/name", ids[i]);

		if (v && !strcmp(v, name)) {
			*domid = (unsigned int)strtoul(ids[i], NULL, 10);
			ret = 0;
		}
		free(v);
	}
	free(ids);
	return ret;
}

/* The unix socket of the domain's org.tracevisor.0 console channel. */
static int find_channel(struct xs_handle *xs, unsigned int domid, char *out, size_t size)
{
	unsigned int n = 0;
	char **devs, dir[64];
	int ret = -ENOENT;

	snprintf(dir, sizeof(dir), "/local/domain/%u/device/console", domid);
	devs = xs_directory(xs, XBT_NULL, dir, &n);
	if (!devs)
		return -ENOENT;
	for (unsigned int i = 0; i < n && ret; i++) {
		char *name = xs_get(xs, "%s/%s/name", dir, devs[i]);
		char *back = xs_get(xs, "%s/%s/backend", dir, devs[i]);
		char *conn = NULL, *path = NULL;

		if (name && back && !strcmp(name, TV_AGENT_SERIAL_NAME)) {
			conn = xs_get(xs, "%s/connection", back);
			path = xs_get(xs, "%s/path", back);
			if (!conn || strcmp(conn, "socket") || !path || !*path)
				ret = -EPROTONOSUPPORT;
			else if (strlen(path) >= size)
				ret = -ENAMETOOLONG;
			else {
				snprintf(out, size, "%s", path);
				ret = 0;
			}
		}
		free(name);
		free(back);
		free(conn);
		free(path);
	}
	free(devs);
	return ret;
}

static unsigned int count_vcpus(struct xs_handle *xs, unsigned int domid)
{
	char dir[64];
	unsigned int n = 0;
	char **cpus;

	snprintf(dir, sizeof(dir), "/local/domain/%u/cpu", domid);
	cpus = xs_directory(xs, XBT_NULL, dir, &n);
	free(cpus);
	return cpus ? n : 0;
}

int tv_xen_domain_find(const char *name, struct tv_xen_domain *dom)
{
	struct xs_handle *xs;
	int ret;

	memset(dom, 0, sizeof(*dom));
	xs = xs_open(0);
	if (!xs) {
		ret = -errno;
		tv_err("Cannot connect to xenstore: errno=%d (%s) (is this dom0, with xenstored running?)",
		       -ret, strerror(-ret));
		return ret;
	}
	ret = find_domid(xs, name, &dom->domid);
	if (ret) {
		if (ret == -ENOENT)
			tv_err("Cannot find Xen domain: name=\"%s\" (no /local/domain/*/name in xenstore says so; see xl list)",
			       name);
		else
			tv_err("Cannot list Xen domains in xenstore: path=\"/local/domain\", errno=%d (%s)",
			       -ret, strerror(-ret));
		goto out;
	}
	dom->nr_vcpus = count_vcpus(xs, dom->domid);
	ret = find_channel(xs, dom->domid, dom->channel, sizeof(dom->channel));
	if (ret == -ENOENT)
		tv_err("Xen domain has no agent channel: name=\"%s\", domid=%u (add channel = [ \"name=%s,connection=socket,path=...\" ] to its xl config)",
		       name, dom->domid, TV_AGENT_SERIAL_NAME);
	else if (ret == -EPROTONOSUPPORT)
		tv_err("Xen domain's agent channel is not a unix socket: name=\"%s\", domid=%u (connection=socket in its xl channel)",
		       name, dom->domid);
	else if (ret)
		tv_err("Xen domain's agent channel path is too long: name=\"%s\", domid=%u", name, dom->domid);
out:
	xs_close(xs);
	return ret;
}

/*
 * Domain @domid's key @key (/local/domain/ID/KEY, not empty) after
 * @prefix, into @buf.  Return: 0, -E2BIG (cut to @size), -ENOENT (no
 * such key, or empty), -EINVAL (not starting with @prefix), -errno of
 * xenstore.
 */
static int domain_key(unsigned int domid, const char *key, const char *prefix, char *buf, size_t size)
{
	struct xs_handle *xs = xs_open(0);
	size_t skip = strlen(prefix);
	char *v;
	int ret = 0;

	if (!xs)
		return -errno;
	v = xs_get(xs, "/local/domain/%u/%s", domid, key);
	if (!v || !v[0])
		ret = v ? -ENOENT : -errno;
	else if (strncmp(v, prefix, skip))
		ret = -EINVAL;
	else if ((size_t)snprintf(buf, size, "%s", v + skip) >= size)
		ret = -E2BIG;
	free(v);
	xs_close(xs);
	return ret;
}

int tv_xen_domain_name(unsigned int domid, char *buf, size_t size)
{
	int ret = domain_key(domid, "name", "", buf, size);

	return ret == -E2BIG ? 0 : ret;	/* a long name is cut */
}

int tv_xen_domain_uuid(unsigned int domid, char *buf, size_t size)
{
	/* libxl writes "/vm/UUID" there (xen-init-dom0 too, for dom0) */
	return domain_key(domid, "vm", "/vm/", buf, size);
}

int tv_xen_domain_id(const char *name, unsigned int *domid)
{
	struct xs_handle *xs = xs_open(0);
	int ret;

	if (!xs)
		return -errno;
	ret = find_domid(xs, name, domid);
	xs_close(xs);
	return ret;
}
