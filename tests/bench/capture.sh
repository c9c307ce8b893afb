#!/bin/bash
# Capture benchmark (root): nfbox capture (XDP + AF_XDP multi-buffer, pcapng)
# against tcpdump -w (AF_PACKET, TPACKET_V3) on the same veth pair, the same
# traffic and the same filesystem, for jumbo (9014-byte) and 64-byte frames.
#
#   tx namespace: tx0 198.51.100.1/24 --- veth, MTU 9000 --- rx namespace: rx0 203.0.113.2/24
#
# build/bench_txgen (AF_PACKET + PACKET_QDISC_BYPASS + sendmmsg) sends UDP
# frames 198.51.100.1:4000 -> 203.0.113.2:9 out of tx0, pinned to CPU 1; the
# capture tool runs on rx0, pinned to CPU 0, writing to a temp dir on /tmp.
# The rx namespace has no listener and no route back, so nothing but the
# sender's frames crosses the link (IPv6 is off: no ND/MLD either) and every
# packet in a file is one the sender sent.
#
# Per frame size: (a) the sender's top rate flat out with nothing capturing
# (the receiver's stack drops the frames); (b) each tool (nfbox, tcpdump,
# tcpdump -B) at a ladder of paced rates (BENCH_CAP_LADDER percent of that
# top) and flat out, then BENCH_CAP_STEPS bisection steps between its highest
# loss-free and lowest lossy rate. Per run: packets sent, what the tool says
# it captured, what the file holds (capinfos), loss = sent - file, where the
# drops were counted, the tool's CPU time.
# Read tests/bench/README.md (section 3) for what the numbers mean.
#
# Environment: BENCH_CAP_SIZES ("9014 64"), BENCH_CAP_SECS (1: traffic per
# run at the asked rate), BENCH_CAP_MAX_MB (1536: largest file per run),
# BENCH_CAP_LADDER ("10 25 50 75"), BENCH_CAP_STEPS (3), BENCH_CAP_TOOLS
# ("nfbox tcpdump tcpdump-B"), BENCH_CAP_BUF_MB (64: tcpdump -B),
# BENCH_CAP_HOLD (1: warm-memory holder, see below; 0 to measure without),
# BENCH_CAP_RUNS ("TOOL:SIZE:RATE ...": only those runs, rate 0 = flat out;
# for experiments). NFBOX_BIN: another nfbox binary.
# Exit status 1 only if a measurement could not be taken (or a file's count
# disagrees with its tool's); a missed target is printed as MISSED.
set -u
cd "$(dirname "$0")/../.." || exit 1
ROOT=$PWD
BIN=$ROOT/build
NFBOX=${NFBOX_BIN:-$BIN/nfbox}
TXGEN=$BIN/bench_txgen

SIZES=${BENCH_CAP_SIZES:-9014 64}
SECS=${BENCH_CAP_SECS:-1}
MAX_MB=${BENCH_CAP_MAX_MB:-1536}
LADDER=${BENCH_CAP_LADDER:-10 25 50 75}
STEPS=${BENCH_CAP_STEPS:-3}
TOOLS=${BENCH_CAP_TOOLS:-nfbox tcpdump tcpdump-B}
BUF_MB=${BENCH_CAP_BUF_MB:-64}
HOLD=${BENCH_CAP_HOLD:-1}

P=nfcap$$
NS_TX=$P-tx
NS_RX=$P-rx
TX_MAC=02:00:00:00:00:01
RX_MAC=02:00:00:00:00:02
TMP=
TOOL_PID=
TOOL_JOB=
FAILS=0
HZ=$(getconf CLK_TCK)

if [ "$(id -u)" -ne 0 ]; then
	echo "capture bench: needs root (network namespaces, XDP, AF_PACKET)" >&2
	exit 1
fi
for t in tcpdump capinfos taskset ip; do
	command -v $t >/dev/null || { echo "capture bench: $t is missing (packaging/install-deps.sh)" >&2; exit 1; }
done
[ -x "$NFBOX" ] || { echo "capture bench: $NFBOX is not built (make)" >&2; exit 1; }
[ -x "$TXGEN" ] || { echo "capture bench: $TXGEN is not built (make build/bench_txgen)" >&2; exit 1; }

