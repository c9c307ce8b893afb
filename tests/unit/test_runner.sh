#!/bin/bash
# The test runner (tests/run.sh) cannot be fooled: run on a tree of fake
# suites, it passes the one that passes and fails each way a suite can pass
# without testing anything: a suite file that is not executable, a C test
# that was not built, a suite that hangs (killed at its time limit), one
# that reports no case, one that exits non-zero after "ok", a skip for a
# missing tool; a skip for the kernel or the machine counts as a skip. Its
# last line adds them up. A "# runner: long" suite runs only under
# NFBOX_LONG. A suite of BOTH_RELEASES (distro/test_cockpit) runs there
# twice, on this machine's Debian release and on the other one, unless
# NFBOX_UNIT_RELEASE names one.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
tmp=$(mktemp -d /tmp/nfbox-runner.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tests/unit" "$tmp/tests/fuzz" "$tmp/tests/netns" "$tmp/tests/distro" "$tmp/tests/lib" "$tmp/build/asan"
cp tests/run.sh "$tmp/tests/"
fake() { # NAME MODE BODY
	printf '#!/bin/bash\n%s\n' "$3" >"$tmp/tests/$1"
	chmod "$2" "$tmp/tests/$1"
}
fake fuzz/run.sh 755 'echo "ok fuzz"'
fake unit/test_good.sh 755 'echo "ok a"; echo "ok b"'
fake unit/test_noexec.sh 644 'echo "ok would-pass"'
fake unit/test_hang.sh 755 '# runner: timeout 2
echo "ok started"; sleep 60'
fake unit/test_silent.sh 755 'exit 0'
fake unit/test_exits.sh 755 'echo "ok a"; exit 3'
fake unit/test_toolskip.sh 755 'echo "ok a"; echo "skip b: tshark is not installed"'
fake unit/test_kernelskip.sh 755 'echo "ok a"; echo "skip b: kernel: no netfilter BPF links"; echo "skip c: machine: one CPU"'
echo 'int main(void) { return 0; }' >"$tmp/tests/unit/test_unbuilt.c"
fake netns/test_both.sh 755 'echo "ok $NFBOX_BACKEND"'
fake netns/test_long.sh 755 '# runner: long
echo "ok long"'
fake distro/test_cockpit.sh 755 '# runner: long
echo "ok release-${NFBOX_UNIT_RELEASE:-of-the-machine}"'

out=$(cd "$tmp" && env -u NFBOX_BUILD NFBOX_TEST_JOBS=3 timeout 60 tests/run.sh 2>&1)
rc=$?
line() { grep -E "^$1 " <<<"$out" | head -n 1; }
t_check runner-fails [ "$rc" -ne 0 ]
t_check good-passes grep -qE '^unit/test_good +2 passed +0 failed' <<<"$out"
t_check noexec-fails grep -q 'FAIL unit/test_noexec: .* is not executable' <<<"$out"
t_check unbuilt-fails grep -Eq 'FAIL unit/test_unbuilt: (/.*/)?build/asan/test_unbuilt was not built' <<<"$out"
t_check hang-killed grep -q 'FAIL unit/test_hang: timed out after 2 s' <<<"$out"
t_check silent-fails grep -q 'FAIL unit/test_silent: ran no test case' <<<"$out"
t_check exit-fails grep -q 'FAIL unit/test_exits: exited with status 3' <<<"$out"
t_check tool-skip-fails grep -q "FAIL b: skipped for a reason that is not the kernel, the machine or the build: tshark is not installed" <<<"$out"
t_check kernel-skip-skips grep -qE '^unit/test_kernelskip +1 passed +0 failed +2 skipped' <<<"$out"
t_check netns-on-bpf grep -qE '^netns/test_both +1 passed' <<<"$out"
long_left_out() { ! grep -q test_long <<<"$out"; }
t_check long-left-out long_left_out
long=$(cd "$tmp" && env -u NFBOX_BUILD NFBOX_LONG=1 timeout 60 tests/run.sh test_long 2>&1)
t_check long-under-check-long grep -qE '^netns/test_long +1 passed' <<<"$long"
# the other release: Debian 13 on 12, 12 on 13 (none elsewhere)
case $(. /etc/os-release && echo "${VERSION_CODENAME:-}") in
bookworm) other=trixie ;;
trixie) other=bookworm ;;
*) other= ;;
esac
rels=$(cd "$tmp" && env -u NFBOX_BUILD -u NFBOX_UNIT_RELEASE NFBOX_LONG=1 NFBOX_TEST_JOBS=1 timeout 60 tests/run.sh test_cockpit 2>&1)
both_releases() {
	grep -qE '^distro/test_cockpit +1 passed' <<<"$rels" || return 1
	if [ -n "$other" ]; then
		grep -qE "^distro/test_cockpit\[$other\] +1 passed" <<<"$rels" && grep -qx '2 passed, 0 failed, 0 skipped' <<<"$rels"
	else
		grep -qx '1 passed, 0 failed, 0 skipped' <<<"$rels"
	fi
}
t_check long-on-both-releases both_releases
one=$(cd "$tmp" && env -u NFBOX_BUILD NFBOX_UNIT_RELEASE=trixie NFBOX_LONG=1 timeout 60 tests/run.sh test_cockpit 2>&1)
t_check one-release-named grep -qx '1 passed, 0 failed, 0 skipped' <<<"$one"
# ok: good 2, hang 1, exits 1, toolskip 1, kernelskip 1, fuzz 1, both 1;
# failed: noexec, unbuilt, hang, silent, exits, toolskip: 6; skipped 2.
t_check totals grep -qx '8 passed, 6 failed, 2 skipped' <<<"$out"
[ "$T_FAILED" -eq 0 ] || printf '%s\n' "$out" "$rels" "$one" | sed 's/^/    | /'
t_done
