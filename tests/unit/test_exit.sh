#!/bin/bash
# Exit statuses: one table for every command (nfbox(8), EXIT STATUS), each
# row tried here on every command that has it, without privileges:
#   0 success (diff: no change)       1 failed (diff: the policies differ)
#   2 usage (diff: also trouble)      3 a policy (or fleet file) invalid
#   4 nothing answers (no daemon, etcd not reached)
# (78, run's invalid policy, needs root: tests/netns/test_control.sh and
# test_service.sh; a daemon's refusals, 1, and a reload's invalid policy,
# 3, need a daemon: test_control.sh and test_confirm.sh.)
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
NFBOX=${NFBOX_BIN_RELEASE:-$NFBOX}
tmp=$(mktemp -d /tmp/nfbox-exit.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# expect NAME STATUS COMMAND...: COMMAND exits STATUS
expect() {
	local name=$1 want=$2 rc
	shift 2
	"$@" >"$tmp/out" 2>&1
	rc=$?
	[ "$rc" = "$want" ] && t_ok "$name" || t_fail "$name" "exit $rc, not $want: $* said $(head -c 300 "$tmp/out")"
}

printf 'version: 1\nhooks: { forward: { default: accept } }\nrules:\n  - { name: ssh, service: [tcp/22], action: drop }\n' >"$tmp/good.yaml"
printf 'version: 1\nhooks: { forward: { default: accept } }\nrules:\n  - { name: ssh, service: [tcp/23], action: drop }\n' >"$tmp/other.yaml"
printf 'version: 1\nhooks: { forward: { default: accept } }\nrules:\n  - { name: ssh, servce: [tcp/22], action: drop }\n' >"$tmp/bad.yaml"
printf 'version: 1\nsets: { unused: [192.0.2.0/24] }\nhooks: { input: { default: accept } }\n' >"$tmp/warns.yaml"
NOSOCK=$tmp/no-such-dir/nfbox.sock

# usage
expect usage-no-command 2 "$NFBOX"
expect usage-unknown-command 2 "$NFBOX" frobnicate
expect usage-unknown-option 2 "$NFBOX" validate --frobnicate "$tmp/good.yaml"
expect usage-no-operand 2 "$NFBOX" validate
expect usage-plan-two-files 2 "$NFBOX" plan "$tmp/good.yaml" "$tmp/good.yaml"
expect usage-diff-three-files 2 "$NFBOX" diff "$tmp/good.yaml" "$tmp/good.yaml" "$tmp/good.yaml"
expect usage-bad-duration 2 "$NFBOX" reload --socket "$NOSOCK" --confirm 0s
expect usage-since-alone 2 "$NFBOX" stats --socket "$NOSOCK" --since 7d
expect usage-set-operation 2 "$NFBOX" set frob x --socket "$NOSOCK"
expect usage-fleet-operation 2 "$NFBOX" fleet frob

# the policy tools
expect validate-valid 0 "$NFBOX" validate --offline "$tmp/good.yaml"
expect validate-invalid 3 "$NFBOX" validate --offline "$tmp/bad.yaml"
expect validate-one-of-two-invalid 3 "$NFBOX" validate --offline "$tmp/good.yaml" "$tmp/bad.yaml"
expect validate-missing-file 3 "$NFBOX" validate --offline "$tmp/none.yaml"
expect validate-warning 0 "$NFBOX" validate --offline "$tmp/warns.yaml"
expect validate-strict-warning 3 "$NFBOX" validate --offline --strict "$tmp/warns.yaml"
expect plan-valid 0 "$NFBOX" plan "$tmp/good.yaml"
expect plan-invalid 3 "$NFBOX" plan "$tmp/bad.yaml"
expect diff-same 0 "$NFBOX" diff "$tmp/good.yaml" "$tmp/good.yaml"
expect diff-different 1 "$NFBOX" diff "$tmp/good.yaml" "$tmp/other.yaml"
expect diff-invalid 3 "$NFBOX" diff "$tmp/good.yaml" "$tmp/bad.yaml"
expect diff-missing-file 3 "$NFBOX" diff "$tmp/none.yaml" "$tmp/good.yaml"

# the commands that talk to the daemon, with none there
for cmd in status stats metrics confirm log reload diff "set list" "diff $tmp/good.yaml"; do
	read -ra w <<<"$cmd" # the command, then its operands
	expect "no-daemon-${w[0]}${w[1]:+-${w[1]##*/}}" 4 "$NFBOX" "${w[0]}" --socket "$NOSOCK" "${w[@]:1}"
done
expect no-daemon-set-add 4 "$NFBOX" set add x 192.0.2.1 --socket "$NOSOCK"
expect no-daemon-reload-file-first 3 "$NFBOX" reload --socket "$NOSOCK" --policy "$tmp/none.yaml"
expect no-daemon-diff-file-first 3 "$NFBOX" diff --socket "$NOSOCK" "$tmp/none.yaml"
expect no-daemon-stop-is-done 0 "$NFBOX" stop --socket "$NOSOCK"

# fleet: its files, then etcd that does not answer (nothing listens on
# port 1 of this host)
printf 'x\n' >"$tmp/c.pem"
printf 'secret\n' >"$tmp/pw"
printf 'etcd:\n  endpoints: [https://127.0.0.1:1]\n  cert: c.pem\n  key: c.pem\n  ca: c.pem\n  user: op\n  password-file: pw\ngroup: g\n' >"$tmp/fleet.yaml"
expect fleet-file-missing 3 "$NFBOX" fleet status --fleet "$tmp/none.yaml"
expect fleet-push-invalid 3 "$NFBOX" fleet push --fleet "$tmp/fleet.yaml" --allow-unsafe-files "$tmp/bad.yaml"
expect fleet-diff-invalid 3 "$NFBOX" fleet diff --fleet "$tmp/fleet.yaml" --allow-unsafe-files "$tmp/bad.yaml"
expect fleet-status-unreachable 4 "$NFBOX" fleet status --fleet "$tmp/fleet.yaml" --allow-unsafe-files
expect fleet-push-unreachable 4 "$NFBOX" fleet push --fleet "$tmp/fleet.yaml" --allow-unsafe-files "$tmp/good.yaml"
expect fleet-diff-unreachable 4 "$NFBOX" fleet diff --fleet "$tmp/fleet.yaml" --allow-unsafe-files "$tmp/good.yaml"

# the table is nfbox(8)'s, and the page has one
t_check man-has-the-table grep -q '^\.SH "EXIT STATUS"' packaging/man/nfbox.8
t_done
