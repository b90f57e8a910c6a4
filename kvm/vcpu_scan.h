/* SPDX-License-Identifier: LGPL-2.1 */
/* How a VM is named, shared by the vCPU scan and top's BPF rows. */
#ifndef TV_KVM_VCPU_SCAN_H
#define TV_KVM_VCPU_SCAN_H

#include <stddef.h>
#include <sys/types.h>

/*
 * The name of the VM whose VMM is @pid under @proc: QEMU's "-name
 * guest=NAME,..." or "-name NAME", else the process's comm, else "pidN";
 * blanks become '_'.  Written to @name (@size bytes, NUL-terminated).
 */
void tv_kvm_vm_name(const char *proc, pid_t pid, char *name, size_t size);

#endif
