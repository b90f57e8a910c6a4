// SPDX-License-Identifier: GPL-2.0
/*
 * `-s auto` in a Xen domU: the PV console channel named org.tracevisor.0.
 *
 * libxl writes a domU's console channels into its xenstore as
 * device/console/N (N >= 1; 0 is the primary console) with the channel's
 * `name`; the domU's kernel (drivers/tty/hvc/hvc_xen.c) gives them the hvc
 * terminals after hvc0 in the order it probes them, which is N's order:
 * console N is /dev/hvc(k + 1), k its rank among the channels.  The
 * xenstore is read over the xenbus device (/dev/xen/xenbus, else
 * /proc/xen/xenbus) with the xenstore wire protocol's XS_DIRECTORY and
 * XS_READ, relative paths being the domain's own (/local/domain/DOMID/):
 * no library needed in a minimal domU.  Nothing here is trusted further
 * than picking a device to open: a name that is not ours is skipped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <termios.h>
#include <unistd.h>

#include "agent.h"

/* The xenstore wire protocol (xen/include/public/io/xs_wire.h). */
struct xs_msg {
	uint32_t type, req_id, tx_id, len;
};
#define XS_DIRECTORY 1
#define XS_READ 2
#define XS_ERROR 16
#define XS_PAYLOAD_MAX 4096
#define XEN_MAX_CHANNELS 64	/* consoles of one domU looked at */
#define XEN_HVC_MAX 8		/* /dev/hvc0..7: the terminals of Linux's hvc driver */

/* The xenbus device; its node made from sysfs when /dev has none (no devtmpfs). */
static int xenbus_open(void)
{
	int fd = open("/dev/xen/xenbus", O_RDWR | O_CLOEXEC);
	char *mm;
	unsigned maj, min;

	if (fd >= 0)
		return fd;
	mm = read_file("/sys/class/misc/xenbus/dev", NULL);
	if (mm && sscanf(mm, "%u:%u", &maj, &min) == 2) {
		mkdir("/dev/xen", 0755);
		mknod("/dev/xen/xenbus", S_IFCHR | 0600, makedev(maj, min));
		fd = open("/dev/xen/xenbus", O_RDWR | O_CLOEXEC);
	}
	free(mm);
	return fd >= 0 ? fd : open("/proc/xen/xenbus", O_RDWR | O_CLOEXEC);
}

#define XS_TIMEOUT_MS 2000	/* a xenstore that does not answer: no channel, the agent goes on */

static int xs_io(int fd, void *buf, size_t len, int out)
{
	for (size_t done = 0; done < len;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		/* the xenbus device says POLLIN only (never POLLOUT): writes go straight */
		if (!out && poll(&pfd, 1, XS_TIMEOUT_MS) <= 0)
			return -1;
		n = out ? write(fd, (char *)buf + done, len - done) : read(fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* One request on @path; the answer (NUL-terminated, at most @size - 1 bytes) in @out: its length or -1. */
static long xs_request(int fd, uint32_t type, const char *path, char *out, size_t size)
{
	static uint32_t req;
	struct xs_msg m = { type, ++req, 0, (uint32_t)strlen(path) + 1 };
	char buf[XS_PAYLOAD_MAX];

	if (m.len > sizeof(buf) || xs_io(fd, &m, sizeof(m), 1) || xs_io(fd, (char *)path, m.len, 1) ||
	    xs_io(fd, &m, sizeof(m), 0) || m.len > sizeof(buf) || xs_io(fd, buf, m.len, 0) ||
	    m.type == XS_ERROR || !size)
		return -1;
	if (m.len >= size)
		m.len = (uint32_t)size - 1;
	memcpy(out, buf, m.len);
	out[m.len] = '\0';
	return m.len;
}

static int id_cmp(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return x < y ? -1 : x > y;
}

/* The channel consoles' numbers (N >= 1), ascending, into @ids: how many. */
static size_t xen_channel_ids(int fd, long *ids)
{
	char list[XS_PAYLOAD_MAX];
	long len = xs_request(fd, XS_DIRECTORY, "device/console", list, sizeof(list));
	size_t n = 0;

	/* the answer: NUL-separated names */
	for (long off = 0; len > 0 && off < len && n < XEN_MAX_CHANNELS; off += (long)strlen(list + off) + 1) {
		char *end;
		long id = strtol(list + off, &end, 10);

		if (end != list + off && !*end && id > 0)
			ids[n++] = id;
	}
	qsort(ids, n, sizeof(*ids), id_cmp);
	return n;
}

/* /dev/hvcN as a raw tty (its node made from sysfs when missing). */
static int hvc_open(int n)
{
	char dev[32], sys[64], *mm;
	unsigned maj, min;
	struct termios tio;
	int fd;

	snprintf(dev, sizeof(dev), "/dev/hvc%d", n);
	snprintf(sys, sizeof(sys), "/sys/class/tty/hvc%d/dev", n);
	mm = read_file(sys, NULL);
	if (access(dev, F_OK) && mm && sscanf(mm, "%u:%u", &maj, &min) == 2)
		mknod(dev, S_IFCHR | 0600, makedev(maj, min));
	free(mm);
	fd = open(dev, O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		say("Cannot open the Xen console channel: path=\"%s\", errno=%d", dev, errno);
		return -1;
	}
	/* a console tty must pass the protocol's bytes untouched */
	if (tcgetattr(fd, &tio) == 0) {
		cfmakeraw(&tio);
		tcsetattr(fd, TCSANOW, &tio);
	}
	if (verbose)
		say("Listening on Xen console channel %s", dev);
	return fd;
}

int open_xen_channel(const char *const *names, size_t nr_names)
{
	long ids[XEN_MAX_CHANNELS];
	int fd = xenbus_open(), hvc = -1;
	size_t n;

	if (fd < 0)
		return -1;	/* not a Xen domU (or no xenbus device): nothing to find */
	n = xen_channel_ids(fd, ids);
	for (size_t k = 0; k < n && hvc < 0; k++) {
		char path[64], name[128];

		snprintf(path, sizeof(path), "device/console/%ld/name", ids[k]);
		if (xs_request(fd, XS_READ, path, name, sizeof(name)) < 0)
			continue;
		for (size_t i = 0; i < nr_names; i++)
			if (!strcmp(name, names[i]))
				hvc = (int)k + 1;	/* hvc0 is the primary console */
	}
	close(fd);
	if (hvc < 0 || hvc >= XEN_HVC_MAX)
		return -1;
	return hvc_open(hvc);
}
