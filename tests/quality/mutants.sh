#!/bin/bash
# Mutation testing: how many deliberate bugs the fast suites catch. Each
# mutant is one small change (tests/quality/mutate.py: a flipped comparison,
# a swapped && and ||, an off-by-one, a deleted condition, a negated
# boolean return, swapped paired fields) to the BPF backend's compiler and
# encoder or the nftables builder; the tree is rebuilt and the fast suites
# run (the nftables builder's and the compiler's unit tests, the classifier
# fuzzer against the reference, the goldens, the limits), stopping at the
# first that fails. A mutant that still builds and passes them all
# survives. The script ends with "N killed of M (P%)" and exits 1 under the
# target (85%).
#
# A survivor that cannot change behaviour (an equivalent mutant) is listed
# in tests/quality/equivalent.txt (file, line text, change as printed, the
# reason; tab-separated), and the reason is printed; it is not counted.
# Every other survivor wants a test.
#
# Runs in a copy of the tree (the checkout is never changed), as root (the
# classifier fuzzer loads BPF). Usage: tests/quality/mutants.sh
# Environment: NFBOX_MUTANTS (how many, sampled; default 80; "all"),
# NFBOX_MUTANT_SEED (the sample; default 1), NFBOX_MUTANTS_ONLY="N N ..."
# (those of `tests/quality/mutate.py list FILES...`), NFBOX_MUTANT_KEEP=1
# (keep the copy, /tmp/nfbox-mutants.*), NFBOX_MUTANTS_TARGET (the percent
# killed below which it exits 1; default 85; CI's short form of a few
# mutants, .ci/targets, asks 0: that it runs, not what a sample of three
# says).
set -u
cd "$(dirname "$0")/../.."
FILES="appliance/backend/bpf/compile/compile.c appliance/backend/bpf/compile/encode.c appliance/backend/bpf/compile/bitvec.c appliance/backend/nftables/nft/build.c appliance/backend/nftables/nft/ir.c"
SUITES="test_nft test_enomem test_compile test_bpf_fuzz test_golden test_limits"
N=${NFBOX_MUTANTS:-80}
SEED=${NFBOX_MUTANT_SEED:-1}
TARGET=${NFBOX_MUTANTS_TARGET:-85}
EQUIV=$PWD/tests/quality/equivalent.txt
MUTATE=$PWD/tests/quality/mutate.py
work=$(mktemp -d /tmp/nfbox-mutants.XXXXXX)
trap '[ -n "${NFBOX_MUTANT_KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT

mkdir -p "$work/src" && git ls-files -z | tar --null -T - -cf - | tar -C "$work/src" -xf -
# The tree's test build, if it has one, as the copy's start (times kept:
# make rebuilds what is older than its sources, as in the tree): the first
# build is then a link, not every object again.
mkdir -p "$work/src/build/asan"
[ -d build/asan/obj ] && cp -a build/asan/obj "$work/src/build/asan/"
[ -d build/bpf ] && cp -a build/bpf "$work/src/build/"
cd "$work/src" || exit 1
mkdir -p "$work/pristine"
for f in $FILES; do cp "$f" "$work/pristine/$(echo "$f" | tr / _)"; done
targets="build/asan/nfbox $(for s in $SUITES; do [ -e tests/unit/$s.c ] && echo build/asan/$s; [ -e tests/bpf/$s.c ] && echo build/asan/$s; done)"

# run_suites: 0 if every suite passes; else prints the first that fails.
run_suites() {
	local s bin
	for s in $SUITES; do
		case $s in
		test_golden) bin=tests/unit/test_golden.sh ;;
		*) bin=build/asan/$s ;;
		esac
		if ! NFBOX_BIN=$PWD/build/asan/nfbox NFBOX_BIN_RELEASE=$PWD/build/asan/nfbox timeout -k 5 120 "$bin" >"$work/out" 2>&1 ||
			grep -q '^FAIL ' "$work/out"; then
			echo "$s"
			return 1
		fi
	done
	return 0
}

echo "# building the unmutated tree"
make -s -j"$(nproc)" $targets >"$work/build.log" 2>&1 || { tail -20 "$work/build.log"; echo "mutants: the tree does not build"; exit 1; }
if killer=$(run_suites); [ -n "$killer" ]; then
	echo "mutants: $killer fails without a mutant: fix the tree first"
	tail -20 "$work/out"
	exit 1
fi

total=$(/usr/bin/python3 "$MUTATE" list $FILES | wc -l)
if [ -n "${NFBOX_MUTANTS_ONLY:-}" ]; then
	pick=$NFBOX_MUTANTS_ONLY # numbers of `tests/quality/mutate.py list`, to try again
elif [ "$N" = all ]; then
	pick=$(seq 0 $((total - 1)))
else
	pick=$(/usr/bin/python3 -c "import random; r = random.Random($SEED); print(*sorted(r.sample(range($total), min($N, $total))))")
fi
echo "# $total mutation sites in $FILES; trying $(echo $pick | wc -w) (seed $SEED)"

killed=0 survived=0 stillborn=0 equivalent=0
for n in $pick; do
	for f in $FILES; do cp "$work/pristine/$(echo "$f" | tr / _)" "$f"; done
	desc=$(/usr/bin/python3 "$MUTATE" apply "$n" $FILES) || { echo "mutant $n: cannot apply"; continue; }
	what=${desc%%$'\t'*}
	if ! make -s -j"$(nproc)" $targets >"$work/build.log" 2>&1; then
		stillborn=$((stillborn + 1))
		echo "stillborn $what (does not build)"
		continue
	fi
	if killer=$(run_suites); [ -n "$killer" ]; then
		killed=$((killed + 1))
		echo "killed    $what (by $killer)"
		continue
	fi
	# A known equivalent mutant: its file, line text and change match.
	line=${desc##*$'\t'}
	file=${what%%:*}
	change=$(sed -n "s/^[^ ]* [a-z-]* \(.*\)$/\1/p" <<<"$what")
	reason=$(awk -F'\t' -v f="$file" -v c="$change" -v l="$line" '$1 == f && $2 == l && $3 == c { print $4; exit }' "$EQUIV" 2>/dev/null)
	if [ -n "$reason" ]; then
		equivalent=$((equivalent + 1))
		echo "equivalent $what: $reason"
	else
		survived=$((survived + 1))
		echo "SURVIVED  $what"
		echo "          line: $line"
	fi
done
for f in $FILES; do cp "$work/pristine/$(echo "$f" | tr / _)" "$f"; done

counted=$((killed + survived))
pct=$([ "$counted" -gt 0 ] && echo $((100 * killed / counted)) || echo 0)
echo "# $stillborn did not build, $equivalent equivalent (not counted)"
echo "$killed killed of $counted ($pct%)"
[ "$pct" -ge "$TARGET" ]