fail() {
	echo "capture bench: FAILED: $*" >&2
	FAILS=$((FAILS + 1))
}

cleanup() {
	if [ -n "$TOOL_PID" ]; then
		kill -KILL "$TOOL_PID" 2>/dev/null
		wait "$TOOL_JOB" 2>/dev/null
	fi
	[ -n "${HOLD_PID:-}" ] && kill "$HOLD_PID" 2>/dev/null
	for ns in "$NS_TX" "$NS_RX"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	[ -n "$TMP" ] && rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- topology -------------------------------------------------------------
setup() {
	TMP=$(mktemp -d /tmp/nfbox-capbench.XXXXXX) || return 1
	for ns in "$NS_TX" "$NS_RX"; do
		ip netns add "$ns" || return 1
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
			net.ipv6.conf.default.disable_ipv6=1 || return 1
		ip -n "$ns" link set lo up
	done
	# Created inside the namespaces: no link ever exists in the host's.
	ip link add tx0 netns "$NS_TX" address $TX_MAC mtu 9000 type veth \
		peer name rx0 netns "$NS_RX" address $RX_MAC mtu 9000 || return 1
	ip -n "$NS_TX" addr add 198.51.100.1/24 dev tx0
	ip -n "$NS_RX" addr add 203.0.113.2/24 dev rx0
	ip -n "$NS_TX" link set tx0 up
	ip -n "$NS_RX" link set rx0 up
}
setup || { echo "capture bench: cannot build the namespaces" >&2; exit 1; }

CAP_PIN='' TX_PIN=''
if [ "$(nproc)" -ge 2 ]; then
	CAP_PIN="taskset -c 0"
	TX_PIN="taskset -c 1"
fi
FILE=$TMP/capture

# The warm-memory holder (bench_txgen --hold): on this VM kind the balloon's
# free page reporting hands memory that stays free ~2 s back to the host and
# the next touch of it is slow (the first line printed below measures it).
# The holder keeps HOLD_MB touched between runs and releases what a run will
# write just before its traffic starts. Both tools get the same treatment.
HOLD_MARGIN=640
HOLD_MB=$(((MAX_MB + HOLD_MARGIN + 63) / 64 * 64))
hold() { # fill|release MIB
	[ "$HOLD" = 1 ] || return 0
	echo "$1 $2" >&"${HOLDER[1]}" && read -r -t 30 _ _ _ <&"${HOLDER[0]}"
}
if [ "$HOLD" = 1 ]; then
	coproc HOLDER { exec "$TXGEN" --hold; }
	HOLD_PID=$HOLDER_PID
fi

# ---- measuring ------------------------------------------------------------
ROW='  %-9s %5s  %7s %8s %8s %9s %9s %7s  %-46s %4s %6s %5s\n'

now() { echo "$EPOCHREALTIME"; }
proc_cpu() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13}'; } # ticks, all threads
steal() { awk '$1 == "cpu" {print $9}' /proc/stat; }
link_stat() { ip netns exec "$1" cat "/sys/class/net/$2/statistics/$3"; }
num() { local v; v=$(sed -n "s/.*$1 \([0-9][0-9]*\).*/\1/p" "$2" | head -n 1); echo "${v:-0}"; }

# send SIZE N RATE: run the sender in the tx namespace; sets S_SENT S_SECS S_PPS S_ERR.
send() {
	local out
	out=$(ip netns exec "$NS_TX" $TX_PIN "$TXGEN" -q -i tx0 -d $RX_MAC -s "$1" -n "$2" -r "$3") || return 1
	S_SENT=$(sed -n 's/.*sent=\([0-9]*\).*/\1/p' <<<"$out")
	S_SECS=$(sed -n 's/.*secs=\([0-9.]*\).*/\1/p' <<<"$out")
	S_PPS=$(sed -n 's/.*pps=\([0-9]*\).*/\1/p' <<<"$out")
	S_ERR=$(sed -n 's/.*errors=\([0-9]*\).*/\1/p' <<<"$out")
	[ -n "$S_SENT" ] && [ -n "$S_PPS" ]
}

