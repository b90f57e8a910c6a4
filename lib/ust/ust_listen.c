// SPDX-License-Identifier: LGPL-2.1
/*
 * The registration socket, consumer's side: see ust_listen.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "ust_consumer.h"
#include "ust_listen.h"

#define UST_MAX_SHM (1ull << 32)
#define UST_MAX_FDS 4

static int ust_pow2_in(uint32_t n, uint32_t lo, uint32_t hi)
{
	return !n || (!(n & (n - 1)) && n >= lo && n <= hi);
}

int tv_ust_policy_parse(const char *mode, uint32_t subbuf_size, uint32_t nr_subbufs,
			struct tv_ust_policy *out, char *why, size_t why_size)
{
	memset(out, 0, sizeof(*out));
	for (uint32_t m = 0; mode && *mode && m <= TV_UST_MODE_OVERWRITE; m++)
		if (!strcmp(mode, tv_ust_mode_name(m)))
			out->mode = m + 1;
	if (mode && *mode && !out->mode) {
		snprintf(why, why_size, "mode \"%.64s\" (discard, blocking or overwrite)", mode);
		return -EINVAL;
	}
	/* the ranges guest/ust/ust_core.c accepts: a process refuses the rest */
	if (!ust_pow2_in(subbuf_size, 4096, 1u << 20) || !ust_pow2_in(nr_subbufs, 2, 4096)) {
		snprintf(why, why_size,
			 "sub-buffers of %u bytes, %u of them (0: the default; a power of two 4K..1M bytes, a power of two 2..4096 of them)",
			 subbuf_size, nr_subbufs);
		out->mode = 0;
		return -EINVAL;
	}
	out->subbuf_size = subbuf_size;
	out->nr_subbufs = nr_subbufs;
	return 0;
}

void tv_ust_conn_set_policy(struct tv_ust_conn *conn, const struct tv_ust_policy *pol)
{
	conn->cfg_mode = pol->mode;
	conn->cfg_subbuf_size = pol->subbuf_size;
	conn->cfg_nr_subbufs = pol->nr_subbufs;
}

int tv_ust_listen_open(const char *path, int *out)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)], *slash;
	int fd, probe;

	*out = -1;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		mkdir(dir, 0755);
	}
	/* someone listening already is another consumer: do not steal its processes */
	probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe >= 0 && !connect(probe, (struct sockaddr *)&sa, sizeof(sa))) {
		close(probe);
		return -EADDRINUSE;
	}
	if (probe >= 0)
		close(probe);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 64)) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		return -err;
	}
	/* any user's process may register; what it sends is checked */
	chmod(path, 0777);
	*out = fd;
	return 0;
}

int tv_ust_conn_accept(int listen_fd, struct tv_ust_conn *conn)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return -errno;
	memset(conn, 0, sizeof(*conn));
	conn->fd = fd;
	return 0;
}

int tv_ust_conn_send(struct tv_ust_conn *conn, uint16_t type, const char *arg, uint32_t clock)
{
	struct tv_ust_msg m = { .magic = TV_UST_MAGIC, .version = TV_UST_VERSION, .type = type };

	if (type == TV_UST_MSG_CONFIG) {
		m.clock = clock + 1;	/* 0 on the wire: the process's own default */
		m.mode = conn->cfg_mode;
		m.subbuf_size = conn->cfg_subbuf_size;
		m.nr_subbufs = conn->cfg_nr_subbufs;
	}
	if (arg)
		snprintf(m.arg, sizeof(m.arg), "%s", arg);
	if (conn->fd < 0 || send(conn->fd, &m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT) != sizeof(m))
		return -EIO;
	return 0;
}

