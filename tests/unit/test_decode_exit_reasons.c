// SPDX-License-Identifier: GPL-2.0
/*
 * lib/format/exit_reasons.c: known codes, VMX flag bits masked, unknown codes NULL,
 * and agreement with the symbol tables of this kernel's real kvm_exit and
 * kvm_userspace_exit formats (tests/samples/formats/, from tracefs).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracevisor/tracevisor.h"
#include "tv_test.h"
#include "tv_internal.h"

#define FORMATS "tests/samples/formats/kvm"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 16);

	if (f) {
		fread(buf, 1, (1 << 16) - 1, f);
		fclose(f);
	}
	return buf;
}

/*
 * Walk the "{ CODE, "NAME" }" pairs of the __print_symbolic() that follows
 * @after in @fmt; CODE may be "0x040 + 14".  Calls @check for each.
 */
static int each_symbol(const char *fmt, const char *after,
		       void (*check)(unsigned long long code, const char *name, void *ctx), void *ctx)
{
	const char *p = strstr(fmt, after), *end;
	int n = 0;

	if (!p)
		return 0;
	end = strstr(p + strlen(after), "__print_");
	while ((p = strstr(p, "{ ")) && (!end || p < end)) {
		char name[64], more[64], *q;
		unsigned long long code;
		long long add = 0;

		p += 2;
		code = (unsigned long long)strtoll(p, &q, 0);
		while (*q == ' ')
			q++;
		if (*q == '+')
			add = strtoll(q + 1, &q, 0);
		q = strchr(q, '"');
		if (!q || sscanf(q, "\"%63[^\"]\"", name) != 1)
			break;
		/* "KVM_EXIT_" "IO": adjacent literals */
		if (!strncmp(q + strlen(name) + 2, " \"", 2) &&
		    sscanf(q + strlen(name) + 4, "%63[^\"]", more) == 1)
			strncat(name, more, sizeof(name) - 1 - strlen(name));
		check(code + (unsigned long long)add, name, ctx);
		n++;
		p = q;
	}
	return n;
}

struct isa_ctx {
	enum tv_kvm_isa isa;
	int named, missing;
};

static void check_exit(unsigned long long code, const char *name, void *ctx)
{
	struct isa_ctx *c = ctx;
	const char *got = tv_kvm_exit_reason_name(c->isa, (uint32_t)code);
	char want[64];

	/* the kernel's "DE excp" is "DE_excp" here: stat names have no spaces */
	snprintf(want, sizeof(want), "%s", name);
	for (char *s = want; *s; s++)
		if (*s == ' ')
			*s = '_';
	if (!got) {
		/* every reason this kernel names must have a name here */
		TV_CHECK(0, "isa %d code 0x%llx (%s) has no name", c->isa, code, name);
		c->missing++;
		return;
	}
	c->named++;
	TV_CHECK(!strcmp(got, want), "isa %d code 0x%llx: '%s', the kernel says '%s'", c->isa,
		 code, got, name);
}

static void check_userspace(unsigned long long code, const char *name, void *ctx)
{
	const char *got = tv_kvm_userspace_exit_name(code);
	int *named = ctx;

	TV_CHECK(!strncmp(name, "KVM_EXIT_", 9), "symbol %s", name);
	/* s390, PowerPC and ARM reasons never come from an x86 host */
	if (!got && (strstr(name, "S390") || strstr(name, "PAPR") || strstr(name, "ARM") ||
		     !strcmp(name, "KVM_EXIT_DCR") || !strcmp(name, "KVM_EXIT_WATCHDOG") ||
		     !strcmp(name, "KVM_EXIT_EPR")))
		return;
	TV_CHECK(got && !strcmp(got, name + 9), "user-space exit %llu: '%s', the kernel says '%s'",
		 code, got ? got : "(null)", name);
	(*named)++;
}