# frames SIZE RATE: frames for one run: SECS at RATE, capped at MAX_MB of file.
frames() {
	local n=$(($2 * SECS)) cap=$((MAX_MB * 1048576 / ($1 + 32)))
	[ "$n" -gt "$cap" ] && n=$cap
	[ "$n" -lt 1000 ] && n=1000
	echo $n
}

# baseline SIZE: the sender flat out, nothing capturing; sets TOP[SIZE].
declare -A TOP
baseline() {
	local size=$1 n best=0 r0 r1
	send "$size" 20000 0 || return 1 # probe, for N
	n=$(frames "$size" "$S_PPS")
	for _ in 1 2; do
		r0=$(link_stat "$NS_RX" rx0 rx_packets)
		send "$size" "$n" 0 || return 1
		r1=$(link_stat "$NS_RX" rx0 rx_packets)
		[ "$S_PPS" -gt "$best" ] && best=$S_PPS
		[ $((r1 - r0)) -eq "$S_SENT" ] || fail "no capture, $size bytes: rx0 received $((r1 - r0)) of $S_SENT"
		printf "$ROW" "none" "$size" "flat" "$S_SENT" "$S_PPS" \
			"-" "$((r1 - r0))" "-" "(rx0 received; its stack drops them)" "-" "-" "-"
	done
	TOP[$size]=$best
}

# start_tool TOOL: the capture on rx0 (CPU 0), writing FILE; waits for ready.
start_tool() {
	local tool=$1 ready pidf=$TMP/tool.pid
	rm -f "$pidf" "$TMP/tool.out"
	case $tool in
	nfbox)
		set -- "$NFBOX" capture --interface rx0 --file "$FILE"
		ready="capturing on"
		;;
	tcpdump)
		set -- tcpdump -i rx0 -w "$FILE"
		ready="listening on"
		;;
	tcpdump-B)
		set -- tcpdump -B $((BUF_MB * 1024)) -i rx0 -w "$FILE"
		ready="listening on"
		;;
	esac
	# ip netns exec forks: the inner sh writes the pid the tool will have.
	ip netns exec "$NS_RX" sh -c 'echo $$ >"$1"; shift; exec "$@"' sh "$pidf" $CAP_PIN "$@" \
		>"$TMP/tool.out" 2>&1 &
	TOOL_JOB=$!
	for _ in $(seq 200); do
		[ -s "$pidf" ] && grep -q "$ready" "$TMP/tool.out" 2>/dev/null && break
		kill -0 "$TOOL_JOB" 2>/dev/null || break
		sleep 0.05
	done
	TOOL_PID=$(cat "$pidf" 2>/dev/null)
	grep -q "$ready" "$TMP/tool.out" 2>/dev/null
}

stop_tool() {
	kill -INT "$TOOL_PID" 2>/dev/null
	for _ in $(seq 300); do
		kill -0 "$TOOL_JOB" 2>/dev/null || break
		sleep 0.05
	done
	kill -KILL "$TOOL_PID" 2>/dev/null
	wait "$TOOL_JOB" 2>/dev/null
	TOOL_PID=
}

