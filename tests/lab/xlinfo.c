// SPDX-License-Identifier: GPL-2.0
/* xlinfo: the essentials of `xl info`, straight from libxenctrl.
 *
 * Built by tests/lab/lab into the xen topology's dom0 as /usr/bin/xlinfo.
 * Unlike xl it needs no xenstored, only /dev/xen/privcmd (xen-privcmd,
 * xenfs). Prints "key : value" lines like `xl info` and exits 0, or prints
 * the failing call and exits 1.
 */
#include <stdio.h>
#include <string.h>
#include <xenctrl.h>

static int print_version(xc_interface *xch)
{
	xen_extraversion_t extra;
	xen_capabilities_info_t caps;
	int ver = xc_version(xch, XENVER_version, NULL);

	if (ver < 0) {
		perror("xlinfo: xc_version");
		return -1;
	}
	memset(extra, 0, sizeof(extra));
	memset(caps, 0, sizeof(caps));
	xc_version(xch, XENVER_extraversion, &extra);
	xc_version(xch, XENVER_capabilities, &caps);
	printf("xen_major              : %d\n", ver >> 16);
	printf("xen_minor              : %d\n", ver & 0xffff);
	printf("xen_extra              : %s\n", extra);
	printf("xen_caps               : %s\n", caps);
	return 0;
}

static int print_physinfo(xc_interface *xch)
{
	xc_physinfo_t info;
	unsigned long mib = 1024 * 1024;
	unsigned long page = 4096;

	memset(&info, 0, sizeof(info));
	if (xc_physinfo(xch, &info) != 0) {
		perror("xlinfo: xc_physinfo");
		return -1;
	}
	printf("nr_cpus                : %u\n", info.nr_cpus);
	printf("max_cpu_id             : %u\n", info.max_cpu_id);
	printf("nr_nodes               : %u\n", info.nr_nodes);
	printf("cores_per_socket       : %u\n", info.cores_per_socket);
	printf("threads_per_core       : %u\n", info.threads_per_core);
	printf("cpu_mhz                : %u\n", info.cpu_khz / 1000);
	printf("total_memory           : %lu\n",
	       (unsigned long)(info.total_pages * page / mib));
	printf("free_memory            : %lu\n",
	       (unsigned long)(info.free_pages * page / mib));
	printf("virt_caps              :%s%s\n",
	       (info.capabilities & XEN_SYSCTL_PHYSCAP_hvm) ? " hvm" : "",
	       (info.capabilities & XEN_SYSCTL_PHYSCAP_pv) ? " pv" : "");
	return 0;
}

int main(void)
{
	xc_interface *xch = xc_interface_open(NULL, NULL, 0);
	int rc;

	if (!xch) {
		perror("xlinfo: xc_interface_open");
		return 1;
	}
	rc = print_version(xch) || print_physinfo(xch);
	xc_interface_close(xch);
	return rc ? 1 : 0;
}
