// SPDX-License-Identifier: GPL-2.0
/*
 * Dynamic probes in the guest, asked by the host in --guest-events with
 * the host's syntax (kvm/probes.c):
 *
 *   kprobe:NAME=SYMBOL[+OFFS] [FETCHARGS]      kretprobe:NAME=SYMBOL [$retval]
 *   uprobe:NAME=PATH:SYMBOL|OFFSET [FETCHARGS] uretprobe:NAME=PATH:SYMBOL|OFFSET [FETCHARGS]
 *
 * Written to the guest's dynamic_events in the group tvprobe_PID (this
 * agent's pid), removed when the session ends and, if the agent was
 * killed, by the next agent (its pid is dead).  A uprobe's SYMBOL is
 * looked up in the file's ELF symbols (lib/util/elf_sym.c, libc only).  The
 * host's words never build a path outside tracefs or the probed file: the
 * characters allowed in each part are listed below.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "elf_sym.h"

#define GROUP_PREFIX "tvprobe_"

static const struct {
	const char *prefix;
	char type;		/* 'p' entry, 'r' return */
	int user;		/* a uprobe: PATH:SYMBOL|OFFSET */
} kinds[] = {
	{ "kprobe:", 'p', 0 },
	{ "kretprobe:", 'r', 0 },
	{ "uprobe:", 'p', 1 },
	{ "uretprobe:", 'r', 1 },
};

int is_dynamic_spec(const char *spec)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strncmp(spec, kinds[i].prefix, strlen(kinds[i].prefix)))
			return 1;
	return 0;
}

static int all_in(const char *s, size_t n, const char *extra)
{
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr(extra, s[i]))
			return 0;
	return 1;
}

static int append_dynamic_events(struct session *s, const char *line)
{
	char path[160];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/dynamic_events", s->tracing);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, line, strlen(line)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* Remove every probe of the agents that are gone (or, @all, of ours too). */
void remove_dynamic_probes(struct session *s, int ours)
{
	char path[160], *text, *save = NULL;

	snprintf(path, sizeof(path), "%s/dynamic_events", s->tracing);
	text = read_file(path, NULL);
	for (char *line = text ? strtok_r(text, "\n", &save) : NULL; line;
	     line = strtok_r(NULL, "\n", &save)) {
		char group[64], name[64], del[160];
		int pid;

		/* "p:tvprobe_123/name target args" */
		if (sscanf(line, "%*c:%63[^/]/%63s", group, name) != 2 ||
		    sscanf(group, GROUP_PREFIX "%d", &pid) != 1)
			continue;
		if (pid == (int)getpid() ? !ours : (kill(pid, 0) == 0 || errno != ESRCH))
			continue;
		snprintf(del, sizeof(del), "-:%s/%s\n", group, name);
		if (append_dynamic_events(s, del) && verbose)
			say("Cannot remove probe: name=\"%s:%s\", errno=%d", group, name, errno);
	}
	free(text);
}

/* "PATH:SYMBOL" or "PATH:OFFSET" as "PATH:0xOFFSET" for the kernel. */
static int uprobe_target(const char *target, char *out, size_t size)
{
	const char *colon = strrchr(target, ':');
	char path[256];
	uint64_t off;
	char *end;

	if (!colon || colon == target || (size_t)(colon - target) >= sizeof(path))
		return -EINVAL;
	snprintf(path, sizeof(path), "%.*s", (int)(colon - target), target);
	off = strtoull(colon + 1, &end, 0);
	if (*end || !isdigit((unsigned char)colon[1])) {
		int ret = tv_elf_symbol_offset(path, colon + 1, &off);

		if (ret)
			return ret;
	}
	snprintf(out, size, "%s:0x%llx", path, (unsigned long long)off);
	return 0;
}

/*
 * Create the probe of @spec; @event gets "tvprobe_PID:NAME" to enable.
 * Return: 0 or -errno (said when verbose).
 */
int create_dynamic_probe(struct session *s, const char *spec, char *event, size_t size)
{
	const char *body = NULL, *eq, *sp;
	char name[64], target[320], line[1024];
	size_t k = 0, tn;
	int ret;

	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]) && !body; k++)
		if (!strncmp(spec, kinds[k].prefix, strlen(kinds[k].prefix)))
			body = spec + strlen(kinds[k].prefix);
	k--;
	eq = body ? strchr(body, '=') : NULL;
	if (!eq || eq == body || (size_t)(eq - body) >= sizeof(name) || !all_in(body, (size_t)(eq - body), "_"))
		return -EINVAL;
	snprintf(name, sizeof(name), "%.*s", (int)(eq - body), body);
	sp = eq + 1 + strcspn(eq + 1, " ");
	tn = (size_t)(sp - eq - 1);
	/* target: a symbol (+offset) or a file and a symbol or offset */
	if (!tn || tn >= sizeof(target) || !all_in(eq + 1, tn, kinds[k].user ? "_./:+-" : "_.+"))
		return -EINVAL;
	snprintf(target, sizeof(target), "%.*s", (int)tn, eq + 1);
	while (*sp == ' ')
		sp++;
	/* fetch args: the kernel's syntax, nothing that leaves this line */
	if (!all_in(sp, strlen(sp), "_=%$:+-()@. "))
		return -EINVAL;
	if (kinds[k].user) {
		char resolved[320];

		ret = uprobe_target(target, resolved, sizeof(resolved));
		if (ret)
			return ret;
		snprintf(target, sizeof(target), "%s", resolved);
	}
	snprintf(line, sizeof(line), "%c:" GROUP_PREFIX "%d/%s %s%s%s\n", kinds[k].type, (int)getpid(),
		 name, target, *sp ? " " : "", sp);
	ret = append_dynamic_events(s, line);
	if (!ret)
		snprintf(event, size, GROUP_PREFIX "%d:%s", (int)getpid(), name);
	return ret;
}
