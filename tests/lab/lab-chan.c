// SPDX-License-Identifier: GPL-2.0
/* lab-chan: move bytes over the lab's host<->guest channels (busybox has no
 * AF_VSOCK nor unix-socket client). Built statically into every lab image
 * as /usr/bin/lab-chan.
 *
 *   lab-chan vsock-listen PORT     accept one vsock connection (any CID),
 *                                  copy it to stdout until EOF
 *   lab-chan vsock-send CID PORT   connect to CID:PORT, copy stdin to it
 *   lab-chan unix-read PATH        connect to a unix socket (e.g. the L1 end
 *                                  of an L2 virtio-serial port), retrying
 *                                  for 30 s, copy it to stdout until EOF
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

static int copy(int from, int to)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(from, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("lab-chan: read");
			return 1;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(to, buf + off, n - off);

			if (w < 0) {
				perror("lab-chan: write");
				return 1;
			}
			off += w;
		}
	}
	return 0;
}

static int vsock_listen(unsigned port)
{
	struct sockaddr_vm a = { .svm_family = AF_VSOCK,
				 .svm_cid = VMADDR_CID_ANY, .svm_port = port };
	int s = socket(AF_VSOCK, SOCK_STREAM, 0), c;

	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 1)) {
		perror("lab-chan: vsock listen");
		return 1;
	}
	c = accept(s, NULL, NULL);
	if (c < 0) {
		perror("lab-chan: accept");
		return 1;
	}
	return copy(c, 1);
}

static int vsock_send(unsigned cid, unsigned port)
{
	struct sockaddr_vm a = { .svm_family = AF_VSOCK,
				 .svm_cid = cid, .svm_port = port };
	int s = socket(AF_VSOCK, SOCK_STREAM, 0);

	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a))) {
		perror("lab-chan: vsock connect");
		return 1;
	}
	return copy(0, s) || shutdown(s, SHUT_WR);
}

static int unix_read(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s = -1;

	strncpy(a.sun_path, path, sizeof(a.sun_path) - 1);
	for (int i = 0; i < 300; i++) {
		s = socket(AF_UNIX, SOCK_STREAM, 0);
		if (!connect(s, (struct sockaddr *)&a, sizeof(a)))
			return copy(s, 1);
		close(s);
		usleep(100000);
	}
	perror("lab-chan: unix connect");
	return 1;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "vsock-listen"))
		return vsock_listen(strtoul(argv[2], NULL, 0));
	if (argc == 4 && !strcmp(argv[1], "vsock-send"))
		return vsock_send(strtoul(argv[2], NULL, 0), strtoul(argv[3], NULL, 0));
	if (argc == 3 && !strcmp(argv[1], "unix-read"))
		return unix_read(argv[2]);
	fprintf(stderr, "usage: lab-chan vsock-listen PORT | vsock-send CID PORT | unix-read PATH\n");
	return 2;
}
