#!/bin/bash
# Line and branch coverage of the code that decides verdicts: the policy
# language (policy/), the BPF backend's compiler (appliance/backend/bpf/compile/)
# and the nftables builder (appliance/backend/nftables/nft/), under every suite of make
# check. `make coverage` builds the test build with gcov instead of the
# sanitizers (build/cov), runs tests/run.sh on it, then this prints one
# line per folder and fails when a folder's lines are under its target.
#
# Usage: tests/quality/coverage.sh [BUILD-DIR]   (default build/cov)
set -u
cd "$(dirname "$0")/../.."
B=${1:-build/cov}
TARGET=${NFBOX_COVERAGE_TARGET:-90} # percent of lines, per folder
command -v gcovr >/dev/null || { echo "coverage: gcovr is not installed (packaging/install-deps.sh)" >&2; exit 1; }
ls "$B"/asan/obj >/dev/null 2>&1 || { echo "coverage: no $B/asan/obj (make coverage builds it)" >&2; exit 1; }

# gcovr removes the file it writes its report to when it has nothing to say
# (given /dev/null, it removed the host's /dev/null): a directory of ours.
tmp=$(mktemp -d /tmp/nfbox-coverage.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
printf '%-28s %8s %8s %10s\n' folder lines branches "(lines)"
for dir in policy appliance/backend/bpf/compile appliance/backend/nftables/nft; do
	out=$(gcovr --root . --object-directory "$B/asan/obj" --filter "$dir/" --print-summary \
		--gcov-ignore-parse-errors --txt "$tmp/report.txt" 2>/dev/null)
	lines=$(sed -n 's/^lines: *\([0-9.]*\)% (\([0-9]*\) out of \([0-9]*\)).*/\1 \2\/\3/p' <<<"$out")
	branches=$(sed -n 's/^branches: *\([0-9.]*\)%.*/\1/p' <<<"$out")
	printf '%-28s %7s%% %7s%% %10s\n' "$dir/" "${lines%% *}" "${branches:-?}" "${lines#* }"
	awk -v l="${lines%% *}" -v t="$TARGET" 'BEGIN { exit !(l + 0 < t) }' && fail=1
done
[ "$fail" -eq 0 ] || echo "coverage: a folder is under ${TARGET}% of its lines"
exit "$fail"
