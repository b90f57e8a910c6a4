// SPDX-License-Identifier: LGPL-2.1
/*
 * tracevisor serve's HTTP server: enough HTTP/1.1 for a scraper (GET,
 * one request per connection, Connection: close) and Alertmanager's
 * webhook (POST /snapshot, a body of Content-Length bytes, at most
 * SERVE_BODY_MAX), in ~300 lines of C
 * rather than a library: the exporter answers one scrape at a time on
 * one thread, Prometheus scrapes every few seconds, and a small server
 * whose every path is here is easier to bound than a general one (no
 * threads, no keep-alive, no chunked body).  Bounds: a request is read
 * whole within 5 s and 8 KiB or dropped (TLS handshake included); a
 * client that does not read its answer within 5 s is dropped too; more
 * than RATE_BURST requests beyond RATE_PER_S a second get 429.  With a
 * web config (host/serve_web.c), TLS through OpenSSL, and a request
 * without valid credentials gets 401 and nothing else.
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
#include <openssl/ssl.h>

#include "tv_internal.h"
#include "serve.h"
#include "serve_dl.h"

#define REQ_MAX 8192
#define IO_TIMEOUT_MS 5000
#define RATE_PER_S 20
#define RATE_BURST 40

struct serve_http {
	int fd;
	const struct serve_web *web;	/* NULL: plain, open */
	double tokens;			/* the rate bound's bucket */
	uint64_t tokens_ms;		/* when it was last filled */
	uint64_t refused;		/* requests refused: 401 or 429 */
};

