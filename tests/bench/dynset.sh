#!/bin/bash
# Dynamic sets (`nfbox set`, root): how long a change takes until it is
# enforced, with each backend, beside nftables' own command on a plain
# interval set with timeouts (the peer: what an operator would script
# without nfbox). Targets from issue 13: one add under 10 ms, 100,000 adds
# under 1 s. A change is enforced when the command returns (the daemon
# answers after the kernel took it), so the command's wall time is the
# figure; the median and the 95th percentile of 50 single adds, and one bulk
# add of 100,000 IPv4 /32 from standard input (nft: `nft -f` of a file with
# them). Runs in a network namespace of its own.
#
# Usage: tests/bench/dynset.sh [NFBOX]   (default build/nfbox)
set -u
cd "$(dirname "$0")/../.."
NFBOX=$(realpath "${1:-build/nfbox}")
NS=nfbdyn$$
tmp=$(mktemp -d /tmp/nfbox-bench-dynset.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
ip netns add "$NS" || exit 1
ip -n "$NS" link set lo up

awk 'BEGIN { for (i = 0; i < 100000; i++) printf "10.%d.%d.%d\n", int(i / 65536), int(i / 256) % 256, i % 256 }' >"$tmp/bulk.txt"
ms() { /usr/bin/python3 -c "print('%.2f' % (($2 - $1) * 1000))"; }
now() { date +%s.%N; }
# stats of the numbers on stdin: "median p95"
stats() { sort -n | awk '{ v[NR] = $1 } END { printf "%.2f %.2f\n", v[int((NR + 1) / 2)], v[int(NR * 0.95 + 0.5)] }'; }
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { print (v + 0 < t + 0) ? "MET" : "MISSED" }'; }

run_backend() { # bpf|nftables
	local b=$1 i t0 t1
	printf 'version: 1\nsets:\n  blocked: { dynamic: true }\nhooks:\n  input: { default: accept }\nrules:\n  - { name: drop-blocked, hook: input, from: blocked, action: drop }\noptions: { backend: %s }\n' "$b" >"$tmp/p.yaml"
	: >"$tmp/out"
	ip netns exec "$NS" "$NFBOX" run --policy "$tmp/p.yaml" --socket "$tmp/s.sock" --no-pin \
		--state-dir "$tmp/state-$b" >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	for _ in $(seq 100); do grep -q '^ready$' "$tmp/out" && break; sleep 0.1; done
	for i in $(seq 50); do
		t0=$(now)
		"$NFBOX" set add blocked "192.0.2.$i" --socket "$tmp/s.sock" >/dev/null || echo "add failed" >&2
		t1=$(now)
		ms "$t0" "$t1"
	done | stats >"$tmp/single"
	t0=$(now)
	"$NFBOX" set add blocked --file - --socket "$tmp/s.sock" <"$tmp/bulk.txt" >/dev/null || echo "bulk add failed" >&2
	t1=$(now)
	bulk=$(ms "$t0" "$t1")
	kill "$pid"
	wait "$pid" 2>/dev/null
	pid=
	read -r med p95 <"$tmp/single"
	printf '%-28s %10s %10s %12s   %s / %s\n' "nfbox set ($b)" "$med" "$p95" "$bulk" \
		"$(verdict "$p95" 10)" "$(verdict "$bulk" 1000)"
}

run_nft() {
	local i t0 t1
	ip netns exec "$NS" nft add table inet bench
	ip netns exec "$NS" nft add set inet bench s '{ type ipv4_addr; flags interval,timeout; }'
	for i in $(seq 50); do
		t0=$(now)
		ip netns exec "$NS" nft add element inet bench s "{ 192.0.2.$i timeout 1h }"
		t1=$(now)
		ms "$t0" "$t1"
	done | stats >"$tmp/single"
	{ printf 'add element inet bench s { '; paste -sd, "$tmp/bulk.txt"; printf ' }\n'; } >"$tmp/bulk.nft"
	t0=$(now)
	ip netns exec "$NS" nft -f "$tmp/bulk.nft"
	t1=$(now)
	read -r med p95 <"$tmp/single"
	printf '%-28s %10s %10s %12s   (peer)\n' "nft add element (peer)" "$med" "$p95" "$(ms "$t0" "$t1")"
}

echo "== dynamic sets: a change until it is enforced (ms)"
printf '%-28s %10s %10s %12s   %s\n' "" "1 add med" "1 add p95" "100,000 adds" "target <10 ms / <1000 ms"
run_backend bpf
run_backend nftables
run_nft
