/* SPDX-License-Identifier: GPL-2.0 */
/* Writers of tracevisor export (cmd_export.c). */
#ifndef TV_TOOLS_EXPORT_H
#define TV_TOOLS_EXPORT_H

#include <stdint.h>

#include "tracevisor/tracevisor.h"

struct export_stats {
	uint64_t events;
	uint64_t streams;	/* CTF streams, or Perfetto tracks */
	uint64_t slices;	/* Perfetto: VM exit slices */
};

/* Write the session open in @rd as a CTF 1.8 trace directory @out. */
int export_ctf(struct tv_reader *rd, const char *session_dir, const char *out,
	       struct export_stats *st);
/* Write Chrome/Perfetto trace-event JSON to @out. */
int export_perfetto(struct tv_reader *rd, const char *out, struct export_stats *st);

#endif