/* One client: its socket, and its TLS session when there is TLS. */
struct conn {
	int fd;
	SSL *ssl;
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

int serve_http_open(const char *addr, const struct serve_web *web, struct serve_http **out)
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
	h->web = web;
	h->tokens = RATE_BURST;
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

uint64_t serve_http_refused(const struct serve_http *h)
{
	return h->refused;
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

/*
 * Wait for what an SSL call that returned @r wants, or for @events on a
 * plain socket: 0 to try again, -1 to give up (an error, the deadline).
 */
static int conn_wait(struct conn *c, int r, short events, uint64_t deadline)
{
	if (c->ssl) {
		int e = SSL_get_error(c->ssl, r);

		if (e == SSL_ERROR_WANT_READ)
			events = POLLIN;
		else if (e == SSL_ERROR_WANT_WRITE)
			events = POLLOUT;
		else
			return -1;
	} else if (r < 0 && errno != EAGAIN && errno != EINTR) {
		return -1;
	}
	return wait_fd(c->fd, events, deadline) ? -1 : 0;
}

/* The TLS handshake, within the deadline: 0 or -1. */
static int conn_handshake(struct conn *c, SSL_CTX *tls, uint64_t deadline)
{
	int r;

	c->ssl = SSL_new(tls);
	if (!c->ssl || !SSL_set_fd(c->ssl, c->fd))
		return -1;
	while ((r = SSL_accept(c->ssl)) != 1)
		if (conn_wait(c, r, POLLIN, deadline))
			return -1;
	return 0;
}

static ssize_t conn_read(struct conn *c, char *buf, size_t n, uint64_t deadline)
{
	for (;;) {
		ssize_t r = c->ssl ? SSL_read(c->ssl, buf, (int)n) : recv(c->fd, buf, n, MSG_DONTWAIT);

		if (r > 0)
			return r;
		if (r == 0 && !c->ssl)
			return -1;	/* closed before the head ended */
		if (conn_wait(c, (int)r, POLLIN, deadline))
			return -1;
	}
}

/* The request's head (through the blank line) into @buf: its length, or -1. */
static ssize_t read_head(struct conn *c, char *buf, size_t size, uint64_t deadline)
{
	size_t len = 0;

	while (len < size - 1) {
		ssize_t n = conn_read(c, buf + len, size - 1 - len, deadline);

		if (n < 0)
			return -1;
		len += (size_t)n;
		buf[len] = '\0';
		if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
			return (ssize_t)len;
	}
	return -1;
}

static void send_all(struct conn *c, const char *p, size_t n, uint64_t deadline)
{
	while (n) {
		ssize_t w = c->ssl ? SSL_write(c->ssl, p, (int)(n > 1 << 30 ? 1 << 30 : n)) :
				     send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (conn_wait(c, (int)w, POLLOUT, deadline)) {
			return;
		}
	}
}

static void respond(struct conn *c, const char *status, const char *extra, const char *type, const char *body,
		    size_t len, uint64_t deadline)
{
	char head[512];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %s\r\n%sContent-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			 status, extra, type, len);

	send_all(c, head, (size_t)n, deadline);
	send_all(c, body, len, deadline);
}

/* The rate bound: a token per request, RATE_PER_S a second, RATE_BURST at most. */
static bool rate_ok(struct serve_http *h)
{
	uint64_t now = now_ms();

	h->tokens += (double)(now - h->tokens_ms) * RATE_PER_S / 1000.0;
	if (h->tokens > RATE_BURST)
		h->tokens = RATE_BURST;
	h->tokens_ms = now;
	if (h->tokens < 1)
		return false;
	h->tokens -= 1;
	return true;
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

/* Where the head of @head (@len bytes read) ends: the body's first byte. */
static size_t head_end(const char *head)
{
	const char *crlf = strstr(head, "\r\n\r\n"), *lf = strstr(head, "\n\n");

	if (crlf && (!lf || crlf < lf))
		return (size_t)(crlf - head) + 4;
	return (size_t)(lf - head) + 2;
}

/* Content-Length of @head: its value, -1 none, -2 not a number. */
static long long content_length(const char *head)
{
	for (const char *l = strchr(head, '\n'); l; l = strchr(l + 1, '\n')) {
		char *end;
		long long n;

		if (strncasecmp(l + 1, "content-length:", 15))
			continue;
		errno = 0;
		n = strtoll(l + 16, &end, 10);
		return errno || end == l + 16 || n < 0 || !strchr("\r\n", *end) ? -2 : n;
	}
	return -1;
}

/*
 * A POST's body into *@out (NUL-terminated; the caller frees): the
 * head's @have bytes past it first, then the rest.  0, or the HTTP
 * status to answer with (411, 413, 400).
 */
static int read_body(struct conn *c, const char *head, const char *have, size_t nhave, char **out,
		     size_t *len, uint64_t deadline)
{
	long long n = content_length(head);
	char *body;
	size_t got;

	*out = NULL;
	if (strcasestr(head, "\ntransfer-encoding:"))
		return 411;	/* Alertmanager sends a length: no chunks to bound */
	if (n == -1)
		return 411;
	if (n < 0 || nhave > (size_t)n)
		return 400;
	if (n > SERVE_BODY_MAX)
		return 413;
	body = malloc((size_t)n + 1);
	if (!body)
		return 500;
	memcpy(body, have, nhave);
	for (got = nhave; got < (size_t)n;) {
		ssize_t r = conn_read(c, body + got, (size_t)n - got, deadline);

		if (r < 0) {
			free(body);
			return 400;
		}
		got += (size_t)r;
	}
	body[n] = '\0';
	*out = body;
	*len = (size_t)n;
	return 0;
}

static const char *status_line(int code)
{
	switch (code) {
	case 200: return "200 OK";
	case 400: return "400 Bad Request";
	case 404: return "404 Not Found";
	case 411: return "411 Length Required";
	case 413: return "413 Content Too Large";
	case 429: return "429 Too Many Requests";
	case 503: return "503 Service Unavailable";
	default: return "500 Internal Server Error";
	}
}

/* POST /snapshot: the body read and handed to @hd->snapshot, its line answered. */
static int answer_snapshot(struct conn *c, const char *head, size_t nhead, const struct serve_handlers *hd,
			   uint64_t deadline)
{
	struct tv_strbuf reply = { 0 };
	size_t hend = head_end(head), len = 0;
	char *body = NULL;
	int code;

	if (!hd->snapshot) {
		respond(c, "404 Not Found", "", "text/plain",
			"no flight recorder: serve --flight-recorder SIZE takes snapshots\n", 63, deadline);
		return 0;
	}
	code = read_body(c, head, head + hend, nhead - hend, &body, &len, deadline);
	if (code == 413)
		tv_strbuf_append(&reply, "body larger than %d bytes\n", SERVE_BODY_MAX);
	else if (code)
		tv_strbuf_append(&reply, "no whole body: a Content-Length and its bytes within 5 s\n");
	else
		code = hd->snapshot(hd->ctx, body, len, &reply);
	respond(c, status_line(code), "", "text/plain; charset=utf-8", reply.data ? reply.data : "", reply.len,
		deadline);
	tv_strbuf_free(&reply);
	free(body);
	return 0;
}

int serve_http_answer(struct serve_http *h, const struct serve_handlers *hd)
{
	static const char index_page[] =
		"tracevisor serve: VM exit metrics on /metrics (tracevisor-serve(8))\n";
	struct tv_strbuf body = { 0 };
	char head[REQ_MAX], method[16], path[256], challenge[128];
	uint64_t deadline = now_ms() + IO_TIMEOUT_MS;
	struct conn c = { .fd = accept4(h->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK) };
	SSL_CTX *tls = serve_web_tls(h->web);
	ssize_t nhead;
	int ret = 0;
	bool om;

	if (c.fd < 0)
		return 0;	/* the client went away meanwhile */
	if (tls && conn_handshake(&c, tls, deadline))
		goto out;	/* no TLS, or no valid client certificate: nothing said */
	nhead = read_head(&c, head, sizeof(head), deadline);
	if (nhead <= 0 || sscanf(head, "%15s %255s HTTP/", method, path) != 2) {
		respond(&c, "400 Bad Request", "", "text/plain", "bad request\n", 12, deadline);
		goto out;
	}
	if (!rate_ok(h)) {
		h->refused++;
		respond(&c, "429 Too Many Requests", "Retry-After: 1\r\n", "text/plain", "too many requests\n", 18,
			deadline);
		goto out;
	}
	if (!serve_web_authorized(h->web, head)) {
		h->refused++;
		snprintf(challenge, sizeof(challenge), "WWW-Authenticate: %s\r\n", serve_web_challenge(h->web));
		respond(&c, "401 Unauthorized", challenge, "text/plain", "Unauthorized\n", 13, deadline);
		goto out;
	}
	path[strcspn(path, "?")] = '\0';
	if (!strcmp(path, "/snapshot")) {
		if (strcmp(method, "POST"))
			respond(&c, "405 Method Not Allowed", "Allow: POST\r\n", "text/plain", "POST only\n", 10,
				deadline);
		else
			ret = answer_snapshot(&c, head, (size_t)nhead, hd, deadline);
		goto out;
	}
	if (strcmp(method, "GET")) {
		respond(&c, "405 Method Not Allowed", "", "text/plain", "GET only\n", 9, deadline);
		goto out;
	}
	if (!strcmp(path, "/")) {
		respond(&c, "200 OK", "", "text/plain; charset=utf-8", index_page, sizeof(index_page) - 1, deadline);
		goto out;
	}
	if (strcmp(path, "/metrics")) {
		respond(&c, "404 Not Found", "", "text/plain", "not found\n", 10, deadline);
		goto out;
	}
	om = wants_openmetrics(head);
	ret = hd->render(hd->ctx, om, &body);
	if (ret) {
		respond(&c, "500 Internal Server Error", "", "text/plain", "out of memory\n", 14, deadline);
		goto out;
	}
	respond(&c, "200 OK", "", om ? "application/openmetrics-text; version=1.0.0; charset=utf-8" :
		"text/plain; version=0.0.4; charset=utf-8", body.data ? body.data : "", body.len, deadline);
out:
	tv_strbuf_free(&body);
	if (c.ssl) {
		SSL_shutdown(c.ssl);
		SSL_free(c.ssl);
	}
	close(c.fd);
	return ret;
}

void serve_http_close(struct serve_http *h)
{
	if (!h)
		return;
	close(h->fd);
	free(h);
}
