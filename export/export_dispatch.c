// SPDX-License-Identifier: LGPL-2.1
/*
 * tv_export(): one entry point for every exporter (export/exporters.h), so
 * a new format is an enum value and a case here, not a new public function.
 */
#include <errno.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "exporters.h"

int tv_export(struct tv_reader *rd, const char *session_dir, const char *out,
	      enum tv_export_format format, struct tv_export_stats *st)
{
	switch (format) {
	case TV_EXPORT_CTF:
		return tv_export_ctf(rd, session_dir, out, st);
	case TV_EXPORT_PERFETTO:
		return tv_export_perfetto(rd, session_dir, out, st);
	case TV_EXPORT_PERFETTO_JSON:
		return tv_export_perfetto_json(rd, out, st);
	case TV_EXPORT_HTML:
		return tv_export_html(rd, session_dir, out, st);
	}
	tv_err("Cannot export: unknown format %d", (int)format);
	return -EINVAL;
}
