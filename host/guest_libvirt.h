/* SPDX-License-Identifier: LGPL-2.1 */
/* libvirt domain XML -> the agent channel of a guest SPEC (unit-tested). */
#ifndef TV_KVM_GUEST_LIBVIRT_H
#define TV_KVM_GUEST_LIBVIRT_H

struct tv_guest_spec;

/*
 * Set @spec's vsock CID from <vsock><cid address='N'/>, else its serial
 * path from the unix <channel> whose <target name='org.tracevisor.0'/>.
 */
void tv_guest_spec_from_libvirt_xml(struct tv_guest_spec *spec, const char *xml);

/*
 * Set @spec's vcpu_tid[cpu-index] and nr_vcpus from a QMP query-cpus-fast
 * reply ("thread-id" and "cpu-index" of each vCPU object).
 */
void tv_guest_spec_from_qmp_cpus(struct tv_guest_spec *spec, const char *reply);

/* tv_guest_spec_resolve() for a libvirt domain name (no-op otherwise). */
int tv_guest_libvirt_resolve(struct tv_guest_spec *spec);

#endif