# run_one TOOL SIZE RATE (0: flat out): one capture run; prints one row and
# sets R_PPS (achieved) and R_LOSS (packets, or -1 if the run failed).
declare -A RUNS
run_one() {
	local tool=$1 size=$2 rate=$3 n c0 c1 t0 t1 d0 d1 x0 x1 cpu us st filec toolc drops loss pct settle
	R_LOSS=-1 R_PPS=0
	if [ "$rate" = 0 ]; then n=$(frames "$size" "${TOP[$size]}"); else n=$(frames "$size" "$rate"); fi
	rm -f "$FILE"
	# The run's file plus a margin (a reporting pass that lands mid-run).
	local rel=$((n * (size + 32) / 1048576)) margin
	margin=$((rel / 2)); [ $margin -gt $HOLD_MARGIN ] && margin=$HOLD_MARGIN; [ $margin -lt 64 ] && margin=64
	hold fill "$HOLD_MB"
	if ! start_tool "$tool"; then
		fail "$tool did not start: $(tail -n 3 "$TMP/tool.out" | tr '\n' ' ')"
		stop_tool
		return
	fi
	hold release $((rel + margin))
	c0=$(proc_cpu "$TOOL_PID")
	t0=$(steal)
	d0=$(($(link_stat "$NS_RX" rx0 rx_dropped) + $(link_stat "$NS_TX" tx0 tx_dropped)))
	x0=$(now)
	if ! send "$size" "$n" "$rate"; then
		fail "bench_txgen ($tool, $size bytes, rate $rate)"
		stop_tool
		return
	fi
	# tcpdump (TPACKET_V3) hands a partly filled ring block to user space only
	# when its timer runs out (libpcap's 1000 ms timeout): wait for it.
	settle=0.3
	[ "$tool" != nfbox ] && settle=1.2
	sleep $settle
	c1=$(proc_cpu "$TOOL_PID")
	t1=$(steal)
	x1=$(now)
	d1=$(($(link_stat "$NS_RX" rx0 rx_dropped) + $(link_stat "$NS_TX" tx0 tx_dropped)))
	stop_tool
	local out=$TMP/tool.out
	if [ "$tool" = nfbox ]; then
		toolc=$(num "written" "$out")
		# Lost in the kernel: no fill-ring frame (rx_dropped; rx_fill_ring_empty_descs
		# counts the same events again for 1-buffer frames), rx ring full, bad descriptor.
		local kd=$(($(num rx_dropped "$out") + $(num rx_ring_full "$out") + $(num rx_invalid_descs "$out")))
		drops="xsk $kd (ring_full $(num rx_ring_full "$out"), no_fill $(num rx_dropped "$out")), queue $(num "queue drops" "$out")"
		# veth counts a failed XDP redirect (the xsk drops) as its own rx drop.
		d1=$((d1 - kd))
		[ "$(num "write drops" "$out")" != 0 ] && drops+=", write $(num "write drops" "$out")"
	else
		toolc=$(sed -n 's/^\([0-9]*\) packets captured.*/\1/p' "$out")
		drops="kernel $(sed -n 's/^\([0-9]*\) packets dropped by kernel.*/\1/p' "$out")"
	fi
	[ $((d1 - d0)) -gt 0 ] && drops+=", veth $((d1 - d0))"
	[ "${S_ERR:-0}" -gt 0 ] && drops+=", sends retried $S_ERR"
	filec=$(capinfos -c -M "$FILE" 2>/dev/null | sed -n 's/^Number of packets: *\([0-9]*\).*/\1/p')
	if [ -z "$filec" ] || [ -z "$toolc" ]; then
		fail "$tool, $size bytes, rate $rate: no count (tool said: $(tail -n 4 "$out" | tr '\n' ' '))"
		return
	fi
	[ "$filec" != "$toolc" ] && { fail "$tool: the file holds $filec packets, the tool counted $toolc"; drops+=" MISMATCH"; }
	loss=$((S_SENT - filec))
	pct=$(awk -v l="$loss" -v s="$S_SENT" 'BEGIN {printf "%.2f", 100 * l / s}')
	# The tool's utime+stime (all threads, its drain after the last frame
	# included) over the sending time, and per packet in the file. Steal: the
	# time the hypervisor took from both CPUs over the run, same scale.
	cpu=$(awk -v a="$c0" -v b="$c1" -v t="$S_SECS" -v hz="$HZ" 'BEGIN {printf "%.0f", 100 * (b - a) / hz / t}')
	us=$(awk -v a="$c0" -v b="$c1" -v n="$filec" -v hz="$HZ" 'BEGIN {if (n > 0) printf "%.2f", 1e6 * (b - a) / hz / n; else print "-"}')
	st=$(awk -v a="$t0" -v b="$t1" -v t="$(awk -v a="$x0" -v b="$x1" 'BEGIN {print b - a}')" -v hz="$HZ" 'BEGIN {printf "%.0f", 100 * (b - a) / hz / t}')
	printf "$ROW" "$tool" "$size" \
		"$([ "$rate" = 0 ] && echo flat || echo "$rate")" "$S_SENT" "$S_PPS" "$toolc" "$filec" "$pct" "$drops" "$cpu" "$us" "$st"
	R_LOSS=$loss R_PPS=$S_PPS R_US=$us
	RUNS[$tool-$size]+=" $rate:$S_PPS:$loss"
}

