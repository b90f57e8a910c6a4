// SPDX-License-Identifier: LGPL-2.1
/*
 * tracevisor serve's HTTP server: enough HTTP/1.1 for a scraper (GET,
 * one request per connection, Connection: close), in ~200 lines of C
 * rather than a library: the exporter answers one scrape at a time on
 * one thread, Prometheus scrapes every few seconds, and a small server
 * whose every path is here is easier to bound than a general one (no
 * threads, no keep-alive, no request body).  Bounds: a request is read
 * whole within 5 s and 8 KiB or dropped; a client that does not read its
 * answer within 5 s is dropped too.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>

#include "tv_internal.h"
#include "serve.h"

#define REQ_MAX 8192
#define IO_TIMEOUT_MS 5000

struct serve_http {
	int fd;
};

/* "HOST:PORT" or "[V6]:PORT" split into @host (size @hsize) and @port. */
static int split_addr(const char *addr, char *host, size_t hsize, const char **port)
{
	const char *colon = strrchr(addr, ':');
	size_t n;

	if (!colon || !colon[1])
		return -EINVAL;
	n = (size_t)(colon - addr);
	if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']') {
		addr++;
		n -= 2;
	}
	if (n >= hsize)
		return -EINVAL;
	memcpy(host, addr, n);
	host[n] = '\0';
	*port = colon + 1;
	return 0;
}

int serve_http_open(const char *addr, struct serve_http **out)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	struct serve_http *h = NULL;
	char host[256];
	const char *port;
	int one = 1, fd = -1, ret, gai;

	*out = NULL;
	if (split_addr(addr, host, sizeof(host), &port)) {
		tv_err("Invalid listen address: \"%s\" (HOST:PORT or [IPV6]:PORT)", addr);
		return -EINVAL;
	}
	gai = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (gai) {
		tv_err("Invalid listen address: \"%s\" (%s)", addr, gai_strerror(gai));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 16)) {
		ret = -errno;
		tv_err("Cannot listen on %s: errno=%d (%s)", addr, -ret, strerror(-ret));
		goto out;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		ret = -ENOMEM;
		goto out;
	}
	h->fd = fd;
	fd = -1;
	*out = h;
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return ret;
}

int serve_http_fd(const struct serve_http *h)
{
	return h->fd;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wait until @fd is ready for @events before @deadline (ms): 0, or -ETIMEDOUT. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	uint64_t now = now_ms();

	if (now >= deadline || poll(&p, 1, (int)(deadline - now)) <= 0)
		return -ETIMEDOUT;
	return 0;
}

/* The request's head (through the blank line) into @buf: its length, or -1. */
static ssize_t read_head(int fd, char *buf, size_t size, uint64_t deadline)
{
	size_t len = 0;

	while (len < size - 1) {
		ssize_t n;

		if (wait_fd(fd, POLLIN, deadline))
			return -1;
		n = recv(fd, buf + len, size - 1 - len, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			return -1;
		len += (size_t)n;
		buf[len] = '\0';
		if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
			return (ssize_t)len;
	}
	return -1;
}

static void send_all(int fd, const char *p, size_t n, uint64_t deadline)
{
	while (n) {
		ssize_t w;

		if (wait_fd(fd, POLLOUT, deadline))
			return;
		w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void respond(int fd, const char *status, const char *type, const char *body, size_t len,
		    uint64_t deadline)
{
	char head[512];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			 status, type, len);

	send_all(fd, head, (size_t)n, deadline);
	send_all(fd, body, len, deadline);
}

/* Does the head's Accept header ask for OpenMetrics? */
static bool wants_openmetrics(const char *head)
{
	for (const char *l = strchr(head, '\n'); l; l = strchr(l + 1, '\n'))
		if (!strncasecmp(l + 1, "accept:", 7)) {
			size_t n = strcspn(l + 1, "\r\n");
			char *line = strndup(l + 1, n);
			bool om = line && strstr(line, "application/openmetrics-text");

			free(line);
			return om;
		}
	return false;
}

int serve_http_answer(struct serve_http *h, int (*render)(void *ctx, bool openmetrics, struct tv_strbuf *body),
		      void *ctx)
{
	static const char index_page[] =
		"tracevisor serve: VM exit metrics on /metrics (tracevisor-serve(8))\n";
	struct tv_strbuf body = { 0 };
	char head[REQ_MAX], method[16], path[256];
	uint64_t deadline = now_ms() + IO_TIMEOUT_MS;
	int fd = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC), ret = 0;
	bool om;

	if (fd < 0)
		return 0;	/* the client went away meanwhile */
	if (read_head(fd, head, sizeof(head), deadline) <= 0 ||
	    sscanf(head, "%15s %255s HTTP/", method, path) != 2) {
		respond(fd, "400 Bad Request", "text/plain", "bad request\n", 12, deadline);
		goto out;
	}
	if (strcmp(method, "GET")) {
		respond(fd, "405 Method Not Allowed", "text/plain", "GET only\n", 9, deadline);
		goto out;
	}
	path[strcspn(path, "?")] = '\0';
	if (!strcmp(path, "/")) {
		respond(fd, "200 OK", "text/plain; charset=utf-8", index_page, sizeof(index_page) - 1, deadline);
		goto out;
	}
	if (strcmp(path, "/metrics")) {
		respond(fd, "404 Not Found", "text/plain", "not found\n", 10, deadline);
		goto out;
	}
	om = wants_openmetrics(head);
	ret = render(ctx, om, &body);
	if (ret) {
		respond(fd, "500 Internal Server Error", "text/plain", "out of memory\n", 14, deadline);
		goto out;
	}
	respond(fd, "200 OK", om ? "application/openmetrics-text; version=1.0.0; charset=utf-8" :
		"text/plain; version=0.0.4; charset=utf-8", body.data ? body.data : "", body.len, deadline);
out:
	tv_strbuf_free(&body);
	close(fd);
	return ret;
}

void serve_http_close(struct serve_http *h)
{
	if (!h)
		return;
	close(h->fd);
	free(h);
}
