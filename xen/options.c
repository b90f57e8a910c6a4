// SPDX-License-Identifier: LGPL-2.1
/* Parsing of --xen-events and --xen-cpus, and the session.meta writer. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "xen_internal.h"
#include "xen_recorder.h"

static const struct {
	const char *name;
	uint32_t mask;
} classes[] = {
	{ "gen", 0x0001f000u }, { "sched", 0x0002f000u }, { "dom0op", 0x0004f000u },
	{ "hvm", 0x0008f000u }, { "mem", 0x0010f000u }, { "pv", 0x0020f000u },
	{ "shadow", 0x0040f000u }, { "hw", 0x0080f000u }, { "guest", 0x0800f000u },
	{ "all", 0x0ffff000u },
};

uint32_t tv_xen_parse_events(const char *spec)
{
	char *copy, *tok, *save = NULL, *end;
	uint32_t mask = 0;

	if (!strncasecmp(spec, "0x", 2)) {
		unsigned long v = strtoul(spec, &end, 16);

		return *end || v > 0xffffffffUL ? 0 : (uint32_t)v;
	}
	copy = strdup(spec);
	if (!copy)
		return 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < sizeof(classes) / sizeof(classes[0]); i++)
			if (!strcasecmp(tok, classes[i].name))
				break;
		if (i == sizeof(classes) / sizeof(classes[0])) {
			tv_err("Unknown Xen event class: name=\"%s\" (gen, sched, dom0op, hvm, mem, pv, shadow, hw, guest, all or a hex mask)",
			       tok);
			mask = 0;
			break;
		}
		mask |= classes[i].mask;
	}
	free(copy);
	return mask;
}

bool tv_xen_cpu_in_list(const char *list, int cpu)
{
	const char *p = list;

	while (*p) {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;

		if (end == p)
			return false;
		if (*end == '-') {
			p = end + 1;
			hi = strtol(p, &end, 10);
			if (end == p)
				return false;
		}
		if (cpu >= lo && cpu <= hi)
			return true;
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return false;
	}
	return false;
}
