/* SPDX-License-Identifier: LGPL-2.1 */
/* Function symbols of ELF files, for uprobes (lib/util/elf_sym.c). */
#ifndef TV_LIB_ELF_SYM_H
#define TV_LIB_ELF_SYM_H

#include <stdint.h>

/*
 * tv_elf_symbol_offset - where function @name is in the ELF64 file @path
 * @offset: its file offset (what uprobe_events takes after PATH:)
 *
 * Looks in .symtab, then .dynsym.  Return: 0, -ENOENT (no such function),
 * -ENOEXEC (not an ELF64 file, or a malformed one), -errno (open/mmap).
 * Logs nothing: the caller names the probe.
 */
int tv_elf_symbol_offset(const char *path, const char *name, uint64_t *offset);

#endif