# ---- the benchmark --------------------------------------------------------
START=$SECONDS
fs=$(findmnt -n -o FSTYPE,SOURCE -T "$TMP" | tr -s ' ' | sed 's/ / on /')
echo "== capture: nfbox capture (XDP + AF_XDP copy mode, pcapng) vs tcpdump -w (AF_PACKET), veth MTU 9000, $(nproc) CPUs"
echo "   sender: bench_txgen, AF_PACKET + PACKET_QDISC_BYPASS + sendmmsg of prebuilt IPv4/UDP frames${CAP_PIN:+, pinned to CPU 1}"
echo "   capture: ${CAP_PIN:+pinned to CPU 0, }files to $TMP ($fs), deleted after each run; tcpdump: defaults (2 MiB"
echo "   buffer, snaplen 262144) and with -B $((BUF_MB * 1024)) ($BUF_MB MiB); nfbox: defaults (16384 UMEM frames per queue, 64 MiB writer queue)"
echo "   per run: ${SECS}s of traffic at the asked rate (files capped at $MAX_MB MiB); loss = sent - packets in the file (capinfos)"
echo "   cpu%: the tool's utime+stime (all threads) over the sending time, 100 = one CPU; us/pkt: the same per packet in the"
echo "   file; steal: hypervisor steal over the run, both CPUs (noise). Softirq time is not measured: this kernel samples it at"
echo "   the tick (two identical paced runs read 1% and 53%); the kernel's share is derived from flat-out rates below instead"
if [ "$HOLD" = 1 ]; then
	hold fill "$HOLD_MB"
	t0=$(now); dd if=/dev/zero of="$FILE" bs=1M count=1024 2>/dev/null; t1=$(now); rm -f "$FILE"
	hold release 1024
	t2=$(now); dd if=/dev/zero of="$FILE" bs=1M count=1024 2>/dev/null; t3=$(now); rm -f "$FILE"
	hold fill "$HOLD_MB"
	awk -v a="$t0" -v b="$t1" -v c="$t2" -v d="$t3" 'BEGIN {printf "   page cache write, 1 GiB by dd: %.1f GB/s into memory left idle, %.1f GB/s into memory just freed (the holder'"'"'s)\n", 1.074 / (b - a), 1.074 / (d - c)}'
	echo "   (this VM returns idle memory to the host: runs write into memory the holder released just before them)"
fi
echo "measuring..." >&2
echo
printf "$ROW" tool bytes rate sent "sent/s" "tool says" "in file" "loss%" "drops counted" "cpu%" "us/pkt" "steal"

# best_free TOOL SIZE: the highest achieved rate of a run without loss (0: none).
best_free() {
	printf '%s\n' ${RUNS[$1-$2]:-} | awk -F: '$3 == 0 && $2 > b {b = $2} END {print b + 0}'
}
# bounds TOOL SIZE: "LO HI" achieved rates: the highest loss-free, the lowest lossy above it.
bounds() {
	printf '%s\n' ${RUNS[$1-$2]:-} | awk -F: '
		NF == 3 {n++; r[n] = $2; l[n] = $3; if ($3 == 0 && r[n] > lo) lo = r[n]}
		END {for (i = 1; i <= n; i++) if (l[i] != 0 && r[i] > lo && (!hi || r[i] < hi)) hi = r[i]; print lo + 0, hi + 0}'
}
declare -A FLAT
if [ -n "${BENCH_CAP_RUNS:-}" ]; then # experiments: "TOOL:SIZE:RATE ..." (RATE 0: flat out), nothing else
	for r in $BENCH_CAP_RUNS; do
		IFS=: read -r tool size rate <<<"$r"
		[ -n "${TOP[$size]:-}" ] || baseline "$size" || fail "sender baseline, $size bytes"
		run_one "$tool" "$size" "$rate"
	done
	SIZES=
