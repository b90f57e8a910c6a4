# SPDX-License-Identifier: GPL-2.0
"""xenalyze's SVM exit names (VMEXIT_*) -> tracevisor's (lib/format/exit_reasons.c),
for the tests that compare exit counts with xenalyze."""
NAMES = {"CR0_READ": "read_cr0", "CR3_READ": "read_cr3", "CR4_READ": "read_cr4",
         "CR0_WRITE": "write_cr0", "CR3_WRITE": "write_cr3", "CR4_WRITE": "write_cr4",
         "DR0_WRITE": "write_dr0", "DR7_WRITE": "write_dr7", "EXCEPTION_NM": "NM_excp",
         "EXCEPTION_PF": "PF_excp", "EXCEPTION_UD": "UD_excp", "EXCEPTION_GP": "GP_excp",
         "INTR": "interrupt", "NMI": "nmi", "VINTR": "vintr", "RDTSC": "rdtsc",
         "RDTSCP": "rdtscp", "CPUID": "cpuid", "HLT": "hlt", "INVLPG": "invlpg",
         "IOIO": "io", "MSR": "msr", "VMMCALL": "hypercall", "WBINVD": "wbinvd",
         "NPF": "npf", "PAUSE": "pause", "XSETBV": "xsetbv"}
