#!/bin/bash
# The JSON Schema of the policy (config/schema/policy.schema.json, for
# editors through yaml-language-server) in step with the loader: its keys
# are the loader's, what nfbox accepts passes it, what nfbox refuses for a
# key or a type fails it (tests/lib/schemacheck.py).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
/usr/bin/python3 -c 'import jsonschema, yaml' 2>/dev/null ||
	{ t_fail schema "python3-jsonschema and python3-yaml are missing (packaging/install-deps.sh installs them)"; t_done; }
/usr/bin/python3 tests/lib/schemacheck.py || T_FAILED=$((T_FAILED + 1))
t_done
