// SPDX-License-Identifier: LGPL-2.1
/*
 * The file offset of a function in an ELF file, for a uprobe (the kernel
 * takes PATH:OFFSET, not symbols).  libc only, no libelf: the guest agent
 * may build it in as it does lib/format/proto.c.  The file is untrusted input in
 * the sense that every offset and size read from it is checked against
 * the file's length before use.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_sym.h"

/*
 * Headers are copied out (memcpy), never read in place: a hostile file's
 * offsets need not be aligned.
 */
struct elf_file {
	const unsigned char *data;
	size_t size;
	Elf64_Ehdr eh;
};

/* @off + @len inside the file (no overflow)? */
static int in_file(const struct elf_file *f, uint64_t off, uint64_t len)
{
	return off <= f->size && len <= f->size - off;
}

static int section(const struct elf_file *f, size_t i, Elf64_Shdr *sh)
{
	uint64_t off = f->eh.e_shoff + (uint64_t)i * sizeof(Elf64_Shdr);

	if (i >= f->eh.e_shnum || f->eh.e_shoff > f->size || !in_file(f, off, sizeof(Elf64_Shdr)))
		return -ENOEXEC;
	memcpy(sh, f->data + off, sizeof(*sh));
	return 0;
}

/* The value of @name in symbol table section @sh (its strings in sh_link). */
static int find_in_symtab(const struct elf_file *f, const Elf64_Shdr *sh, const char *name,
			  uint64_t *value)
{
	size_t n = strlen(name);
	Elf64_Shdr strs;

	if (section(f, sh->sh_link, &strs) || !in_file(f, sh->sh_offset, sh->sh_size) ||
	    !in_file(f, strs.sh_offset, strs.sh_size) || sh->sh_entsize != sizeof(Elf64_Sym))
		return -ENOEXEC;
	for (uint64_t k = 0; k < sh->sh_size / sizeof(Elf64_Sym); k++) {
		Elf64_Sym s;

		memcpy(&s, f->data + sh->sh_offset + k * sizeof(s), sizeof(s));
		if (ELF64_ST_TYPE(s.st_info) != STT_FUNC || !s.st_value ||
		    s.st_name >= strs.sh_size || strs.sh_size - s.st_name <= n)
			continue;
		/* the name has n + 1 bytes inside the string table: checked above */
		if (!memcmp(f->data + strs.sh_offset + s.st_name, name, n + 1)) {
			*value = s.st_value;
			return 0;
		}
	}
	return -ENOENT;
}

/* The file offset of virtual address @vaddr, through the PT_LOAD segments. */
static int vaddr_to_offset(const struct elf_file *f, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < f->eh.e_phnum; i++) {
		uint64_t at = f->eh.e_phoff + (uint64_t)i * sizeof(Elf64_Phdr);
		Elf64_Phdr ph;

		if (f->eh.e_phoff > f->size || !in_file(f, at, sizeof(Elf64_Phdr)))
			return -ENOEXEC;
		memcpy(&ph, f->data + at, sizeof(ph));
		if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

static int elf_lookup(const struct elf_file *f, const char *name, uint64_t *offset)
{
	uint64_t value = 0;
	int ret = -ENOENT;

	if (!in_file(f, 0, sizeof(Elf64_Ehdr)) || memcmp(f->eh.e_ident, ELFMAG, SELFMAG) ||
	    f->eh.e_ident[EI_CLASS] != ELFCLASS64)
		return -ENOEXEC;
	/* .symtab first (every function of an unstripped file), then .dynsym */
	for (int pass = 0; pass < 2 && ret == -ENOENT; pass++) {
		for (size_t i = 0; i < f->eh.e_shnum && ret == -ENOENT; i++) {
			Elf64_Shdr sh;

			if (section(f, i, &sh))
				return -ENOEXEC;
			if (sh.sh_type == (pass ? SHT_DYNSYM : SHT_SYMTAB))
				ret = find_in_symtab(f, &sh, name, &value);
		}
	}
	return ret ? ret : vaddr_to_offset(f, value, offset);
}

int tv_elf_symbol_offset(const char *path, const char *name, uint64_t *offset)
{
	struct elf_file f = { 0 };
	struct stat st;
	void *map;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
		close(fd);
		return -ENOEXEC;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	ret = map == MAP_FAILED ? -errno : 0;
	close(fd);
	if (ret)
		return ret;
	f.data = map;
	f.size = (size_t)st.st_size;
	memcpy(&f.eh, map, sizeof(f.eh));	/* the size was checked above */
	ret = elf_lookup(&f, name, offset);
	munmap(map, f.size);
	return ret;
}
