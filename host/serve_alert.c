// SPDX-License-Identifier: LGPL-2.1
/*
 * tracevisor serve's POST /snapshot: Alertmanager's webhook payload
 * (version 4), parsed with json-c rather than by hand (the body comes
 * from the network).  What is kept of it: the firing alerts' alertname
 * and vm labels, as the snapshot's session.meta keys alert= and
 * alert_vm=.  Resolved alerts (send_resolved) take no snapshot.  The
 * values are sanitised: an alertname keeps [A-Za-z0-9_.:-] (others
 * become '_'), a vm label loses its control characters and ','; both are
 * cut at SERVE_ALERT_VALUE_MAX bytes.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>

#include "tv_internal.h"
#include "serve.h"
#include "serve_dl.h"

/* @v sanitised into @out (@size > 0): @name keeps [A-Za-z0-9_.:-]. */
static void alert_clean(const char *v, bool name, char *out, size_t size)
{
	size_t n = 0;

	for (; *v && n + 1 < size; v++) {
		unsigned char c = (unsigned char)*v;
		bool ok = name ? (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
				 strchr("_.:-", c)
			       : c >= 0x20 && c != 0x7f && c != ',';

		out[n++] = ok ? (char)c : '_';
	}
	out[n] = '\0';
}

/* The string @key of object @obj, or NULL (absent, or not a string). */
static const char *str_of(json_object *obj, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

/* The vm label @vm added to @a->vms unless there or no room. */
static void alert_add_vm(struct serve_alert *a, const char *vm)
{
	char clean[SERVE_ALERT_VALUE_MAX];
	size_t len = strlen(a->vms), n;

	alert_clean(vm, false, clean, sizeof(clean));
	n = strlen(clean);
	for (const char *p = a->vms; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ','))
		if (strcspn(p, ",") == n && !strncmp(p, clean, n))
			return;
	if (!n || len + n + 2 > sizeof(a->vms))
		return;
	snprintf(a->vms + len, sizeof(a->vms) - len, "%s%s", len ? "," : "", clean);
}

/* One element of "alerts": @why set when it is not an alert. */
static const char *alert_one(struct serve_alert *a, json_object *al, size_t i, char *why, size_t wsize)
{
	json_object *labels;
	const char *status = str_of(al, "status"), *name, *vm;

	if (!json_object_is_type(al, json_type_object) || !status ||
	    !json_object_object_get_ex(al, "labels", &labels) || !json_object_is_type(labels, json_type_object)) {
		snprintf(why, wsize, "alerts[%zu] is not an alert (an object with status and labels)", i);
		return why;
	}
	name = str_of(labels, "alertname");
	if (!name || !*name) {
		snprintf(why, wsize, "alerts[%zu] has no labels.alertname", i);
		return why;
	}
	if (strcmp(status, "firing"))
		return NULL;	/* resolved: no snapshot of its own */
	if (!a->firing++)
		alert_clean(name, true, a->name, sizeof(a->name));
	vm = str_of(labels, "vm");
	if (vm)
		alert_add_vm(a, vm);
	return NULL;
}

int serve_alert_parse(const char *body, size_t len, struct serve_alert *a, char *why, size_t wsize)
{
	json_tokener *tok = NULL;
	json_object *root = NULL, *alerts;
	const char *version, *err = NULL;
	size_t n, end;

	memset(a, 0, sizeof(*a));
	if (serve_dl_load()) {
		snprintf(why, wsize, "cannot load libjson-c.so.5");
		return -ENOENT;
	}
	tok = json_tokener_new();
	if (!tok) {
		snprintf(why, wsize, "out of memory");
		return -ENOMEM;
	}
	root = json_tokener_parse_ex(tok, body, (int)len);
	end = json_tokener_get_parse_end(tok);
	/* Alertmanager's encoder ends the body with a newline */
	while (root && end < len && strchr(" \t\r\n", body[end]) && body[end])
		end++;
	if (!root || json_tokener_get_error(tok) != json_tokener_success || end != len) {
		snprintf(why, wsize, "not JSON: %s at byte %zu",
			 root ? "trailing data" :
			 json_tokener_get_error(tok) == json_tokener_continue ? "unexpected end" :
			 json_tokener_error_desc(json_tokener_get_error(tok)), end);
		err = why;
	} else if (!json_object_is_type(root, json_type_object)) {
		err = "not a JSON object";
	} else if (!(version = str_of(root, "version")) || strcmp(version, "4")) {
		err = "not Alertmanager's webhook payload version \"4\"";
	} else if (!json_object_object_get_ex(root, "alerts", &alerts) ||
		   !json_object_is_type(alerts, json_type_array)) {
		err = "no \"alerts\" array";
	}
	n = err ? 0 : json_object_array_length(alerts);
	for (size_t i = 0; i < n && !err; i++)
		err = alert_one(a, json_object_array_get_idx(alerts, i), i, why, wsize);
	if (err && err != why)
		snprintf(why, wsize, "%s", err);
	json_object_put(root);
	json_tokener_free(tok);
	return err ? -EINVAL : 0;
}
