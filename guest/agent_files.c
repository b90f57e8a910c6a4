// SPDX-License-Identifier: GPL-2.0
/*
 * Files sent to the host: header_page, the event formats and the guest's
 * meta (doc/agent-protocol.md).
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

int send_file(struct session *s, const char *src, const char *name)
{
	return send_file_as(s, TV_MSG_FILE, 0, src, name);
}

int send_file_as(struct session *s, uint16_t type, uint32_t arg, const char *src, const char *name)
{
	size_t len, nlen = strlen(name);
	char *data = read_file(src, &len);
	unsigned char *msg;
	int ret;

	if (!data)
		return -errno;
	if (len + nlen + 2 > TV_PROTO_MAX_PAYLOAD)
		len = TV_PROTO_MAX_PAYLOAD - nlen - 2;	/* saved_cmdlines can be big */
	msg = malloc(len + nlen + 2);
	if (!msg) {
		free(data);
		return -ENOMEM;
	}
	msg[0] = (unsigned char)nlen;
	msg[1] = (unsigned char)(nlen >> 8);
	memcpy(msg + 2, name, nlen);
	memcpy(msg + 2 + nlen, data, len);
	ret = send_frame(s, type, arg, msg, len + nlen + 2);
	free(msg);
	free(data);
	return ret;
}

int send_formats(struct session *s)
{
	char src[400], name[200];
	int ret = 0;

	snprintf(src, sizeof(src), "%s/events/header_page", s->tracing);
	ret = send_file(s, src, "header_page");
	snprintf(src, sizeof(src), "%s/events/header_event", s->tracing);
	if (!ret)
		ret = send_file(s, src, "header_event");
	for (int i = 0; i < s->nr_events && !ret; i++) {
		snprintf(src, sizeof(src), "%s/events/%s/format", s->tracing, s->events[i]);
		/* our probe group is "probes" in the session, as on the host */
		if (!strncmp(s->events[i], "tvprobe_", 8) && strchr(s->events[i], '/'))
			snprintf(name, sizeof(name), "events/probes/%s/format", strchr(s->events[i], '/') + 1);
		else
			snprintf(name, sizeof(name), "events/%s/format", s->events[i]);
		ret = send_file(s, src, name);
	}
	/* The marker formats decode the sync probes. */
	snprintf(src, sizeof(src), "%s/events/ftrace/raw_data/format", s->tracing);
	if (!ret && access(src, R_OK) == 0)
		ret = send_file(s, src, "events/ftrace/raw_data/format");
	snprintf(src, sizeof(src), "%s/events/ftrace/print/format", s->tracing);
	if (!ret && access(src, R_OK) == 0)
		ret = send_file(s, src, "events/ftrace/print/format");
	return ret;
}

int send_meta(struct session *s)
{
	char text[4096], events[2048] = "";
	struct utsname uts;
	size_t off = 0;

	uname(&uts);
	for (int i = 0; i < s->nr_events; i++) {
		char *slash = strchr(s->events[i], '/');

		off += (size_t)snprintf(events + off, sizeof(events) - off, "%s%.*s:%s",
					i ? "," : "", (int)(slash - s->events[i]), s->events[i],
					slash + 1);
		if (off >= sizeof(events))
			break;
	}
	snprintf(text, sizeof(text),
		 "kernel_release=%s\nhostname=%s\nmachine=%s\nclock=%s\nncpus=%d\n"
		 "subbuf_size=%zu\nlong_size=%zu\nendian=little\nbuffer_kb=%u\n"
		 "events=%s\nfilters=%d\nagent_version=" AGENT_VERSION "\n",
		 uts.release, uts.nodename, uts.machine, s->clock, s->ncpus, s->subbuf_size,
		 sizeof(long), s->buffer_kb, events, s->nr_filters);
	return send_text(s, TV_MSG_META, text);
}