fi
for size in $SIZES; do
	baseline "$size" || { fail "sender baseline, $size bytes"; continue; }
	for pct in $LADDER 0; do
		rate=$(((TOP[$size] * pct / 100 + 500) / 1000 * 1000))
		for tool in $TOOLS; do
			run_one "$tool" "$size" "$rate"
			[ "$pct" = 0 ] && FLAT[$tool-$size]="$R_PPS:$R_LOSS:$R_US"
		done
	done
	for tool in $TOOLS; do
		for _ in $(seq "$STEPS"); do
			read -r lo hi < <(bounds "$tool" "$size")
			[ "$hi" -gt 0 ] || break # no loss anywhere: flat out is the answer
			mid=$((((lo + hi) / 2 + 500) / 1000 * 1000))
			[ "$mid" -le "$lo" ] || [ "$mid" -ge "$hi" ] && break
			run_one "$tool" "$size" "$mid"
		done
	done
	echo
done

# ---- results --------------------------------------------------------------
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a + 0 > 0 && b + 0 > 0) printf "%.1f", a / b; else print "n/a"}'; }
free_txt() { # TOOL SIZE: the loss-free rate, "<R" when even the slowest run lost
	local b lo
	[ -n "${RUNS[$1-$2]:-}" ] || { echo -; return; }
	b=$(best_free "$1" "$2")
	if [ "$b" -gt 0 ]; then
		# "=" marks a tool that lost nothing flat out: the sender set the figure.
		[ "$(flat_field "$1" "$2" 2)" = 0 ] && b="=$b"
		echo "$b"
		return
	fi
	lo=$(printf '%s\n' ${RUNS[$1-$2]:-} | awk -F: 'NF == 3 && (!m || $2 < m) {m = $2} END {print m + 0}')
	echo "<$lo"
}
# ratio_txt A B SIZE: A's loss-free rate over B's; ">R" when B lost at every
# rate tried (then over B's slowest run), n/a when A did.
ratio_txt() {
	local a b lo
	[ -n "${RUNS[$1-$3]:-}" ] && [ -n "${RUNS[$2-$3]:-}" ] || { echo n/a; return; }
	a=$(best_free "$1" "$3") b=$(best_free "$2" "$3")
	if [ "$a" -gt 0 ] && [ "$b" -eq 0 ]; then
		lo=$(printf '%s\n' ${RUNS[$2-$3]:-} | awk -F: 'NF == 3 && (!m || $2 < m) {m = $2} END {print m + 0}')
		echo ">$(ratio "$a" "$lo")"
		return
	fi
	ratio "$a" "$b"
}
xs() { if [ "$1" = n/a ]; then echo n/a; else echo "${1}x"; fi; }
flat_field() { # TOOL SIZE FIELD (1 pps, 2 loss, 3 us/pkt) of the flat-out run
	local v=${FLAT[$1-$2]:-}
	[ -n "$v" ] && cut -d: -f"$3" <<<"$v"
}
# Kernel-side cost per frame on the sender's CPU: veth runs the receive path
# (and so the XDP program and AF_XDP copy, or AF_PACKET's copy) in softirq on
# the CPU that sends, so flat out 1/rate is that CPU's whole cost per frame;
# its growth over the no-capture rate is what the capture adds there.
kcost() { # TOOL SIZE
	local p
	p=$(flat_field "$1" "$2" 1)
	awk -v p="${p:-0}" -v t="${TOP[$2]}" 'BEGIN {if (p > 0 && t > 0) printf "%.2f", 1e6 / p - 1e6 / t; else print "-"}'
}
echo "loss-free rate, packets/s: the highest rate a run lost nothing at (ladder, then up to $STEPS bisection steps);"
echo "  =R: lost nothing flat out, R is the sender's rate with that capture running; <R: lost even at R"
printf '  %5s %11s %10s %10s %11s %14s %16s\n' bytes "no capture" nfbox tcpdump "tcpdump -B" "nfbox/tcpdump" "nfbox/tcpdump -B"
for size in $SIZES; do
	[ -n "${TOP[$size]:-}" ] || continue
	printf '  %5s %11s %10s %10s %11s %14s %16s\n' "$size" "${TOP[$size]}" "$(free_txt nfbox "$size")" \
		"$(free_txt tcpdump "$size")" "$(free_txt tcpdump-B "$size")" \
		"$(xs "$(ratio_txt nfbox tcpdump "$size")")" "$(xs "$(ratio_txt nfbox tcpdump-B "$size")")"
