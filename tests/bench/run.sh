#!/bin/bash
# nfbox benchmarks (`make bench`, root): the classifier micro-benchmark, then
# forwarding through the appliance namespace of tests/lib/netns.sh with
#   none         no filter at all (no conntrack either)
#   nft-1        nftables: ct established,related accept + 1 rule
#   nft-linear   nftables: ct established,related accept + N rules, one by one
#   nft-set      nftables: ct established,related accept + the same N rules as
#                one TCP rule and one rule over a set of the N-1 UDP ports
#   nfbox        nfbox with the same N rules (established: accept)
#   nfbox-nft    the same nfbox policy with backend: nftables (one rule with
#                a port-to-counter map, table inet nfbox)
# Every filter drops what its rules do not accept (policy/default drop).
# The N rules: rule 0 accepts tcp/5201 (iperf3), rules 1..N-1 udp/10000+i;
# the UDP load goes to the LAST rule's port (the worst case for linear nft).
#
# Then the classifier's load: instructions the verifier walks and the CPU
# it takes (tests/bench/bench_verifier.c, beside the figures before issue
# 40). Then policy tooling at scale (tests/bench/policy.sh), dynamic-set
# changes (tests/bench/dynset.sh) and the engine at scale (memory, reloads
# of 1,000,000 prefixes and 65,536 rules, status during a reload:
# tests/bench/scale.sh), and flood defence: the early drop at XDP against
# the hook and nftables (tests/bench/early.sh), and a SYN flood against a
# port with and without synproxy (tests/bench/synflood.sh), and how fast a
# connection limit bans (tests/bench/connlimit.sh); an HA pair's failover
# with 1 s and 100 ms adverts (tests/bench/ha.sh), and how fast a ban on one
# node of a fleet is enforced on the others (tests/bench/fleet.sh, beside
# etcd's own put-to-watch).
# Loads: new-flow UDP (hping3 --udp --flood: the source port changes every
# packet) counted as packets/s received at the server; one established TCP
# stream (iperf3), Mbit/s. Variants are interleaved: each round samples every
# variant once; the median over rounds is reported. Then the capture benchmark
# (tests/bench/capture.sh): nfbox capture vs tcpdump -w, jumbo and 64-byte frames.
# Read tests/bench/README.md for what the numbers mean.
#
# Environment: BENCH_N (10000), BENCH_N2 (1000; empty to skip), BENCH_RUNS
# (5 rounds for none/nft-1/nft-set/nfbox), BENCH_RUNS_FULL (3 rounds for
# nft-linear, the N2 policy and TCP), BENCH_DUR (2 s per UDP sample),
# BENCH_TCP_DUR (3 s per iperf3 run), BENCH_SKIP_MICRO=1 (neither
# bench_classifier nor bench_verifier), BENCH_VARIANTS ("VARIANT:N ..." to
# run only those, for experiments),
# BENCH_SKIP_CAPTURE=1 (no capture benchmark; its own BENCH_CAP_* settings are
# described in tests/bench/capture.sh), BENCH_QUICK=1 (CI's short form,
# .ci/targets: none, nft-1, nfbox and nfbox-nft once, 200 rules, 1 s
# samples, without the other benchmarks; figures that say the benchmark
# runs, not what it measures).
# Exit status 1 if a measurement or a sanity check failed; a missed target
# is reported, not failed.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
. tests/lib/lib.sh
NS_PREFIX=nfbench$$
. tests/lib/netns.sh

QUICK=${BENCH_QUICK:-0}
[ "$QUICK" = 1 ] && : "${BENCH_N:=200}" "${BENCH_N2=}" "${BENCH_RUNS:=1}" "${BENCH_DUR:=1}" "${BENCH_TCP_DUR:=2}" \
	"${BENCH_SKIP_CAPTURE:=1}"
N=${BENCH_N:-10000}
N2=${BENCH_N2-1000}
RUNS=${BENCH_RUNS:-5}
RUNS_FULL=${BENCH_RUNS_FULL:-3}
[ "$RUNS_FULL" -gt "$RUNS" ] && RUNS_FULL=$RUNS
DUR=${BENCH_DUR:-2}
WARM=1
TCP_DUR=${BENCH_TCP_DUR:-3}
BIN=$ROOT/build
FAILS=0
HPING_PID=
IPERF_PID=

if [ "$(id -u)" -ne 0 ]; then
	echo "bench: needs root (network namespaces, BPF, nftables)" >&2
	exit 1
fi
for t in hping3 iperf3 nft taskset; do
	command -v $t >/dev/null || { echo "bench: $t is missing (packaging/install-deps.sh)" >&2; exit 1; }
