// SPDX-License-Identifier: GPL-2.0
/*
 * Where the host reaches the agent: an AF_VSOCK listener and the
 * virtio-serial port found by name.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <linux/vm_sockets.h>


#include "agent.h"

int listen_vsock(unsigned port)
{
	struct sockaddr_vm addr = {
		.svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY, .svm_port = port,
	};
	int fd = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) || listen(fd, 4)) {
		say("No vsock listener: port=%u, errno=%d", port, errno);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/*
 * /dev/vportNpM whose /sys/class/virtio-ports name is one of ours, else
 * the Xen PV console channel of that name (agent_xenchan.c).
 */
int open_serial(const char *want)
{
	static const char *const names[] = { TV_AGENT_SERIAL_NAME, "tracevisor.0" };
	char path[320], dev[320], *name, *mm;
	struct dirent *de;
	DIR *d;
	int fd = -1;

	if (want && strcmp(want, "auto")) {
		fd = open(want, O_RDWR | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (fd >= 0 && isatty(fd)) {
			struct termios tio;

			/* A pty (tests, emulated consoles) must pass bytes untouched. */
			if (tcgetattr(fd, &tio) == 0) {
				cfmakeraw(&tio);
				tcsetattr(fd, TCSANOW, &tio);
			}
		}
		if (fd < 0)
			say("Cannot open serial port: path=\"%s\", errno=%d", want, errno);
		return fd;
	}
	d = opendir("/sys/class/virtio-ports");
	if (!d)	/* no virtio: a Xen domU's console channel, if any */
		return open_xen_channel(names, sizeof(names) / sizeof(names[0]));
	while (fd < 0 && (de = readdir(d))) {
		int ours = 0;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", de->d_name);
		name = read_file(path, NULL);
		for (size_t i = 0; name && i < 2; i++)
			ours |= !strncmp(name, names[i], strlen(names[i])) &&
				(name[strlen(names[i])] == '\n' || !name[strlen(names[i])]);
		free(name);
		if (!ours)
			continue;
		snprintf(dev, sizeof(dev), "/dev/%s", de->d_name);
		snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/dev", de->d_name);
		mm = read_file(path, NULL);
		/* No devtmpfs/udev: make the node from sysfs. */
		if (access(dev, F_OK) && mm) {
			unsigned maj, min;

			if (sscanf(mm, "%u:%u", &maj, &min) == 2)
				mknod(dev, S_IFCHR | 0600, makedev(maj, min));
		}
		free(mm);
		fd = open(dev, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			say("Cannot open virtio-serial port: path=\"%s\", errno=%d", dev, errno);
		else if (verbose)
			say("Listening on virtio-serial port %s", dev);
	}
	closedir(d);
	return fd >= 0 ? fd : open_xen_channel(names, sizeof(names) / sizeof(names[0]));
}
