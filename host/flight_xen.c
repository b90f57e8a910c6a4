// SPDX-License-Identifier: LGPL-2.1
/*
 * Exit-latency triggers on Xen (flight_xen.h): the rule's vm= and reason=
 * resolved against the running hypervisor, the watch attached to the Xen
 * recorder's drain thread (xen/xen_flight.c).  Xen names exit reasons with
 * the host CPU's codes (VMX or SVM), as xen stat does.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tracevisor/tracevisor.h"
#include "tv_internal.h"
#include "flight_xen.h"
#include "../xen/xen_recorder.h"
#include "../xen/xen_flight.h"

/* "d3", "3" or an xl name to a domid. */
static int vm_domid(const char *vm, int *domid)
{
	unsigned int id;
	char end;

	if ((sscanf(vm, "d%u%c", &id, &end) == 1 || sscanf(vm, "%u%c", &id, &end) == 1) && id < 0x7ff0) {
		*domid = (int)id;
		return 0;
	}
	if (tv_xen_domain_id(vm, &id))
		return -ENOENT;
	*domid = (int)id;
	return 0;
}

static int reason_code(int isa, const char *name, uint32_t *code)
{
	for (uint32_t c = 0; isa && c < 0x500; c++) {
		const char *n = tv_kvm_exit_reason_name((enum tv_kvm_isa)isa, c);

		if (n && !strcasecmp(n, name)) {
			*code = c;
			return 0;
		}
	}
	return -ENOENT;
}

int tv_flight_xen_arm(struct tv_xen_recorder *xen, const char *rule, uint64_t limit_ns, const char *vm,
		      const char *reason, struct tv_xen_exit_watch **out)
{
	struct tv_xen_exit_rule xr = { .limit_ns = limit_ns, .domid = -1, .hlt = ~0u };
	int isa = tv_xen_recorder_isa(xen);
	int ret;

	*out = NULL;
	if (vm[0] && vm_domid(vm, &xr.domid)) {
		tv_err("Invalid trigger: rule=\"%s\": no Xen domain vm=%s (an xl name, dN or a domid)", rule, vm);
		return -ENOENT;
	}
	if (reason[0]) {
		xr.match_reason = 1;
		if (reason_code(isa, reason, &xr.reason)) {
			tv_err("Invalid trigger: rule=\"%s\": reason=%s is no %s exit reason of this host", rule,
			       reason, isa == TV_KVM_ISA_VMX ? "VMX" : isa == TV_KVM_ISA_SVM ? "SVM" : "known");
			return -EINVAL;
		}
	}
	ret = tv_xen_recorder_watch_exits(xen, &xr, out);
	if (ret == -EINVAL)
		tv_err("Invalid trigger: rule=\"%s\": exit-latency on Xen needs --flight-recorder (Xen's rings)", rule);
	else if (ret == -EBUSY)
		tv_err("Invalid trigger: rule=\"%s\": at most 16 exit-latency rules on Xen", rule);
	else if (ret)
		tv_err("Cannot arm trigger: rule=\"%s\", errno=%d (%s)", rule, -ret, strerror(-ret));
	return ret;
}

void tv_flight_xen_consume(struct tv_xen_exit_watch *w,
			   void (*fn)(void *ctx, const struct tv_xen_exit_hit *hit), void *ctx)
{
	struct tv_xen_exit_hit hit;

	while (tv_xen_exit_watch_take(w, &hit))
		fn(ctx, &hit);
}

void tv_flight_xen_names(struct tv_xen_recorder *xen, const struct tv_xen_exit_hit *hit, char *vm,
			 size_t vm_size, char *reason, size_t reason_size)
{
	int isa = tv_xen_recorder_isa(xen);
	const char *name = isa ? tv_kvm_exit_reason_name((enum tv_kvm_isa)isa, hit->reason) : NULL;

	if (tv_xen_domain_name(hit->domid, vm, vm_size))
		snprintf(vm, vm_size, "d%u", hit->domid);
	if (name)
		snprintf(reason, reason_size, "%s", name);
	else
		snprintf(reason, reason_size, "0x%x", hit->reason);
}

void tv_flight_xen_disarm(struct tv_xen_recorder *xen, struct tv_xen_exit_watch *w)
{
	if (w)
		tv_xen_recorder_unwatch_exits(xen, w);
}