done
echo
echo "cost per frame flat out, us: tool = the capture process's CPU per captured frame (CPU 0);"
echo "  kernel = 1/rate flat out with the capture - 1/rate without (the sender's CPU, where the veth receive path runs)"
printf '  %5s %18s %18s %18s\n' bytes "nfbox tool/kernel" "tcpdump tool/kern" "tcpdump -B t/k"
for size in $SIZES; do
	[ -n "${TOP[$size]:-}" ] || continue
	printf '  %5s %18s %18s %18s\n' "$size" \
		"$(flat_field nfbox "$size" 3) / $(kcost nfbox "$size")" \
		"$(flat_field tcpdump "$size" 3) / $(kcost tcpdump "$size")" \
		"$(flat_field tcpdump-B "$size" 3) / $(kcost tcpdump-B "$size")"
done
echo
# The targets are the jumbo frames' (the largest size measured, if jumbo).
J=$(printf '%s\n' $SIZES | sort -n | tail -n 1)
[ -n "$J" ] && [ "$J" -le 1514 ] && J=
if [ -n "$J" ] && [ -n "${TOP[$J]:-}" ]; then
	r=$(ratio_txt nfbox tcpdump "$J")
	v=$(awk -v r="${r#>}" 'BEGIN {if (r == "n/a") print "MISSED"; else if (r + 0 >= 3) print "met"; else print "MISSED"}')
	[ "${r:0:1}" = ">" ] && [ "$v" = MISSED ] && v="MISSED (a lower bound: tcpdump lost at every rate tried)"
	[ "$(flat_field nfbox "$J" 2)" = 0 ] && [ "$v" != met ] && v+=" (nfbox lost nothing flat out: the sender caps its figure)"
	echo "$J-byte frames: nfbox's loss-free rate ${r}x tcpdump's (target >= 3x) $v"
	rb=$(ratio_txt nfbox tcpdump-B "$J")
	v=$(awk -v r="${rb#>}" 'BEGIN {if (r == "n/a") print "MISSED"; else if (r + 0 >= 1.5) print "MET"; else print "MISSED"}')
	[ "$(flat_field nfbox "$J" 2)" = 0 ] && [ "$v" != MET ] && v+=" (nfbox lost nothing flat out: the sender caps its figure)"
	echo "$J-byte frames: nfbox's loss-free rate ${rb}x tcpdump -B's (target >= 1.5x, issue 14) $v"
	fp=$(flat_field nfbox "$J" 1) fl=$(flat_field nfbox "$J" 2)
	if [ -n "$fp" ] && [ "${fl:--1}" -ge 0 ]; then
		v=$([ "$fl" = 0 ] && echo met || echo MISSED)
		echo "$J-byte frames, sender flat out while nfbox captures: $fp packets/s ($(awk -v a="$fp" -v b="${TOP[$J]}" \
			'BEGIN {printf "%.0f", 100 * a / b}')% of its top without capture), lost $fl (target: zero loss) $v"
	else
		echo "$J-byte frames, sender flat out while nfbox captures: no measurement (target: zero loss) FAILED"
	fi
fi
for size in $SIZES; do
	[ "$size" = "$J" ] || [ -z "${TOP[$size]:-}" ] && continue
	echo "$size-byte frames (no target): nfbox $(free_txt nfbox "$size"), tcpdump $(free_txt tcpdump "$size") packets/s loss-free"
done
echo "capture benchmark: $((SECONDS - START)) s"
if [ "$FAILS" -ne 0 ]; then
	echo "capture bench: $FAILS measurement(s) FAILED"
	exit 1
fi
exit 0
