#!/bin/bash
# HA failover (issue 30): an nfbox pair in namespaces (tests/lib/hapair.sh,
# the topology of test_ha). The client opens a UDP and a TCP flow to the
# server, after which only the server sends, a numbered line every 10 ms on
# each: a node without the flows' state drops them. The primary loses its
# links (both its switch ports down); measured, to the millisecond: the
# time to the first line of each flow that arrives through the backup (for
# UDP, the first reply; TCP waits for the server's retransmission), and
# the new master's commit (conntrackd -c, from its log: ms after
# keepalived's notice). Then the links come back and the primary takes
# over again (preempt-delay 1) before the next run. For each backend and
# advert 1s and 100ms, printed side by side; the flows must come through
# intact (the TCP stream without a gap or a reset, the UDP socket the
# same). Target: under 1 s with 100 ms adverts.
# Last, once, the bpf pair with 100 ms adverts when the backup holds
# BENCH_HA_HELD (20,000; empty: not measured) more connections: the commit
# grows with them (conntrackd writes them to the kernel one by one).
# Usage: tests/bench/ha.sh [BUILD_DIR] (root). BENCH_HA_RUNS (5 a case).
set -u
cd "$(dirname "$0")/../.."
BIN=${1:-build}
. tests/lib/lib.sh
. tests/lib/hapair.sh
NET=$PWD/tests/lib/net.py
NFBOX=$(realpath "$BIN/nfbox")
RELEASE=$NFBOX
RUNS=${BENCH_HA_RUNS:-5}
HELD=${BENCH_HA_HELD-20000}
BASE=nfbha$$
TOP=$(mktemp -d /tmp/nfbox-bha.XXXXXX)
declare -A PID=() FIRST=() TCPF=() COMMIT=() BROKEN=()
FAILS=0
K=0

for prog in keepalived conntrackd; do
	command -v $prog >/dev/null || PATH=$PATH:/usr/sbin:/sbin
	command -v $prog >/dev/null || { echo "bench: FAILED: $prog is not installed (packaging/install-deps.sh)" >&2; exit 1; }
