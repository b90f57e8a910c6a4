/* SPDX-License-Identifier: LGPL-2.1 */
/*
 * The flight recorder's exit-latency rules on Xen (host/flight_xen.c):
 * record --xen --flight-recorder SIZE --trigger 'exit-latency>D[,vm=][,reason=]'
 * evaluated by xen/xen_flight.c on the records dom0's consumer drains,
 * not by BPF (a Xen dom0 sees no kvm_exit).  host/flight.c calls these
 * for its exit rules when the session records Xen.
 */
#ifndef TV_HOST_FLIGHT_XEN_H
#define TV_HOST_FLIGHT_XEN_H

#include <stddef.h>
#include <stdint.h>

struct tv_xen_recorder;
struct tv_xen_exit_watch;
struct tv_xen_exit_hit;

/*
 * tv_flight_xen_arm - watch @xen's records for exits longer than
 * @limit_ns; @vm ("" any) an xl name, "dN" or a domid, @reason ("" every
 * reason but hlt) a name as stat shows it.  *@out is the caller's
 * (tv_flight_xen_disarm).  Return: 0, or -errno logged in one line
 * naming @rule.
 */
int tv_flight_xen_arm(struct tv_xen_recorder *xen, const char *rule, uint64_t limit_ns, const char *vm,
		      const char *reason, struct tv_xen_exit_watch **out);
/* Each waiting hit to @fn(@ctx). */
void tv_flight_xen_consume(struct tv_xen_exit_watch *w,
			   void (*fn)(void *ctx, const struct tv_xen_exit_hit *hit), void *ctx);
/* A hit's domain as trigger_vm (xl name, else "dN") and its reason's label. */
void tv_flight_xen_names(struct tv_xen_recorder *xen, const struct tv_xen_exit_hit *hit, char *vm,
			 size_t vm_size, char *reason, size_t reason_size);
/* Detach from @xen and free; NULL-safe. */
void tv_flight_xen_disarm(struct tv_xen_recorder *xen, struct tv_xen_exit_watch *w);

#endif
