/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The engine ABI (bpf/nfbox.h) for user space: kernel integer types first. */
#ifndef NFBOX_ABI_H
#define NFBOX_ABI_H
#include <linux/types.h>
#include "bpf/nfbox.h"
#endif
