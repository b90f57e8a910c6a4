/* SPDX-License-Identifier: LGPL-2.1 */
/* The exporters' own functions, behind the public tv_export_*() (export/). */
#ifndef TV_EXPORT_PERFETTO_H
#define TV_EXPORT_PERFETTO_H

#include "tracevisor/tracevisor.h"

/*
 * tv_export_perfetto_json - Chrome/Perfetto trace-event JSON to @out
 * (export/export_perfetto.c; tv_export_perfetto(), TV_PERFETTO_JSON).
 * Return: 0 or -errno (logged).
 */
int tv_export_perfetto_json(struct tv_reader *rd, const char *out, struct tv_export_stats *st);

#endif
