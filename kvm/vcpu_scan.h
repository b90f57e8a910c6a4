/* SPDX-License-Identifier: LGPL-2.1 */
/* How a VM is named, shared by the vCPU scan and top's BPF rows. */
#ifndef TV_KVM_VCPU_SCAN_H
#define TV_KVM_VCPU_SCAN_H

#include <stddef.h>
#include <sys/types.h>

#include "tracevisor/tracevisor.h"

/*
 * The name of the VM whose VMM is @pid under @proc: QEMU's "-name
 * guest=NAME,..." or "-name NAME", else the process's comm, else "pidN";
 * blanks become '_'.  Written to @name (@size bytes, NUL-terminated).
 */
void tv_kvm_vm_name(const char *proc, pid_t pid, char *name, size_t size);

/**
 * tv_vcpu_map_scan - find the vCPU threads of KVM VMs in /proc
 * @map: merged into; the caller owns its storage (tv_vcpu_map_free())
 * @proc_root: NULL for /proc (tests pass a fake tree)
 *
 * Processes holding KVM VM fds; threads named "CPU N/KVM" run vCPU N.
 * Return: 0 or -errno.
 */
int tv_vcpu_map_scan(struct tv_vcpu_map *map, const char *proc_root);

#endif