done
[ -x "$NFBOX" ] || { echo "bench: $NFBOX is not built (make)" >&2; exit 1; }

fail() {
	echo "bench: FAILED: $*" >&2
	FAILS=$((FAILS + 1))
}

# ---- 1. the classifier ----------------------------------------------------
if [ "${BENCH_SKIP_MICRO:-0}" != 1 ]; then
	if [ -x "$BIN/bench_classifier" ]; then
		"$BIN/bench_classifier" || fail "bench_classifier"
	else
		fail "build/bench_classifier is not built (make build/bench_classifier)"
	fi
	echo
	# 1a. the classifier's load: what the verifier costs each start
	if [ -x "$BIN/bench_verifier" ]; then
		"$BIN/bench_verifier" || fail "bench_verifier"
	else
		fail "build/bench_verifier is not built (make build/bench_verifier)"
	fi
	echo
fi

# ---- 1b. policy tooling at scale --------------------------------------------
if [ "$QUICK" != 1 ]; then
	tests/bench/policy.sh "$BIN/nfbox" || fail "policy tooling benchmark (tests/bench/policy.sh)"
	tests/bench/dynset.sh "$BIN/nfbox" || fail "dynamic set benchmark (tests/bench/dynset.sh)"
	tests/bench/scale.sh "$BIN/nfbox" || fail "engine scale benchmark (tests/bench/scale.sh)"
	tests/bench/early.sh "$BIN" || fail "flood defence benchmark (tests/bench/early.sh)"
	tests/bench/synflood.sh "$BIN" || fail "SYN flood benchmark (tests/bench/synflood.sh)"
	tests/bench/connlimit.sh "$BIN" || fail "connection-limit benchmark (tests/bench/connlimit.sh)"
	tests/bench/fleet.sh "$BIN/nfbox" || fail "fleet benchmark (tests/bench/fleet.sh)"
	tests/bench/ha.sh "$BIN" || fail "HA failover benchmark (tests/bench/ha.sh)"
	echo
fi

# ---- 2. forwarding --------------------------------------------------------
bench_cleanup() {
	[ -n "$HPING_PID" ] && kill -INT "$HPING_PID" 2>/dev/null
	[ -n "$IPERF_PID" ] && kill "$IPERF_PID" 2>/dev/null
	in_a nft delete table inet nfbench 2>/dev/null
	ns_cleanup
}
ns_setup || { echo "bench: cannot build the namespaces" >&2; exit 1; }
trap bench_cleanup EXIT
trap 'exit 130' INT TERM

# The load generator on the second CPU when there is one (the forwarding
# work runs in softirq on the sending CPU: veth delivers to the local backlog).
PIN=
[ "$(nproc)" -ge 2 ] && PIN="taskset -c 1"

# Traffic never leaves the namespaces: static routes only, documentation
# prefixes only (netns.sh). No listener on the UDP ports: the server counts
# the datagrams at its interface (its ICMP port-unreachable replies are
# rate-limited to ~1/s by the kernel and pass back as conntrack "related").
rx_sample() { in_s sh -c 'date +%s.%N; cat /sys/class/net/s0/statistics/rx_packets'; }

median() { sort -n | awk '{v[NR]=$1} END {if (NR==0) print 0; else if (NR%2) print v[(NR+1)/2]; else print int((v[NR/2]+v[NR/2+1])/2)}'; }

