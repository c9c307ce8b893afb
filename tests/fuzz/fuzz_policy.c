/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* libFuzzer harness: any byte string through loader, validator, compiler,
 * encoder and both printers must neither crash nor leak. */
#include <stdint.h>
#include <stdio.h>

#include "backend/bpf/compile/plan.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy *p = NULL;
	struct plan *pl = NULL;
	struct plan_blob blob;
	struct diags d;
	FILE *null = fopen("/dev/null", "w");

	diags_init(&d);
	if (policy_load_buffer("/nonexistent/fuzz.yaml", (const char *)data, size, &d, &p) == 0 &&
	    plan_compile(p, &pl) == 0) {
		if (null) {
			plan_print(pl, null);
			plan_print_json(pl, null);
		}
		if (plan_encode(pl, &blob) == 0)
			plan_blob_free(&blob);
	}
	if (null) {
		diags_print(&d, null, false);
		fclose(null);
	}
	plan_free(pl);
	policy_free(p);
	diags_free(&d);
	return 0;
}
