#!/bin/bash
# Run the libFuzzer harness over the policy loader for a bounded time.
# Prints "ok fuzz-policy" when no crash, leak or sanitizer report was found.
set -u
cd "$(dirname "$0")/../.."
bin=${NFBOX_BUILD:-build}/fuzz/fuzz_policy
secs=${NFBOX_FUZZ_SECONDS:-$([ -n "${NFBOX_LONG:-}" ] && echo 600 || echo 20)}
if [ ! -x "$bin" ]; then
	echo "FAIL fuzz-policy: $bin is not built (make unit)"
	exit 1
fi
work=$(mktemp -d /tmp/nfbox-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
# Seeds: the checked-in corpus plus every policy the project ships.
cp tests/fuzz/corpus/* "$work/" 2>/dev/null
i=0
for f in config/policy.yaml config/examples/*.yaml tests/unit/golden/*/*.yaml; do
	[ -f "$f" ] && cp "$f" "$work/seed-$i.yaml" && i=$((i + 1))
done
mkdir -p "$work/new"
# The harness chdirs nowhere: set files named by seeds resolve against
# the fuzz input's synthetic name and are simply unreadable.
if "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
	-print_final_stats=1 -artifact_prefix="$work/" "$work/new" "$work" >"$work/log" 2>&1; then
	echo "ok fuzz-policy ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$') runs in ${secs}s)"
else
	tail -n 40 "$work/log"
	for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
		[ -f "$a" ] && { echo "artifact $(basename "$a"):"; base64 "$a" | head -n 20; }
	done
	echo "FAIL fuzz-policy: the fuzzer found a problem (see above)"
	exit 1
fi