# udp_sample PORT: received packets/s at the server over DUR seconds of a
# hping3 flood to PORT, after WARM seconds of the same flood.
udp_sample() {
	local port=$1 t0 r0 t1 r1 out
	# The pid of timeout itself (ip netns exec forks): SIGINT to it reaches hping3.
	rm -f "$NS_TMP/hping.pid"
	in_c sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$NS_TMP/hping.pid" \
		timeout -s INT $((WARM + DUR + 5)) $PIN hping3 --udp --flood -p "$port" -s 1024 -d 18 "$S4" \
		>"$NS_TMP/hping.log" 2>&1 &
	local job=$!
	for _ in $(seq 50); do [ -s "$NS_TMP/hping.pid" ] && break; sleep 0.02; done
	HPING_PID=$(cat "$NS_TMP/hping.pid" 2>/dev/null)
	sleep $WARM
	out=$(rx_sample)
	t0=${out%%$'\n'*} r0=${out##*$'\n'}
	sleep "$DUR"
	out=$(rx_sample)
	t1=${out%%$'\n'*} r1=${out##*$'\n'}
	[ -n "$HPING_PID" ] && kill -INT "$HPING_PID" 2>/dev/null
	wait "$job" 2>/dev/null
	HPING_PID=
	awk -v a="$r0" -v b="$r1" -v s="$t0" -v e="$t1" 'BEGIN {printf "%.0f\n", (b - a) / (e - s)}'
}

# dropped_ok: 200 datagrams to a port no rule accepts must not arrive.
dropped_ok() {
	local a b
	a=$(rx_sample | tail -n 1)
	in_c hping3 --udp -p 9 -s 3000 -d 18 -c 200 -i u500 "$S4" >/dev/null 2>&1
	sleep 0.3
	b=$(rx_sample | tail -n 1)
	[ $((b - a)) -lt 5 ] # a few ARP/ND frames may arrive
}

# tcp_sample: Mbit/s of one iperf3 run of TCP_DUR s (its first second omitted).
tcp_sample() {
	local g
	g=$(in_c timeout $((TCP_DUR + 10)) iperf3 -c "$S4" -p 5201 -t "$TCP_DUR" -O 1 -J 2>/dev/null |
		jq -r '.end.sum_received.bits_per_second // empty' 2>/dev/null)
	[ -n "$g" ] && awk -v b="$g" 'BEGIN {printf "%.0f\n", b / 1e6}'
}

# The same rules in each syntax.
nft_head() {
	cat <<EOF
table inet nfbench {
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state established,related accept
EOF
}
write_configs() { # N
	local n=$1 i d=$NS_TMP
	{
		nft_head
		echo "		udp dport $((10000 + n - 1)) accept"
		echo "	}"
		echo "}"
	} >"$d/nft-1-$n.nft"
	{
		nft_head
		echo "		tcp dport 5201 accept"
		for ((i = 1; i < n; i++)); do echo "		udp dport $((10000 + i)) accept"; done
		echo "	}"
		echo "}"
	} >"$d/nft-linear-$n.nft"
	{
		echo "table inet nfbench {"
		echo "	set ports {"
		echo "		type inet_service"
		echo "		elements = { $(seq -s ', ' 10001 $((10000 + n - 1))) }"
		echo "	}"
		nft_head | tail -n +2
		echo "		tcp dport 5201 accept"
		echo "		udp dport @ports accept"
		echo "	}"
		echo "}"
	} >"$d/nft-set-$n.nft"
	{
		echo "version: 1"
		echo "hooks:"
		echo "  forward: { default: drop }"
		echo "options:"
		echo "  established: accept"
		echo "rules:"
		echo "  - { name: iperf, service: tcp/5201, action: accept }"
		for ((i = 1; i < n; i++)); do echo "  - { name: u$((10000 + i)), service: udp/$((10000 + i)), action: accept }"; done
	} >"$d/nfbox-$n.yaml"
	sed 's/^  established: accept$/  established: accept\n  backend: nftables/' "$d/nfbox-$n.yaml" >"$d/nfbox-nft-$n.yaml"
}

# enable VARIANT N / disable VARIANT: put one filter in place or remove it.
enable() {
	local v=$1 n=$2 t0
	t0=$(date +%s.%N)
	case $v in
	none) ;;
	nft-*)
		in_a nft -f "$NS_TMP/$v-$n.nft" || { fail "nft -f $v-$n"; return 1; }
		;;
	nfbox | nfbox-nft)
		nfbox_start "$NS_TMP/$v-$n.yaml" --fresh >/dev/null || { fail "nfbox run ($v, $n rules)"; return 1; }
		;;
	esac
	LOAD_S=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}')
}
disable() {
	case $1 in
	nft-*) in_a nft delete table inet nfbench ;;
	nfbox | nfbox-nft) nfbox_stop ;;
	esac
}

