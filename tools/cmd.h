/* SPDX-License-Identifier: GPL-2.0 */
/* The tracevisor command's subcommands, dispatched from tracevisor.c. */
#ifndef TV_TOOLS_CMD_H
#define TV_TOOLS_CMD_H

#define TV_VERSION "0.1.0"

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_stat(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_xen_mark(int argc, char **argv);
int cmd_sync(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_compress(int argc, char **argv);

/* Compress session @dir's stream files and say how much (tracevisor compress). */
int tv_cli_compress(const char *dir);

/* Print "tracevisor CMD: MESSAGE" on stderr. */
void tv_cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Exit status for a library error code. */
int tv_cli_status(int err);

#endif
