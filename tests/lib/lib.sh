# Shared helpers for nfbox shell tests: the same one-line-per-case protocol
# as tests/lib/check.h ("ok NAME", "FAIL NAME: why", "skip NAME: why").
# Source it; call t_done last, it exits 1 if any case failed.

T_FAILED=0

t_ok() { echo "ok $1"; }
t_fail() {
	echo "FAIL $1: $2"
	T_FAILED=$((T_FAILED + 1))
}
t_skip() { echo "skip $1: $2"; }
# t_check NAME CONDITION-COMMAND...: ok if the command succeeds.
t_check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		t_ok "$name"
	else
		t_fail "$name" "failed: $*"
		printf '%s\n' "$out" | tail -n 5 | sed 's/^/    /'
	fi
}
t_done() { [ "$T_FAILED" -eq 0 ]; exit $?; }
# json_true FILTER [jq options...]: whether the jq FILTER on the JSON on
# standard input gives true (not jq -e: jq 1.6 passes it on no input).
json_true() { [ "$(jq "${@:2}" "$1" 2>/dev/null)" = true ]; }
# Arithmetic on decimals (times such as $EPOCHREALTIME) in awk, not a
# python3 start: fnum EXPR prints its value to 3 places, fholds CONDITION
# (awk's && and ||) is its truth as a status: fholds "$t1 - $t0 < 1"
fnum() { awk "BEGIN { printf \"%.3f\\n\", $1 }"; }
fholds() { awk "BEGIN { exit !($1) }"; }

# wait_until SECONDS COMMAND...: run COMMAND (its output discarded) every
# 0.05 s until it succeeds (status 0) or SECONDS (may be fractional) have
# passed (status 1, after one last try). For waiting on the thing itself
# rather than sleeping and hoping it happened: a timeout is the caller's to
# report as a failure. COMMAND runs in this shell, so a function may keep
# state across tries.
wait_until() { wait_every 0.05 "$@"; }

# wait_every STEP SECONDS COMMAND...: wait_until, trying every STEP s: for a
# command that costs too much to run 20 times a second through a wait of
# seconds (a python and three bpftools), where STEP more is no matter.
wait_every() {
	local step=$1 int=${2%%.*} frac=${2#*.} end
	shift 2
	[ "$frac" = "$int" ] && frac=
	frac=${frac}000000
	end=$((${EPOCHREALTIME/./} + ${int:-0} * 1000000 + 10#${frac:0:6}))
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		[ "${EPOCHREALTIME/./}" -ge "$end" ] && return 1
		sleep "$step"
	done
}

# The binary under test: the sanitizer build when the runner gives one.
NFBOX=${NFBOX_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/nfbox}

# The control client of the sanitizer build without LeakSanitizer's scan at
# its exit (cli_run COMMAND...): the suites call it thousands of times, to
# poll, and the scan was a third of each call's CPU. The daemons keep it,
# and test_control (NFBOX_CLI_LEAKS=1) keeps it for every verb of the client.
cli_run() {
	if [ -n "${NFBOX_CLI_LEAKS:-}" ]; then
		"$@"
	else
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 "$@"
	fi
}