# One sample of every variant per round, rounds repeated RUNS times: slow
# drifts and other load on the machine hit all variants alike.
declare -A UDP TCP LOADT
# run_variant VARIANT N ROUND
run_variant() {
	local v=$1 n=$2 round=$3 port=$((10000 + $2 - 1)) pps m key=$1-$2 t0=$EPOCHREALTIME
	enable "$v" "$n" || { UDP[$key]+=" FAILED"; return; }
	LOADT[$key]=$LOAD_S
	local ct0 ct1
	ct0=$(in_a cat /proc/sys/net/netfilter/nf_conntrack_count 2>/dev/null || echo 0)
	pps=$(udp_sample $port)
	ct1=$(in_a cat /proc/sys/net/netfilter/nf_conntrack_count 2>/dev/null || echo 0)
	# "none" must not pay for conntrack: no filter may have left it active.
	[ "$v" = none ] && [ $((ct1 - ct0)) -gt 1000 ] &&
		echo "  warning: conntrack was active during 'none' ($ct0 -> $ct1 entries)" >&2
	[ "${pps:-0}" -gt 0 ] 2>/dev/null || { fail "$key: nothing received"; pps=0; }
	UDP[$key]+=" $pps"
	if [ "$round" = 1 ]; then
		# The filter does filter, and nfbox counted the packets on the last rule.
		if [ "$v" != none ] && ! dropped_ok; then
			fail "$key let datagrams to an unlisted port through"
		fi
		if [ "$v" = nfbox ] || [ "$v" = nfbox-nft ]; then
			local hits
			hits=$(nfbox_count forward "u$port")
			[ "${hits:--1}" -gt 0 ] 2>/dev/null || fail "$key: the last rule counted no packet ($hits)"
		fi
	fi
	if [ "$round" -le "$RUNS_FULL" ] && [ "$n" = "$N" ] && [[ " none nft-linear nfbox " == *" $v "* ]]; then
		m=$(tcp_sample)
		[ -n "$m" ] || { fail "$key: iperf3"; m=0; }
		TCP[$key]+=" $m"
	fi
	disable "$v"
	printf '  round %s %-11s %6s rules: UDP %7s packets/s%s (%.1fs)\n' "$round" "$v" "$n" "$pps" \
		"${m:+, TCP $m Mbit/s}" "$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {print b - a}')" >&2
}

med() { printf '%s\n' $1 | median; }

pct() { awk -v a="$1" -v b="$2" 'BEGIN {if (a+0 > 0 && b+0 > 0) printf "%.1f", 100 * a / b; else print "n/a"}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a+0 > 0 && b+0 > 0) printf "%.1f", a / b; else print "n/a"}'; }
verdict() { # VALUE OP TARGET
	awk -v v="$1" -v t="$3" -v op="$2" 'BEGIN {if (v == "n/a") print "FAILED"; else if ((op == ">=" && v + 0 >= t + 0)) print "MET"; else print "MISSED"}'
}

START=$SECONDS
echo "== forwarding: client -> appliance -> server (veth, $(nproc) CPUs), median of $RUNS rounds"
echo "   ($RUNS_FULL for nft-linear, the $N2-rule policy and TCP); every round samples each variant once"
echo "   UDP: hping3 --udp --flood, 46-byte IP datagrams, source port +1 per packet (new flows),"
echo "   to the last rule's port; received packets/s at the server over ${DUR}s after ${WARM}s warm-up"
echo "   TCP: one iperf3 stream, ${TCP_DUR}s (first second omitted); filters drop what they do not accept"
echo "   'load s': time to put the filter in place (nft -f, or nfbox run until ready)"
echo "measuring..." >&2
write_configs "$N"
[ -n "$N2" ] && write_configs "$N2"
in_s true
# Warm the path (ARP, routes) before anything is timed.
in_c ping -c 2 -i 0.2 -W 1 "$S4" >/dev/null || fail "no path client -> server"

in_s iperf3 -s -p 5201 >/dev/null 2>&1 &
IPERF_PID=$!
wait_listen in_s 5201 || fail "iperf3 server did not start"

# nft-1 and nfbox side by side in each round (the pair of the >= 90% target).
VARIANTS="none:$N nft-1:$N nfbox:$N nft-set:$N nfbox-nft:$N nft-linear:$N"
[ -n "$N2" ] && VARIANTS+=" nfbox:$N2 nft-set:$N2 nfbox-nft:$N2 nft-linear:$N2"
[ "$QUICK" = 1 ] && VARIANTS="none:$N nft-1:$N nfbox:$N nfbox-nft:$N"
VARIANTS=${BENCH_VARIANTS:-$VARIANTS} # for experiments: "VARIANT:N ..."
# The fast variants get RUNS rounds; the slow or secondary ones (nft-linear,
# the N2 policy) and the TCP stream get RUNS_FULL (the samples are steadier).
CORE=" none:$N nft-1:$N nfbox:$N nft-set:$N nfbox-nft:$N "
for round in $(seq "$RUNS"); do
	for vn in $VARIANTS; do
		[ "$round" -gt "$RUNS_FULL" ] && [[ "$CORE" != *" $vn "* ]] && continue
		run_variant "${vn%%:*}" "${vn##*:}" "$round"
	done
done
kill "$IPERF_PID" 2>/dev/null
wait "$IPERF_PID" 2>/dev/null
IPERF_PID=

