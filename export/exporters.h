/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The exporters behind tv_export() (include/tracevisor/export.h, which
 * documents each format; export/export_dispatch.c picks one).  Each takes
 * the session open for reading (consumed to its end, still the caller's)
 * and returns 0 or -errno (logged).
 */
#ifndef TV_EXPORTERS_H
#define TV_EXPORTERS_H

#include "tracevisor/tracevisor.h"

/* TV_EXPORT_CTF: export/export_ctf.c */
int tv_export_ctf(struct tv_reader *rd, const char *session_dir, const char *out,
		  struct tv_export_stats *st);

/* TV_EXPORT_PERFETTO: export/export_perfetto_proto.c */
int tv_export_perfetto(struct tv_reader *rd, const char *session_dir, const char *out,
		       struct tv_export_stats *st);

/* TV_EXPORT_PERFETTO_JSON: export/export_perfetto.c */
int tv_export_perfetto_json(struct tv_reader *rd, const char *out, struct tv_export_stats *st);

/* TV_EXPORT_HTML: export/export_html.c, export/export_html_page.c */
int tv_export_html(struct tv_reader *rd, const char *session_dir, const char *out,
		   struct tv_export_stats *st);

#endif
