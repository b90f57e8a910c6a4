/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest fuzz targets' scratch directories (fuzz_guest_stream,
 * fuzz_guest_session).  A run makes one base directory at its first input
 * ($TV_FUZZ_TMP, else /dev/shm when writable - an input writes files, and
 * tmpfs is far faster than a disk - else /tmp) and removes it at exit().
 * Each input gets BASE/g, new, as its guest's directory.  Beside it the
 * host may make only the domains of the guest's traced processes,
 * ust-g-PID[.N] (host/guest_ust.c): after the input anything else there
 * aborts the run (a write outside the guest's directory), and everything
 * is removed for the next input.  Static: each target has its own copy.
 */
#ifndef TV_FUZZ_DIR_H
#define TV_FUZZ_DIR_H

#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fuzz_dir_base[80];

static int fuzz_dir_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* The guest's traced processes: ust-g-PID[.N] beside g, by design (host/guest_ust.c). */
static int fuzz_dir_is_ust(const char *name)
{
	const char *p = name + 6;

	if (strncmp(name, "ust-g-", 6) || !*p)
		return 0;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			;
	return !*p;
}

/* exit() (-runs): the (empty) base directory goes too; libFuzzer's other ends skip it. */
static void fuzz_dir_remove_base(void)
{
	rmdir(fuzz_dir_base);
}

/* An input's guest directory, BASE/g, made new into @dir (@size bytes); the base at the first. */
static void fuzz_dir_make(const char *name, char *dir, size_t size)
{
	if (!fuzz_dir_base[0]) {
		const char *tmp = getenv("TV_FUZZ_TMP");

		if (!tmp || !*tmp)
			tmp = access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm";
		snprintf(fuzz_dir_base, sizeof(fuzz_dir_base), "%.40s/%.24s.XXXXXX", tmp, name);
		if (!mkdtemp(fuzz_dir_base))
			abort();
		atexit(fuzz_dir_remove_base);
	}
	snprintf(dir, size, "%s/g", fuzz_dir_base);
	if (mkdir(dir, 0755))
		abort();
}

/* After an input: abort if anything but g and the ust-g-* domains is in BASE; remove them all. */
static void fuzz_dir_check_clean(void)
{
	char path[sizeof(fuzz_dir_base) + 258];	/* BASE/NAME */
	DIR *d = opendir(fuzz_dir_base);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (strcmp(de->d_name, "g") && !fuzz_dir_is_ust(de->d_name)) {
			fprintf(stderr, "file written outside the guest directory: %s/%s\n",
				fuzz_dir_base, de->d_name);
			abort();
		}
		snprintf(path, sizeof(path), "%s/%s", fuzz_dir_base, de->d_name);
		nftw(path, fuzz_dir_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	}
	if (d)
		closedir(d);
}

#endif /* TV_FUZZ_DIR_H */
