/* SPDX-License-Identifier: GPL-2.0 */
/* The tracevisor command's subcommands, dispatched from tracevisor.c. */
#ifndef TV_TOOLS_CMD_H
#define TV_TOOLS_CMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TV_VERSION "0.1.0"

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_xen_mark(int argc, char **argv);
int cmd_sync(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_compress(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* Compress session @dir's stream files and say how much (tracevisor compress). */
int tv_cli_compress(const char *dir);

/* Print "tracevisor CMD: MESSAGE" on stderr. */
void tv_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* @ns as "123ns", "4.5us", "6.7ms" or "1.23s" into @buf. */
const char *tv_cli_fmt_ns(uint64_t ns, char *buf, size_t size);
/* CPU used by this process and its threads since the last call (@prev
 * keeps the total), as % of @interval_ns (0: just remember the total). */
double tv_cli_cpu_percent(double *prev, uint64_t interval_ns);
/* top's full-screen view of a started @top until q or @sfd (tools/top_screen.c). */
struct tv_top;
int tv_cli_top_screen(struct tv_top *top, int sfd, const char *dir, int sort);
/* @s as a JSON string on stdout. */
void tv_cli_json_str(const char *s);
/*
 * @s escaped for the terminal (tv_text_escape(): recorded names come from
 * guests), in one of 8 rotating buffers of this thread, cut at 1 KiB: for
 * up to 8 uses in one printf's arguments.
 */
const char *tv_cli_text(const char *s);
/*
 * --flight-recorder SIZE: bytes with an optional K, M or G (powers of 1024),
 * 64K..64G: 0, or -1 after the usage error for @cmd.
 */
int tv_cli_parse_flight_size(const char *cmd, const char *arg, uint64_t *out);
/* Exit status for a library error code. */
int tv_cli_status(int err);
/* Silence the library's messages (a probe whose failure the real call will
 * report), or route them to stderr again.  Not while library threads run. */
void tv_cli_log_mute(bool mute);
/* "comm[pid] context" of a row by guest task (stat --by guest-task, top --guest), "" otherwise. */
const char *tv_cli_guest_task(const struct tv_exit_stat_row *r, char *buf, size_t size);

#endif
