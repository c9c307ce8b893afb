#!/bin/bash
# `make demo` until the enforcement engine lands: validate the embedded
# default policy and show what it compiles to. Touches no interface.
set -eu
cd "$(dirname "$0")/.."
policy=${NFBOX_POLICY:-config/policy.yaml}
echo "== nfbox validate $policy"
build/nfbox validate "$policy"
echo
echo "== nfbox plan $policy"
build/nfbox plan "$policy"