declare -A PPS MBPS
for vn in $VARIANTS; do
	k=${vn%%:*}-${vn##*:}
	PPS[$k]=$(med "${UDP[$k]:-0}")
	[ -n "${TCP[$k]:-}" ] && MBPS[$k]=$(med "${TCP[$k]}")
done

one=${PPS[nft-1-$N]:-}
echo
printf '%-11s %6s %14s %9s %9s %9s  %s\n' variant rules "UDP packets/s" "vs nft-1" "vs none" "load s" "samples"
row() { # VARIANT N
	local k=$1-$2 p=${PPS[$1-$2]:-n/a} r=$2
	[ "$1" = none ] && r=-
	[ "$1" = nft-1 ] && r=1
	printf '%-11s %6s %14s %8s%% %8s%% %9s  %s\n' "$1" "$r" "$p" "$(pct "$p" "$one")" "$(pct "$p" "${PPS[none-$N]:-}")" \
		"${LOADT[$k]:--}" "$(u=${UDP[$k]:-}; echo "${u# }")"
}
for vn in $VARIANTS; do row "${vn%%:*}" "${vn##*:}"; done
echo
printf '%-11s %6s %14s %9s  %s\n' variant rules "TCP Mbit/s" "vs none" "samples"
for v in none nft-linear nfbox; do
	k=$v-$N
	printf '%-11s %6s %14s %8s%%  %s\n' "$v" "$([ "$v" = none ] && echo - || echo "$N")" "${MBPS[$k]:-n/a}" \
		"$(pct "${MBPS[$k]:-0}" "${MBPS[none-$N]:-0}")" "$(t=${TCP[$k]:-}; echo "${t# }")"
done
echo
r1=$(pct "${PPS[nfbox-$N]:-}" "$one")
rl=$(ratio "${PPS[nfbox-$N]:-}" "${PPS[nft-linear-$N]:-}")
paired=$(paste <(printf '%s\n' ${UDP[nfbox-$N]:-}) <(printf '%s\n' ${UDP[nft-1-$N]:-}) |
	awk '$1 > 0 && $2 > 0 {printf "%.0f\n", 1000 * $1 / $2}' | median | awk '{printf "%.1f", $1 / 10}')
echo "nfbox ($N rules) vs nftables with 1 rule, new-flow UDP: $r1% (target >= 90%) $(verdict "$r1" '>=' 90);" \
	"median of the per-round ratios: $paired%"
echo "nfbox ($N rules) vs nftables with $N linear rules, new-flow UDP: ${rl}x (target >= 10x) $(verdict "$rl" '>=' 10)"
if [ -n "$N2" ]; then
	r2=$(pct "${PPS[nfbox-$N2]:-}" "$one")
	rl2=$(ratio "${PPS[nfbox-$N2]:-}" "${PPS[nft-linear-$N2]:-}")
	echo "nfbox ($N2 rules): ${r2}% of nftables with 1 rule; ${rl2}x nftables with $N2 linear rules"
fi
for n in $N $N2; do
	[ -n "${PPS[nfbox-nft-$n]:-}" ] || continue
	echo "nfbox backend nftables ($n rules): $(pct "${PPS[nfbox-nft-$n]:-}" "${PPS[nft-set-$n]:-}")% of hand-written nftables with a set," \
		"$(pct "${PPS[nfbox-nft-$n]:-}" "${PPS[nfbox-$n]:-}")% of nfbox's BPF backend, $(ratio "${PPS[nfbox-nft-$n]:-}" "${PPS[nft-linear-$n]:-}")x nftables linear" \
		"(load $(echo "${LOADT[nfbox-nft-$n]:-?}") s vs $(echo "${LOADT[nft-set-$n]:-?}") s for nft -f)"
done
rt=$(pct "${MBPS[nfbox-$N]:-0}" "${MBPS[nft-linear-$N]:-0}")
echo "established TCP stream: nfbox $(pct "${MBPS[nfbox-$N]:-0}" "${MBPS[none-$N]:-0}")% of no filter, ${rt}% of nftables linear"
echo "forwarding benchmark: $((SECONDS - START)) s"

# ---- 3. capture -----------------------------------------------------------
# nfbox capture vs tcpdump -w on a veth pair of its own: tests/bench/capture.sh
# builds its two namespaces, sender and temp files and removes them on exit
# (the forwarding namespaces above sit idle meanwhile).
if [ "${BENCH_SKIP_CAPTURE:-0}" != 1 ]; then
	echo
	tests/bench/capture.sh || fail "capture benchmark (tests/bench/capture.sh)"
fi
if [ "$FAILS" -ne 0 ]; then
	echo "bench: $FAILS measurement(s) FAILED"
	exit 1
fi
exit 0
