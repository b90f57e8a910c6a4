// SPDX-License-Identifier: LGPL-2.1
/*
 * The listener: one thread per traced process that connects to its
 * consumer (TRACEVISOR_UST_SOCK, default /run/tracevisor/ust.sock), hands
 * over the buffers' memfd and serves enable/disable/flush/list commands
 * (lib/ust/ust_abi.h, doc/ust-format.md).  A consumer that is not there yet is
 * retried every TV_UST_RETRY_MS, quietly; one that goes away leaves every
 * event disabled and the buffers as they are for the next one.
 * TRACEVISOR_UST_SOCK set to the empty string: no listener.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ust_internal.h"

static char ust_sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
/*
 * Posted by the listener once its first attempt to reach the consumer is
 * over (registered and told READY, or no consumer there).  The constructor waits for it,
 * as lttng-ust's does for its session daemon, so that a short program whose
 * consumer is already listening is registered before main() — else it could
 * emit everything and exit before the listener got its memfd across, and
 * the consumer would never know it existed.
 */
static sem_t ust_first_attempt;
/* Set and cleared by the thread that ran the registry's initialisation only. */
static int ust_listener_started;

static void ust_msg_init(struct tv_ust_msg *m, uint16_t type)
{
	memset(m, 0, sizeof(*m));
	m->magic = TV_UST_MAGIC;
	m->version = TV_UST_VERSION;
	m->type = type;
	m->pid = getpid();
}

static int ust_send(int fd, const struct tv_ust_msg *m, int pass_fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { (void *)m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (pass_fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		ctl.h.cmsg_level = SOL_SOCKET;
		ctl.h.cmsg_type = SCM_RIGHTS;
		ctl.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&ctl.h), &pass_fd, sizeof(int));
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)sizeof(*m) ? 0 : -1;
}

/* One message from the consumer; -1 on end, error or a message that is not ours. */
static int ust_recv(int fd, struct tv_ust_msg *m)
{
	ssize_t n;

	do
		n = recv(fd, m, sizeof(*m), 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(*m) || m->magic != TV_UST_MAGIC || m->version != TV_UST_VERSION) {
		if (n > 0)
			ust_log("Bad message from the consumer: socket=\"%s\", length=%zd", ust_sock_path, n);
		return -1;
	}
	m->arg[TV_UST_MSG_ARG_MAX - 1] = '\0';
	return 0;
}

static bool ust_env_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v;
}

static int ust_handshake(int fd)
{
	struct tv_ust_config cfg = { -1, -1, 0, 0, 0, 0 };
	struct tv_ust_msg m;
	int ret;

	ust_msg_init(&m, TV_UST_MSG_HELLO);
	prctl(PR_GET_NAME, m.arg, 0, 0, 0);
	if (ust_send(fd, &m, -1) < 0 || ust_recv(fd, &m) < 0)
		return -1;
	if (m.type != TV_UST_MSG_CONFIG) {
		ust_log("Consumer did not configure: socket=\"%s\", type=%u", ust_sock_path, m.type);
		return -1;
	}
	if (m.clock)
		cfg.clock = (int)m.clock - 1;
	/*
	 * The consumer's policy (record --ust-mode, --ust-buffer), unless this
	 * process's environment sets its own: TRACEVISOR_UST_MODE and the sizes
	 * are per-process overrides (ust_defaults reads them).  The clock is
	 * the session's, never overridden: its events must line up.
	 */
	if (m.mode && !ust_env_set(TV_UST_MODE_ENV))
		cfg.mode = (int)m.mode - 1;
	if (!ust_env_set(TV_UST_SUBBUF_ENV))
		cfg.subbuf_size = m.subbuf_size;
	if (!ust_env_set(TV_UST_NSUBBUF_ENV))
		cfg.nr_subbufs = m.nr_subbufs;
	ret = tv_ust_start(&cfg);
	if (ret < 0) {
		ust_msg_init(&m, TV_UST_MSG_REPLY);
		m.value = ret;
		ust_send(fd, &m, -1);
		return -1;
	}
	ust_msg_init(&m, TV_UST_MSG_REGISTER);
	return ust_send(fd, &m, tv_ust_memfd());
}

/* Listener thread only: let the constructor go on (once). */
static void ust_first_attempt_over(void)
{
	static int posted;

	if (!posted) {
		posted = 1;
		sem_post(&ust_first_attempt);
	}
}

static void ust_serve(int fd)
{
	struct tv_ust_msg m;

	while (ust_recv(fd, &m) == 0) {
		int64_t value;

		switch (m.type) {
		case TV_UST_MSG_ENABLE:
			value = tv_ust_enable(m.arg);
			break;
		case TV_UST_MSG_DISABLE:
			value = tv_ust_disable(m.arg);
			break;
		case TV_UST_MSG_FLUSH:
			value = tv_ust_flush(1000);
			break;
		case TV_UST_MSG_LIST:
			value = ust_registry_count();
			break;
		case TV_UST_MSG_READY:	/* no REPLY: consumers count the replies to their commands */
			ust_first_attempt_over();
			continue;
		default:
			value = -EINVAL;
		}
		ust_msg_init(&m, TV_UST_MSG_REPLY);
		m.value = value;
		if (ust_send(fd, &m, -1) < 0)
			break;
	}
}

static void *ust_listener(void *arg)
{
	struct timespec nap = { TV_UST_RETRY_MS / 1000, (TV_UST_RETRY_MS % 1000) * 1000000L };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);	/* the application's signals are not ours */
	memcpy(sa.sun_path, ust_sock_path, sizeof(sa.sun_path));
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

		int registered = fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
				 ust_handshake(fd) == 0;

		if (!registered)
			ust_first_attempt_over();	/* no consumer: main() need not wait */
		if (registered) {
			ust_serve(fd);
			ust_first_attempt_over();	/* a consumer that never said READY */
			ust_disable_all();	/* the session ended with its consumer */
		}
		if (fd >= 0)
			close(fd);
		nanosleep(&nap, NULL);
	}
	return NULL;
}

/* At most TRACEVISOR_UST_REGISTER_TIMEOUT ms (default 3000; 0: do not wait). */
static void ust_wait_first_attempt(void)
{
	const char *v = getenv(TV_UST_REGISTER_TIMEOUT_ENV);
	long ms = v && *v ? strtol(v, NULL, 10) : TV_UST_REGISTER_TIMEOUT_MS;
	struct timespec until;

	if (ms <= 0)
		return;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (sem_timedwait(&ust_first_attempt, &until) < 0 && errno == EINTR)
		;
}

void ust_listener_start(void)
{
	const char *path = getenv(TV_UST_SOCK_ENV);
	pthread_attr_t attr;
	pthread_t t;

	if (!path)
		path = TV_UST_SOCK_DEFAULT;
	if (!*path)
		return;
	if (strlen(path) >= sizeof(ust_sock_path)) {
		ust_log("Consumer socket path too long: %s=\"%s\"", TV_UST_SOCK_ENV, path);
		return;
	}
	strcpy(ust_sock_path, path);
	sem_init(&ust_first_attempt, 0, 0);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, ust_listener, NULL))
		ust_log("Cannot start the listener thread: socket=\"%s\"", ust_sock_path);
	else
		ust_listener_started = 1;
	pthread_attr_destroy(&attr);
}

/*
 * Called by the thread that started the listener once the registry's
 * one-time initialisation is over: waiting inside it would deadlock, the
 * listener's handshake (tv_ust_start) goes through that initialisation.
 */
void ust_listener_wait_registered(void)
{
	if (ust_listener_started) {
		ust_listener_started = 0;
		ust_wait_first_attempt();
	}
}