/* memfd: sealed against shrinking, so a mapped page can never vanish (SIGBUS). */
static int conn_map(struct tv_ust_conn *conn, int memfd, char *why, size_t why_size)
{
	struct stat st;
	int seals;
	void *m;

	if (fstat(memfd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(struct tv_ust_shm_header) ||
	    (uint64_t)st.st_size > UST_MAX_SHM) {
		snprintf(why, why_size, "the registered fd is not a memfd of a sensible size");
		return -EBADMSG;
	}
	fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK);
	seals = fcntl(memfd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK)) {
		snprintf(why, why_size, "its memfd cannot be sealed against shrinking (create it with MFD_ALLOW_SEALING)");
		return -EBADMSG;
	}
	m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (m == MAP_FAILED) {
		int err = errno;

		snprintf(why, why_size, "its memfd cannot be mapped");
		return -err;
	}
	conn->map = m;
	conn->map_size = (size_t)st.st_size;
	return 0;
}

/* HELLO's pid and comm: the comm is said in key=value text, so printable and without '='. */
static void conn_hello(struct tv_ust_conn *conn, struct tv_ust_msg *m)
{
	conn->pid = m->pid > 0 ? m->pid : -1;
	m->arg[sizeof(m->arg) - 1] = '\0';
	memset(conn->comm, 0, sizeof(conn->comm));
	for (size_t i = 0; i < sizeof(conn->comm) - 1 && m->arg[i]; i++)
		conn->comm[i] = m->arg[i] > ' ' && m->arg[i] < 0x7f && m->arg[i] != '=' ? m->arg[i] : '_';
}

int tv_ust_conn_receive(struct tv_ust_conn *conn, uint32_t clock, char *why, size_t why_size)
{
	char cbuf[CMSG_SPACE(sizeof(int) * UST_MAX_FDS)];
	struct tv_ust_msg m;
	struct iovec iov = { &m, sizeof(m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	int fds[UST_MAX_FDS], nfds = 0, ret;
	ssize_t n;

	if (conn->fd < 0)
		return -EPIPE;
	n = recvmsg(conn->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	for (cm = CMSG_FIRSTHDR(&mh); n > 0 && cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int) && nfds < UST_MAX_FDS; i++)
				memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
	if (n <= 0) {
		ret = -EPIPE;
	} else if (n != sizeof(m) || m.magic != TV_UST_MAGIC || m.version != TV_UST_VERSION ||
		   (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		snprintf(why, why_size, "a registration message of the wrong size, magic or version");
		ret = -EBADMSG;
	} else if (m.type == TV_UST_MSG_HELLO && !conn->pid) {
		conn_hello(conn, &m);
		tv_ust_conn_send(conn, TV_UST_MSG_CONFIG, NULL, clock);
		ret = TV_UST_MSG_HELLO;
	} else if (m.type == TV_UST_MSG_REGISTER && !conn->map && nfds == 1 && conn->pid > 0) {
		ret = conn_map(conn, fds[0], why, why_size);
		if (!ret)
			ret = TV_UST_MSG_REGISTER;
	} else if (m.type == TV_UST_MSG_REPLY) {
		conn->replies++;
		ret = TV_UST_MSG_REPLY;
	} else {
		snprintf(why, why_size, "an unexpected registration message");
		ret = -EBADMSG;
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	return ret;
}

int tv_ust_conn_rules(struct tv_ust_conn *conn, const char *const *globs, size_t nr_globs)
{
	int ret = 0;

	for (size_t i = 0; i < nr_globs; i++)
		ret |= tv_ust_conn_send(conn, TV_UST_MSG_ENABLE, globs[i], 0);
	ret |= tv_ust_conn_send(conn, TV_UST_MSG_READY, NULL, 0);
	return ret ? -EIO : 0;
}

int tv_ust_conn_quiesce(struct tv_ust_conn *conn)
{
	int ret;

	conn->replies = 0;
	/* both, whatever the first gave: FLUSH alone still ends the reservations in flight */
	ret = tv_ust_conn_send(conn, TV_UST_MSG_DISABLE, "*", 0);
	return tv_ust_conn_send(conn, TV_UST_MSG_FLUSH, NULL, 0) ? -EIO : ret;
}

void tv_ust_conn_close(struct tv_ust_conn *conn)
{
	if (conn->fd >= 0)
		close(conn->fd);
	conn->fd = -1;
}

void tv_ust_conn_release(struct tv_ust_conn *conn)
{
	tv_ust_conn_close(conn);
	if (conn->map)
		munmap(conn->map, conn->map_size);
	conn->map = NULL;
}
