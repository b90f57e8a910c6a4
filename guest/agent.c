// SPDX-License-Identifier: GPL-2.0
/*
 * tracevisor-agent: the guest side of host + guest recording.
 *
 * Runs as root in a Linux guest with nothing but libc (built static).
 * Waits for the host on AF_VSOCK (port 7476) and on the virtio-serial
 * port named org.tracevisor.0 (or tracevisor.0); on START it creates its
 * own tracefs instance, enables the requested events and streams the raw
 * per-CPU sub-buffers, header and format files to the host, answers sync
 * probes, and on STOP drains everything and reports its losses
 * (doc/agent-protocol.md, doc/sync-probes.md).
 *
 * The guest workload is never blocked: only our reader threads wait on the
 * channel; while they wait, the instance's ring buffer overwrites its
 * oldest pages, and the kernel counts those events in per_cpu/cpuN/stats.
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

int verbose;
int no_hcalls;

void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("tracevisor-agent: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: tracevisor-agent [-p PORT] [-s PATH|auto|none] [-1] [-H] [-v]\n\n"
		"Guest agent of tracevisor: records this guest's kernel events on the host's\n"
		"command (tracevisor record --guest ...).\n\n"
		"  -p, --port PORT     AF_VSOCK port to listen on (default %d; 0: no vsock)\n"
		"  -s, --serial PATH   virtio-serial port or console device (default auto: the\n"
		"                      virtio-serial port named %s or tracevisor.0,\n"
		"                      else in a Xen domU the PV console channel of that name,\n"
		"                      found in its xenstore; none: no serial)\n"
		"  -1, --once          exit after one recording session\n"
		"  -H, --no-hypercalls answer hypercall probe requests without hypercalls\n"
		"  -v, --verbose       say more on stderr\n",
		TV_AGENT_VSOCK_PORT, TV_AGENT_SERIAL_NAME);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "serial", required_argument, NULL, 's' },
		{ "once", no_argument, NULL, '1' },
		{ "no-hypercalls", no_argument, NULL, 'H' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned port = TV_AGENT_VSOCK_PORT;
	const char *serial = "auto";
	int once = 0, c, lfd = -1, sfd = -1;

	while ((c = getopt_long(argc, argv, "p:s:1Hvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': port = (unsigned)strtoul(optarg, NULL, 10); break;
		case 's': serial = optarg; break;
		case '1': once = 1; break;
		case 'H': no_hcalls = 1; break;
		case 'v': verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (port)
		lfd = listen_vsock(port);
	if (strcmp(serial, "none"))
		sfd = open_serial(serial);
	if (lfd < 0 && sfd < 0) {
		say("Nothing to listen on: no vsock and no virtio-serial port");
		return 1;
	}
	if (verbose)
		say("Ready: vsock port %u%s, serial %s", port, lfd < 0 ? " (unavailable)" : "",
		    sfd < 0 ? "none" : "yes");
	for (;;) {
		struct pollfd pfd[2] = { { .fd = lfd, .events = POLLIN },
					 { .fd = sfd, .events = POLLIN } };
		int r = poll(pfd, 2, 1000);

		if (r < 0 && errno != EINTR)
			return 1;
		if (r > 0 && (pfd[0].revents & POLLIN)) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

			if (fd >= 0) {
				run_session(fd);
				close(fd);
				if (once)
					return 0;
			}
		}
		/* virtio-serial says POLLIN|POLLHUP while no host is connected. */
		if (r > 0 && (pfd[1].revents & POLLIN) && !(pfd[1].revents & POLLHUP)) {
			run_session(sfd);
			if (once)
				return 0;
		} else if (r > 0 && (pfd[1].revents & (POLLHUP | POLLERR))) {
			/* virtio-serial: no host on the other end yet. */
			usleep(200000);
		}
	}
}
