/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* libbpf's and libxdp's output into nfbox's log (base/log.h): their
 * warnings as warnings, the rest as debug. Once, after log_init(). */
#ifndef NFBOX_LIB_LIBLOG_H
#define NFBOX_LIB_LIBLOG_H

#include <stdbool.h>

void log_libraries(void);
/* While quiet, their warnings are debug too: around a call whose failure
 * the caller explains itself (libxdp trying its dispatcher first). */
void log_libraries_quiet(bool quiet);

#endif
