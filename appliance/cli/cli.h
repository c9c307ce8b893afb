/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Subcommands of the nfbox binary; main.c dispatches to them. */
#ifndef NFBOX_CLI_H
#define NFBOX_CLI_H

#include <stdbool.h>
#include <stdio.h>

#define EXIT_USAGE 2

int cmd_validate(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_reload(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_capture(int argc, char **argv);

/* Print diagnostics in color when f is a terminal and NO_COLOR is unset. */
bool cli_color(FILE *f);

#endif
