// SPDX-License-Identifier: GPL-2.0
/*
 * lib/util/elf_sym.c, the uprobe symbol lookup, on real files and broken ones:
 * the offset of main in the test helper equals what its ELF headers say
 * (computed here independently, from readelf-style arithmetic on the
 * section of main's symbol), a missing function is -ENOENT, and a
 * truncated, zeroed or non-ELF file is refused without a crash.
 * Run from the repository root; $TV_BUILD names the build directory.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf_sym.h"
#include "tv_test.h"

static char *slurp_bin(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* main's file offset the long way: its section's address and offset. */
static long expected_main(const char *img)
{
	const Elf64_Ehdr *eh = (const void *)img;
	const Elf64_Shdr *sh = (const void *)(img + eh->e_shoff);

	for (int i = 0; i < eh->e_shnum; i++) {
		const Elf64_Sym *sym;
		const char *str;

		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		sym = (const void *)(img + sh[i].sh_offset);
		str = img + sh[sh[i].sh_link].sh_offset;
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++) {
			const Elf64_Shdr *sec = &sh[sym[k].st_shndx];

			if (!strcmp(str + sym[k].st_name, "main"))
				return (long)(sym[k].st_value - sec->sh_addr + sec->sh_offset);
		}
	}
	return -1;
}

static int write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int ok = fd >= 0 && write(fd, data, len) == (ssize_t)len;

	if (fd >= 0)
		close(fd);
	return ok ? 0 : -1;
}

int main(void)
{
	const char *build = getenv("TV_BUILD") ? getenv("TV_BUILD") : "build";
	char helper[512], tmp[] = "/tmp/tv-elf-XXXXXX";
	uint64_t off = 0;
	size_t len;
	char *img;
	int fd;

	snprintf(helper, sizeof(helper), "%s/tests/tv-syscalls", build);
	img = slurp_bin(helper, &len);
	TV_CHECK(img != NULL, "cannot read %s", helper);
	if (!img)
		return tv_test_done("test_elf_sym");
	TV_CHECK(tv_elf_symbol_offset(helper, "main", &off) == 0, "main not found");
	TV_CHECK((long)off == expected_main(img), "main at 0x%llx, want 0x%lx",
		 (unsigned long long)off, expected_main(img));
	TV_CHECK(!memcmp(img + off, img + expected_main(img), 16), "offset bytes differ");
	TV_CHECK(tv_elf_symbol_offset(helper, "no_such_function", &off) == -ENOENT, "missing");
	TV_CHECK(tv_elf_symbol_offset("/nonexistent/x", "main", &off) == -ENOENT, "no file");

	fd = mkstemp(tmp);
	TV_CHECK(fd >= 0, "mkstemp");
	close(fd);
	/* every truncation: refused or not found, never a crash (ASan runs too) */
	for (size_t cut = 0; cut < len; cut += len / 97 + 1) {
		int r;

		write_file(tmp, img, cut);
		r = tv_elf_symbol_offset(tmp, "main", &off);
		TV_CHECK(r == -ENOEXEC || r == -ENOENT || (r == 0 && off < cut),
			 "cut at %zu: %d", cut, r);
	}
	/* section and symbol tables pointing anywhere */
	for (size_t i = 0; i < 200; i++) {
		char *bad = malloc(len);
		int r;

		memcpy(bad, img, len);
		for (int k = 0; k < 8; k++)
			bad[(size_t)rand() % 64 + (i % 2 ? ((const Elf64_Ehdr *)img)->e_shoff : 0)] ^=
				(char)(1 + rand() % 255);
		write_file(tmp, bad, len);
		r = tv_elf_symbol_offset(tmp, "main", &off);
		TV_CHECK(r == 0 || r == -ENOEXEC || r == -ENOENT, "mutation %zu: %d", i, r);
		free(bad);
	}
	write_file(tmp, "#!/bin/sh\necho not elf\n", 23);
	TV_CHECK(tv_elf_symbol_offset(tmp, "main", &off) == -ENOEXEC, "not an ELF file");
	unlink(tmp);
	free(img);
	return tv_test_done("test_elf_sym");
}
