// SPDX-License-Identifier: LGPL-2.1
/*
 * The stream sources the reader knows, by the meta `kind` of a domain.  A
 * new kind of trace (another hypervisor's records) is one more
 * struct tv_stream_source here; the merge does not change.
 */
#include <string.h>

#include "reader_internal.h"

static const struct tv_stream_source *const sources[] = {
	&tv_ftrace_source,
	&tv_xen_source,
	&tv_ust_source,
};

const struct tv_stream_source *tv_stream_source_find(const char *kind)
{
	if (!kind)
		return &tv_ftrace_source;	/* sessions before `kind` existed */
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
		if (!strcmp(sources[i]->kind, kind))
			return sources[i];
	return NULL;
}