done
cleanup() {
	HURRY=1 teardown 2>/dev/null
	rm -rf "$TOP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
fail() {
	echo "bench: FAILED: $*" >&2
	FAILS=$((FAILS + 1))
}

# The first line of PROTO after the outage that began at T (a time of the
# watch file; the first after T that follows 50 ms without one: lines
# still on their way at T come before), less T, in ms.
first_after() {
	awk -v p="$1" -v t="$2" '$1 != p { next }
		$2 > t && last != "" && $2 - last >= 0.05 { printf "%.0f", ($2 - t) * 1000; exit }
		{ last = $2 }' "$TMP/watch"
}
came() { [ -n "$(first_after udp "$1")" ] && [ -n "$(first_after tcp "$1")" ]; }
# A line of each after T.
flowing() { awk -v t="$1" '$2 > t { seen[$1] = 1 } END { exit !(seen["udp"] && seen["tcp"]) }' "$TMP/watch"; }
# The TCP stream's numbers in order, none missing (TCP repeats what was
# lost; a reset or a new connection would start again at 1 or stop).
tcp_whole() { awk '$1 == "tcp" { if (n && $3 != n + 1) bad = 1; n = $3 } END { exit bad || !n }' "$TMP/watch"; }
# The new master's commit: "... (A ms; B ms after keepalived's notice)".
commit_ms() { sed -n "s/.*conntrackd -c: .*; \([0-9]*\) ms after keepalived's notice).*/\1/p" "$TMP/n2/err" | tail -n 1; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "" }'; }
range() { printf '%s\n' "$@" | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "-" hi }'; }
secs() { awk -v m="$1" 'BEGIN { if (m == "") print "n/a"; else printf "%.2f s", m / 1000 }'; }

# bench_case BACKEND ADVERT RUNS [HELD]: a pair, RUNS failovers and
# failbacks; with HELD, that many more connections (UDP, each from another
# port: hping3) go through the primary first, and the backup holds them.
bench_case() {
	bench_pair "$@"
	HURRY=1 teardown
}
bench_pair() {
	local be=$1 key=$1-$2${4:+-$4} t0 u t c i
	K=$((K + 1))
	P=$BASE-$K SW=$P-sw C=$P-c S=$P-s TMP=$TOP/$K ADVERT=$2
	mkdir -p "$TMP"
	topology && node 1 && node 2 || { fail "$key: cannot build the namespaces"; return; }
	start 1 "$be" plain && start 2 "$be" plain || { fail "$key: nfbox run: $(tail -n 3 "$TMP"/n*/err)"; return; }
	wait_role 1 master 20 && wait_role 2 backup 10 || { fail "$key: no election"; return; }
	(ip netns exec $S "$NET" push-serve 5000 3600 0.01 >"$TMP/serve" 2>&1 &)
	wait_until 5 eval "ip netns exec $S ss -lntu | grep -q ':5000 '"
	(ip netns exec $C "$NET" push-watch 198.51.100.10 5000 3600 "$TMP/watch" >/dev/null 2>&1 &)
	wait_until 5 flowing 0 || { fail "$key: no flow through fw1"; return; }
	[ -n "${4:-}" ] && ip netns exec $C hping3 --udp -p 9 -s 1024 -i u20 -c "$4" 198.51.100.10 >/dev/null 2>&1
	for i in $(seq "$3"); do
		wait_until 30 external_at_least 2 $((2 + ${4:-0})) ||
			{ fail "$key run $i: fw2 does not hold the flows ($(external 2))"; return; }
		t0=$EPOCHREALTIME
		ip -n $SW link set p1l down
		ip -n $SW link set p1w down
		if ! wait_until 15 came "$t0"; then
			fail "$key run $i: the flows did not come back through fw2 (fw2 $(hq 2 '"ha":\{"role":"([a-z]+)"'))"
			return
		fi
		u=$(first_after udp "$t0") t=$(first_after tcp "$t0")
		wait_until 2 eval '[ -n "$(commit_ms)" ]'
		c=$(commit_ms)
		FIRST[$key]+=" $u" TCPF[$key]+=" $t" COMMIT[$key]+=" ${c:-?}"
		printf '  %-8s advert %-5s%s run %s: UDP %5s ms, TCP %5s ms, commit %s ms after the notice\n' "$be" "$2" \
			"${4:+ (+$4 held)}" "$i" "$u" "$t" "${c:-?}" >&2
		: >"$TMP/n2/err"
		ip -n $SW link set p1l up
		ip -n $SW link set p1w up
		wait_role 1 master 20 && t0=$EPOCHREALTIME && wait_until 10 flowing "$t0" ||
			{ fail "$key run $i: no failback"; return; }
	done
	tcp_whole && [ "$(grep -c '^peer ' "$TMP/serve")" = 2 ] || BROKEN[$key]=1
}

echo "== HA failover: the primary loses its links -> the first reply through the backup"
echo "   (a UDP and a TCP flow opened before; then only the server sends, a line every 10 ms each;"
echo "   median of $RUNS runs, min-max; commit: conntrackd -c done, after keepalived's notice)"
echo "measuring..." >&2
START=$SECONDS
for be in bpf nftables; do
	for adv in 1s 100ms; do bench_case $be $adv "$RUNS"; done
done
[ -n "$HELD" ] && bench_case bpf 100ms 1 "$HELD"
printf '%-9s %-20s %-24s %-24s %s\n' backend advert "UDP first reply" "TCP first line" "commit (ms)"
for k in bpf-1s bpf-100ms nftables-1s nftables-100ms ${HELD:+bpf-100ms-$HELD}; do
	[[ $k == *-*-* ]] && a="${k#*-}" && a="${a%-*} +$HELD held" || a=${k#*-}
	# shellcheck disable=SC2086
	printf '%-9s %-20s %-24s %-24s %s\n' "${k%%-*}" "$a" "$(secs "$(median ${FIRST[$k]:-})") ($(range ${FIRST[$k]:-}) ms)" \
		"$(secs "$(median ${TCPF[$k]:-})") ($(range ${TCPF[$k]:-}) ms)" "$(median ${COMMIT[$k]:-})"
done
echo
printf '%-9s %-14s %-14s %s\n' backend "advert 1s" "advert 100ms" "flows intact"
for be in bpf nftables; do
	# shellcheck disable=SC2086
	printf '%-9s %-14s %-14s %s\n' $be "$(secs "$(median ${FIRST[$be-1s]:-})")" "$(secs "$(median ${FIRST[$be-100ms]:-})")" \
		"$([ -z "${BROKEN[$be-1s]:-}${BROKEN[$be-100ms]:-}" ] && echo yes || echo NO)"
done
for be in bpf nftables; do
	# shellcheck disable=SC2086
	m=$(median ${FIRST[$be-100ms]:-})
	v=MISSED
	[ -n "$m" ] && [ "$m" -lt 1000 ] && [ -z "${BROKEN[$be-100ms]:-}" ] && v=MET
	[ -z "$m" ] && v=FAILED
	echo "failover with 100 ms adverts, $be: $(secs "$m") to the first reply, flows intact (target under 1 s) $v"
done
echo "HA failover benchmark: $((SECONDS - START)) s"
[ "$FAILS" -eq 0 ]
