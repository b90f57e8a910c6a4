/* SPDX-License-Identifier: LGPL-2.1 */
/* What both Perfetto exporters share (export/export_perfetto*.c). */
#ifndef TV_EXPORT_PERFETTO_H
#define TV_EXPORT_PERFETTO_H

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"

/*
 * What Xen domid @domid is in @rd's session, for a track name: "Xen d0: host
 * (dom0)", "Xen dN: guest:NAME" (the guest domain whose meta xen_domid is N),
 * else "Xen dN"; written into @buf of @size bytes.
 */
void tv_export_xen_dom_label(struct tv_reader *rd, unsigned int domid, char *buf, size_t size);

/* The HVM ISA the session's Xen trace recorded (meta hvm_isa), for exit names. */
enum tv_kvm_isa tv_export_xen_isa(struct tv_reader *rd);

/* A Xen HVM exit's slice name: "exit REASON", "exit 0xCODE" when unknown. */
void tv_export_xen_exit_name(enum tv_kvm_isa isa, uint64_t code, char *buf, size_t size);

#endif
