// SPDX-License-Identifier: LGPL-2.1
/*
 * `stat` of a session: one merged read feeds every analysis - the VM exit
 * analysis (kvm/kvm_stat.c) and, when the session has a Xen domain, the Xen
 * analysis (xen/xen_stat.c).
 */
#include <errno.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "../kvm/kvm_stat.h"
#include "../xen/xen_stat.h"
#include "guest_context.h"

int tv_stat_compute_opts(const char *dir, const struct tv_stat_opts *opts, struct tv_exit_stat *kvm,
			 struct tv_exit_stat *xen, bool *have_xen)
{
	struct tv_guest_context *gc = NULL;
	struct tv_kvm_stat_pass *kp = NULL;
	struct tv_xen_stat_pass *xp = NULL;
	struct tv_reader *rd;
	struct tv_event ev;
	int ret;

	memset(kvm, 0, sizeof(*kvm));
	memset(xen, 0, sizeof(*xen));
	*have_xen = false;
	ret = tv_reader_open(dir, &rd);
	if (ret)
		return ret;
	ret = tv_kvm_stat_pass_new(rd, kvm, &kp);
	if (!ret && opts && opts->by_guest_task) {
		ret = tv_guest_context_new(rd, dir, &gc);
		if (!ret)
			tv_kvm_stat_pass_set_guest(kp, tv_guest_context_of, gc);
	}
	if (!ret) {
		ret = tv_xen_stat_pass_new(rd, xen, &xp);
		*have_xen = !ret;
		if (!ret && gc)
			tv_xen_stat_pass_set_guest(xp, tv_guest_context_of, gc);
		if (ret == -ENOENT)
			ret = 0;
	}
	while (!ret && (ret = tv_reader_next(rd, &ev)) > 0) {
		ret = gc ? tv_guest_context_event(gc, &ev) : 0;
		if (!ret)
			ret = tv_kvm_stat_pass_event(kp, &ev);
		if (!ret && xp)
			ret = tv_xen_stat_pass_event(xp, &ev);
	}
	if (!ret)
		ret = tv_kvm_stat_pass_finish(kp);
	if (!ret && xp)
		ret = tv_xen_stat_pass_finish(xp);
	tv_kvm_stat_pass_free(kp);
	tv_xen_stat_pass_free(xp);
	tv_guest_context_free(gc);
	tv_reader_close(rd);
	if (ret) {
		tv_exit_stat_free(kvm);
		tv_exit_stat_free(xen);
		*have_xen = false;
	}
	return ret;
}