int main(void)
{
	struct isa_ctx vmx = { TV_KVM_ISA_VMX, 0, 0 }, svm = { TV_KVM_ISA_SVM, 0, 0 };
	char *fmt;
	int n, named = 0;

	/* VMX: basic reason in bits 15:0, flags above */
	TV_CHECK(!strcmp(tv_kvm_exit_reason_name(TV_KVM_ISA_VMX, 48), "EPT_VIOLATION"), "48");
	TV_CHECK(!strcmp(tv_kvm_exit_reason_name(TV_KVM_ISA_VMX, 0), "EXCEPTION_NMI"), "0");
	TV_CHECK(!strcmp(tv_kvm_exit_reason_name(TV_KVM_ISA_VMX, 30), "IO_INSTRUCTION"), "30");
	TV_CHECK(!strcmp(tv_kvm_exit_reason_name(TV_KVM_ISA_VMX, 0x80000021), "INVALID_STATE"),
		 "FAILED_VMENTRY bit masked");
	TV_CHECK(!strcmp(tv_kvm_exit_reason_name(TV_KVM_ISA_VMX, 0x0800000c), "HLT"),
		 "bit 27 (enclave mode) masked");
	TV_CHECK(tv_kvm_exit_reason_name(TV_KVM_ISA_VMX, 35) == NULL, "35 is no reason");
	TV_CHECK(tv_kvm_exit_reason_name(TV_KVM_ISA_VMX, 0xffff) == NULL, "0xffff");
	/* SVM: the whole code */
	TV_CHECK(!strcmp(tv_kvm_exit_reason_name(TV_KVM_ISA_SVM, 0x400), "npf"), "npf");
	TV_CHECK(!strcmp(tv_kvm_exit_reason_name(TV_KVM_ISA_SVM, 0x7b), "io"), "io");
	TV_CHECK(!strcmp(tv_kvm_exit_reason_name(TV_KVM_ISA_SVM, 0x72), "cpuid"), "cpuid");
	TV_CHECK(!strcmp(tv_kvm_exit_reason_name(TV_KVM_ISA_SVM, 0x78), "hlt"), "hlt");
	TV_CHECK(!strcmp(tv_kvm_exit_reason_name(TV_KVM_ISA_SVM, 0xffffffff), "invalid_guest_state"),
		 "-1 as u32");
	TV_CHECK(tv_kvm_exit_reason_name(TV_KVM_ISA_SVM, 0x3ff) == NULL, "unknown SVM code");
	TV_CHECK(tv_kvm_exit_reason_name(TV_KVM_ISA_SVM, 0x10400) == NULL, "SVM codes are not masked");
	TV_CHECK(tv_kvm_exit_reason_name(TV_KVM_ISA_UNKNOWN, 48) == NULL, "unknown isa");
	TV_CHECK(tv_kvm_exit_reason_name((enum tv_kvm_isa)7, 0x400) == NULL, "bad isa");
	TV_CHECK(!strcmp(tv_kvm_userspace_exit_name(2), "IO"), "KVM_EXIT_IO");
	TV_CHECK(!strcmp(tv_kvm_userspace_exit_name(9), "FAIL_ENTRY"), "KVM_EXIT_FAIL_ENTRY");
	TV_CHECK(tv_kvm_userspace_exit_name(13) == NULL, "s390 reason on x86");
	TV_CHECK(tv_kvm_userspace_exit_name(9999) == NULL, "unknown user-space reason");

	/* every code this kernel's kvm_exit print fmt names */
	fmt = slurp(FORMATS "/kvm_exit/format");
	n = each_symbol(fmt, "(REC->isa == 1) ? __print_symbolic(", check_exit, &vmx);
	TV_CHECK(n > 60 && vmx.named == n, "VMX: %d symbols, %d named", n, vmx.named);
	n = each_symbol(fmt, ": __print_symbolic(REC->exit_reason,", check_exit, &svm);
	TV_CHECK(n > 100 && svm.named + svm.missing == n && svm.named >= 100, "SVM: %d symbols, %d named", n, svm.named);
	if (svm.missing)
		printf("note: %d SVM codes of the kernel's format have no name here (vmgexit_*)\n",
		       svm.missing);
	free(fmt);
	fmt = slurp(FORMATS "/kvm_userspace_exit/format");
	n = each_symbol(fmt, "__print_symbolic(REC->reason,", check_userspace, &named);
	TV_CHECK(n >= 30 && named >= 20, "user-space exits: %d symbols, %d named", n, named);
	free(fmt);
	return tv_test_done("test_decode_exit_reasons");
}
