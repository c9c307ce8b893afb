#!/bin/bash
# nfbox capture: AF_XDP multi-buffer capture to pcapng on an MTU 9000 veth.
#
#   tx namespace  ctx0 ----- ccap0  capture namespace (nfbox capture runs here)
#
# Frames are sent raw (AF_PACKET, tests/lib/frames.py) from the tx side with
# deterministic pseudo-random payloads; frames.py also reads the pcapng back,
# block by block, and compares every packet with what was sent.
#  1. Sizes: 64 .. 9014-byte frames around the 3840-byte buffer boundaries (a
#     4096-byte UMEM frame minus 256 bytes of headroom), so 1-, 2- and
#     3-descriptor packets all occur: the file has each frame byte for byte,
#     in order; tshark reads it cleanly; the multi-buffer and descriptor
#     counters are what the sizes imply; nanosecond resolution, if_name;
#     --snaplen cuts a multi-buffer packet at the right byte.
#  2. Filters in the kernel: proto/service/min-length, from/to prefixes
#     (IPv4 and IPv6), and the stack keeps working (ARP, ping, ping -6)
#     beside a udp/9000 capture; beside a capture of every IP frame ARP still
#     works (non-IP frames pass).
#  3. Ends: --count, --duration, SIGINT and SIGTERM while traffic flows:
#     each leaves a complete file holding what the counters say; two rx
#     queues (a socket each) both deliver; the interface deleted under a
#     capture ends it by itself.
#  4. Rotation by size: exactly keep files, none above the size, the newest
#     packets continuous up to the last frame sent.
#  5. A full disk (2 MiB tmpfs, 10 MiB of traffic): write drops and ENOSPC
#     reported, every packet accounted for (also when stopped while frames
#     still arrive), the file still readable.
#  6. Safety: a symlink at --file is refused, the file is 0640 whatever the
#     umask, a stale file's hard link is not written through, a second
#     capture to the same file does not take it from the first, bad --match
#     and options are usage errors pointing at the mistake.
#  7. The sanitizer build (tests/run.sh) reports nothing on any run.
# Only documentation addresses; two namespaces of its own; a trap removes
# them, the tmpfs and the temporary files on any exit (NFBOX_KEEP_TMP=1
# keeps the files, for a look at what failed).
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/lib.sh
FRAMES=$PWD/tests/lib/frames.py
PY=/usr/bin/python3
TX=nfbcap$$-tx CAP=nfbcap$$-cap
IF_TX=ctx0 IF_CAP=ccap0
BUF=3840 # bytes of frame per AF_XDP descriptor in copy mode
TMP='' CAP_PID='' CAP_RC='' SND_PID='' CAP_MAC=
RUNS=()

cleanup() {
	for p in $CAP_PID $SND_PID; do kill -9 "$p" 2>/dev/null; done
	for ns in "$TX" "$CAP"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	if [ -n "$TMP" ]; then
		umount "$TMP/full" 2>/dev/null
		if [ -n "${NFBOX_KEEP_TMP:-}" ]; then
			echo "# kept $TMP" >&2
		else
			rm -rf "$TMP"
		fi
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

for tool in tshark capinfos "$PY"; do
	if ! command -v "$tool" >/dev/null; then
		t_skip capture "$tool is not installed"
		t_done
	fi
done
if [ "$(id -u)" -ne 0 ]; then
	t_skip capture "needs root (namespaces, XDP, AF_XDP)"
	t_done
fi

in_tx() { ip netns exec "$TX" "$@"; }
in_cap() { ip netns exec "$CAP" "$@"; }

# Two quiet namespaces: IPv6 off until a case wants it, so that nothing but
# the test's own frames crosses the link (no MLD, no router solicitations).
setup() {
	TMP=$(mktemp -d /tmp/nfbox-cap.XXXXXX) || return 1
	for ns in "$TX" "$CAP"; do
		ip netns add "$ns" || return 1
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 \
			net.ipv6.conf.default.disable_ipv6=1 || return 1
		ip -n "$ns" link set lo up
	done
	ip link add "$IF_TX" netns "$TX" type veth peer name "$IF_CAP" netns "$CAP" || return 1
	ip -n "$TX" link set "$IF_TX" mtu 9000 up || return 1
	ip -n "$CAP" link set "$IF_CAP" mtu 9000 up || return 1
	CAP_MAC=$(in_cap cat /sys/class/net/$IF_CAP/address)
}
if ! setup; then
	t_fail setup "cannot build the namespaces"
	t_done
fi

# ---- helpers -------------------------------------------------------------

# cap_start NAME FILE [capture options]: start `nfbox capture` on the capture
# side (stdout and stderr in $TMP/NAME.out, .err); wait for "capturing on".
cap_start() {
	local name=$1 file=$2
	shift 2
	RUNS+=("$name")
	# ip netns exec execs nfbox: $! is nfbox itself, for signals.
	ip netns exec "$CAP" "$NFBOX" capture --interface "$IF_CAP" --file "$file" "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" &
	CAP_PID=$!
	for _ in $(seq 200); do
		grep -q '^capturing on ' "$TMP/$name.out" && return 0
		kill -0 "$CAP_PID" 2>/dev/null || break
		sleep 0.05
	done
	cap_wait 2
	return 1
}

# cap_wait SECONDS: wait for the capture to end; CAP_RC is its exit status,
# "hung" if it had to be killed.
cap_wait() {
	local i
	[ -n "$CAP_PID" ] || return 0
	for ((i = 0; i < $1 * 20; i++)); do
		kill -0 "$CAP_PID" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$CAP_PID" 2>/dev/null; then
		kill -9 "$CAP_PID" 2>/dev/null
		wait "$CAP_PID" 2>/dev/null
		CAP_RC=hung
	else
		wait "$CAP_PID"
		CAP_RC=$?
	fi
	CAP_PID=
}

cap_stop() { # SIGNAL
	kill -"$1" "$CAP_PID" 2>/dev/null
	cap_wait 10
}

# cap_run NAME [nfbox capture arguments]: run to the end in the foreground.
cap_run() {
	local name=$1
	shift
	RUNS+=("$name")
	ip netns exec "$CAP" timeout 20 "$NFBOX" capture "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	CAP_RC=$?
}

# send NAME [frames.py send options] < SPEC: send the frames; manifest in
# $TMP/NAME.sent.
send() {
	local name=$1
	shift
	if ! in_tx "$FRAMES" send "$IF_TX" "$CAP_MAC" "$TMP/$name.sent" "$@" >"$TMP/$name.send" 2>&1; then
		echo "    sender failed: $(tail -n 3 "$TMP/$name.send")"
		return 1
	fi
}

# send_bg NAME SPEC [options]: the same in the background (SND_PID).
send_bg() {
	local name=$1
	echo "$2" >"$TMP/$name.spec"
	shift 2
	ip netns exec "$TX" "$FRAMES" send "$IF_TX" "$CAP_MAC" "$TMP/$name.sent" "$@" \
		<"$TMP/$name.spec" >"$TMP/$name.send" 2>&1 &
	SND_PID=$!
}

send_stop() {
	[ -n "$SND_PID" ] || return 0
	kill -TERM "$SND_PID" 2>/dev/null
	wait "$SND_PID" 2>/dev/null
	SND_PID=
}

# st NAME COUNTER: a counter from the run's final report ("-1" if absent).
st() {
	local re
	case $2 in
	captured) re='captured \K[0-9]+' ;;
	bytes) re='[0-9]+(?= bytes, )' ;;
	descs) re='[0-9]+(?= descriptors)' ;;
	multibuf) re='[0-9]+(?= multi-buffer)' ;;
	seen | matched | redirected | passed | written | oversize | rx_dropped | rx_ring_full | \
		rx_fill_ring_empty_descs | rx_invalid_descs) re="$2 \\K[0-9]+" ;;
	files) re='in \K[0-9]+(?= files?)' ;;
	by_ref) re='by reference \K[0-9]+' ;;
	queue_drops) re='queue drops \K[0-9]+' ;;
	write_drops) re='write drops \K[0-9]+' ;;
	esac
	local v
	v=$(grep -oP "$re" "$TMP/$1.out" | head -n 1)
	echo "${v:--1}"
}

kdrops() { # NAME: the kernel's drops on the sockets, all kinds
	echo $(($(st "$1" rx_dropped) + $(st "$1" rx_ring_full) + $(st "$1" rx_fill_ring_empty_descs) + $(st "$1" rx_invalid_descs)))
}

# tshark_count FILE: tshark's packet count; fails on any complaint.
tshark_count() {
	local rc
	tshark -r "$1" -T fields -e frame.number >"$TMP/tshark.out" 2>"$TMP/tshark.err"
	rc=$?
	sed -i '/^Running as user "root" and group "root". This could be dangerous.$/d' "$TMP/tshark.err"
	if [ "$rc" -ne 0 ] || [ -s "$TMP/tshark.err" ]; then
		echo "tshark -r $1: status $rc: $(head -c 300 "$TMP/tshark.err")"
		return 1
	fi
	wc -l <"$TMP/tshark.out"
}

# tshark_ok NAME FILE EXPECTED-COUNT: a case.
tshark_ok() {
	local n
	if ! n=$(tshark_count "$2"); then
		t_fail "$1" "$n"
	elif [ "$n" != "$3" ]; then
		t_fail "$1" "tshark counts $n packets, expected $3"
	else
		t_ok "$1"
	fi
}

# frames_ok NAME FILE... -- [check options]: frames.py check as a case.
frames_ok() {
	local name=$1 files=() out
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do files+=("$1"); shift; done
	shift
	if out=$($PY "$FRAMES" check "${files[@]}" --ifname "$IF_CAP" "$@" 2>&1); then
		t_ok "$name"
	else
		t_fail "$name" "$out"
	fi
}

# expect_eq NAME WHAT GOT WANT
expect_eq() {
	if [ "$3" = "$4" ]; then
		t_ok "$1"
	else
		t_fail "$1" "$2 is $3, expected $4"
	fi
}

# Summaries of a manifest (optionally of the frames labelled $2 only).
m_count() { awk -v l="${2:-}" 'l == "" || $4 == l { n++ } END { print n + 0 }' "$1"; }
m_multi() { awk -v l="${2:-}" -v b=$BUF '(l == "" || $4 == l) && $2 > b { n++ } END { print n + 0 }' "$1"; }
m_descs() { awk -v l="${2:-}" -v b=$BUF 'l == "" || $4 == l { n += int(($2 + b - 1) / b) } END { print n + 0 }' "$1"; }
m_bytes() { awk -v l="${2:-}" 'l == "" || $4 == l { n += $2 } END { print n + 0 }' "$1"; }

report() { # NAME: the run's report and errors, indented (for failures)
	sed 's/^/    | /' "$TMP/$1.out" "$TMP/$1.err" | head -n 20
}

# A capture stopped too soon misses what has not reached it: wait for what
# was sent to be in the file (the writer flushes within about 200 ms).
# arrived N FILE...: the files hold N packets or more so far.
arrived() { local n=$1; shift; [ "$($PY "$FRAMES" count "$@")" -ge "$n" ]; }
# wait_arrived NAME N FILE...: wait 5 s at most; else the case NAME-arrived fails.
wait_arrived() {
	local name=$1 n=$2
	shift 2
	wait_until 5 arrived "$n" "$@" && return 0
	t_fail "$name-arrived" "$($PY "$FRAMES" count "$@") of $n packets in $* after 5 s"
	return 1
}

# ---- 1. sizes --------------------------------------------------------------
# Every length is a whole frame; 3840 bytes fit one descriptor, 7680 two.
SIZES="64 65 1500 1514 1515 3839 3840 3841 4096 7679 7680 7681 8000 9014"
spec_sizes() {
	for n in $SIZES; do echo "udp4 $n"; done
	echo "udp4 rand:64-9014 count=40"
	echo "udp6 9014 label=udp4" # label: captured like the rest
	echo "udp6 3841 label=udp4"
	echo "tcp4 7681 label=udp4"
	echo "udp4 9018 vlan=42 label=udp4" # 9014 + the 802.1Q tag
	echo "udp4 5000 frag=185 label=udp4"
	echo "udp6 7681 ext=hbh,frag label=udp4"
	echo "arp 60 label=non-ip" # not IP: passed, not captured
	echo "udp4 rand:64-9014 count=10"
}
F1=$TMP/sizes.pcapng
if cap_start sizes "$F1" && spec_sizes | send sizes --prefix 4000; then
	wait_arrived sizes "$(m_count "$TMP/sizes.sent" udp4)" "$F1"
	cap_stop INT
	M=$TMP/sizes.sent
	want=$(m_count "$M" udp4)
	expect_eq sizes-exit "exit status" "$CAP_RC" 0
	tshark_ok sizes-tshark-reads "$F1" "$want"
	frames_ok sizes-byte-identical "$F1" -- --manifest "$M" --labels udp4
	expect_eq sizes-captured-count "captured" "$(st sizes captured)/$(st sizes written)" "$want/$want"
	# Written from the UMEM frames themselves: none copied while the
	# disk keeps up (frames_ok above: byte for byte all the same).
	expect_eq sizes-written-by-reference "by reference" "$(st sizes by_ref)" "$want"
	expect_eq sizes-captured-bytes "captured bytes" "$(st sizes bytes)" "$(m_bytes "$M" udp4)"
	expect_eq sizes-multibuffer "multi-buffer packets" "$(st sizes multibuf)" "$(m_multi "$M" udp4)"
	expect_eq sizes-descriptors "descriptors" "$(st sizes descs)" "$(m_descs "$M" udp4)"
	if [ "$(m_multi "$M" udp4)" -lt 10 ] || ! awk -v b=$BUF '$2 > 2 * b { t++ } $2 > b && $2 <= 2 * b { d++ } END { exit !(t && d) }' "$M"; then
		t_fail sizes-mix "the frames sent lack 2- or 3-descriptor packets"
	else
		t_ok sizes-mix
	fi
	expect_eq sizes-xdp-counters "xdp seen/matched/redirected/passed" \
		"$(st sizes seen)/$(st sizes matched)/$(st sizes redirected)/$(st sizes passed)" \
		"$(m_count "$M")/$want/$want/$(m_count "$M" non-ip)"
	expect_eq sizes-no-drops "kernel/queue/write drops" \
		"$(kdrops sizes)/$(st sizes queue_drops)/$(st sizes write_drops)" 0/0/0
	info=$(capinfos "$F1" 2>/dev/null)
	if grep -q 'File timestamp precision: *nanoseconds (9)' <<<"$info" &&
		grep -q "Name = $IF_CAP\$" <<<"$info" && grep -q 'Time resolution = 0x09' <<<"$info"; then
		t_ok sizes-nanoseconds-ifname
	else
		t_fail sizes-nanoseconds-ifname "capinfos: $(grep -E 'precision|Name =|resolution' <<<"$info" | tr -s ' \n' ' ')"
	fi
	expect_eq sizes-file-mode "mode of $F1" "$(stat -c %a "$F1")" 640
	[ "$CAP_RC" = 0 ] || report sizes
else
	t_fail sizes "capture or sender failed to start"
	report sizes
	cap_wait 1
fi

# The same frames with --snaplen 4000: a 2- or 3-descriptor packet is cut
# 160 bytes into its second descriptor, orig_len stays the frame length.
F1s=$TMP/snap.pcapng
if cap_start snap "$F1s" --snaplen 4000 && spec_sizes | send snap --prefix 4000; then
	wait_arrived snap "$(m_count "$TMP/snap.sent" udp4)" "$F1s"
	cap_stop TERM
	tshark_ok snaplen-tshark-reads "$F1s" "$(m_count "$TMP/snap.sent" udp4)"
	frames_ok snaplen-cut-at-4000 "$F1s" -- --manifest "$TMP/snap.sent" --labels udp4 --snaplen 4000
else
	t_fail snaplen "capture or sender failed to start"
	report snap
	cap_wait 1
fi

# With --frames 64 the writer may hold only 16 frames (about 5 jumbo
# packets) by reference; beyond that it must copy, and both kinds end up in
# the file in order, byte for byte, every frame back in its place. One
# packet per 5 ms: the writer's 100 ms flush holds ~60 frames' worth, and
# the fill ring's ~40 spare frames outlast a 60 ms stall of the receiver.
F1f=$TMP/fewframes.pcapng
if cap_start fewframes "$F1f" --frames 64 &&
	for _ in $(seq 60); do echo "udp4 9014"; done | send fewframes --prefix 4000 --burst 1 --gap 0.005; then
	wait_arrived few-frames "$(m_count "$TMP/fewframes.sent" udp4)" "$F1f"
	cap_stop INT
	M=$TMP/fewframes.sent
	w=$(st fewframes written) r=$(st fewframes by_ref)
	if [ "$w" = "$(st fewframes captured)" ] && [ "$w" -gt 0 ] && [ "$r" -gt 0 ] && [ "$r" -lt "$w" ]; then
		t_ok few-frames-some-copied
	else
		t_fail few-frames-some-copied "captured $(st fewframes captured), written $w, by reference $r (want 0 < by reference < written)"
	fi
	expect_eq few-frames-no-drops "kernel/queue/write drops" \
		"$(kdrops fewframes)/$(st fewframes queue_drops)/$(st fewframes write_drops)" 0/0/0
	frames_ok few-frames-byte-identical "$F1f" -- --manifest "$M" --labels udp4
else
	t_fail few-frames "capture or sender failed to start"
	report fewframes
	cap_wait 1
fi
cap_run frames-not-pow2 --interface "$IF_CAP" --file "$TMP/x.pcapng" --frames 100
expect_eq frames-not-power-of-two "exit status, message" \
	"$CAP_RC $(grep -c 'not a power of two' "$TMP/frames-not-pow2.err")" "2 1"

# ---- 2. filters ------------------------------------------------------------
# label y: must be captured; n: must not (and goes on to the stack).
F2=$TMP/filter.pcapng
if cap_start filter "$F2" --match '{proto: udp, service: [udp/9000], min-length: 1501}' &&
	send filter <<'EOF'; then
udp4 64 label=n
udp4 1500 label=n          # one byte short of min-length
udp4 1501 label=y
udp4 9014 label=y
udp4 rand:1501-9014 count=12 label=y
udp4 rand:64-1500 count=6 label=n
udp4 9014 dport=9001 label=n
udp4 1501 dport=9001 label=n
udp4 9014 sport=9000 dport=9001 label=n   # the source port does not count
tcp4 9014 label=n
tcp6 9014 label=n
icmp4 9014 label=n
icmp6 9014 label=n
udp6 9014 label=y
udp6 3000 label=y
udp6 1200 label=n
udp4 9018 vlan=42 label=y
udp4 3000 vlan=42 svlan=100 label=y   # QinQ
udp4 4000 ipopt=8 label=y             # ports after IP options
udp4 9014 frag=185 label=n            # a later fragment carries no port
udp6 6000 ext=hbh,dst label=y
udp6 6000 ext=frag label=y            # a first fragment has the port
udp6 6000 ext=hbh,frag-later label=n
tcp6 6000 ext=dst label=n
arp 1600 label=n
udp4 rand:1501-9014 count=4 label=y
EOF
	wait_arrived filter-service-length "$(m_count "$TMP/filter.sent" y)" "$F2"
	cap_stop INT
	M=$TMP/filter.sent
	tshark_ok filter-service-length-tshark "$F2" "$(m_count "$M" y)"
	frames_ok filter-service-length-exact "$F2" -- --manifest "$M" --labels y
	expect_eq filter-service-length-counters "xdp seen/matched/passed, captured bytes" \
		"$(st filter seen)/$(st filter matched)/$(st filter passed)/$(st filter bytes)" \
		"$(m_count "$M")/$(m_count "$M" y)/$(m_count "$M" n)/$(m_bytes "$M" y)"
else
	t_fail filter-service-length "capture or sender failed to start"
	report filter
	cap_wait 1
fi

F2b=$TMP/prefix.pcapng
if cap_start prefix "$F2b" --match '{from: [198.51.100.0/24, "2001:db8:1::/48"], to: [203.0.113.0/25, "2001:db8:2::/64"]}' &&
	send prefix <<'EOF'; then
udp4 2000 src=198.51.100.7 dst=203.0.113.5 label=y
udp4 2000 src=198.51.100.7 dst=203.0.113.200 label=n
udp4 2000 src=192.0.2.7 dst=203.0.113.5 label=n
tcp4 9014 src=198.51.100.255 dst=203.0.113.127 label=y
tcp4 9014 src=198.51.100.7 dst=203.0.113.128 label=n
icmp4 5000 src=198.51.101.1 dst=203.0.113.1 label=n
udp6 9014 src=2001:db8:1:ffff::7 dst=2001:db8:2::5 label=y
udp6 2000 src=2001:db8:1::7 dst=2001:db8:2:1::5 label=n
udp6 2000 src=2001:db8:3::7 dst=2001:db8:2::5 label=n
icmp6 7000 src=2001:db8:1::1 dst=2001:db8:2::ffff label=y
udp6 2000 src=2001:db8:2::5 dst=2001:db8:1::7 label=n
udp4 rand:64-9014 count=6 src=198.51.100.9 dst=203.0.113.9 label=y
udp4 rand:64-9014 count=6 src=203.0.113.9 dst=198.51.100.9 label=n
arp 64 src=198.51.100.7 dst=203.0.113.5 label=n
EOF
	# (the last frames, not captured, came through XDP in order before the
	# last captured one reached the file: the writer flushes 100 ms late)
	wait_arrived filter-prefixes "$(m_count "$TMP/prefix.sent" y)" "$F2b"
	cap_stop INT
	M=$TMP/prefix.sent
	tshark_ok filter-prefixes-tshark "$F2b" "$(m_count "$M" y)"
	frames_ok filter-prefixes-exact "$F2b" -- --manifest "$M" --labels y
	expect_eq filter-prefixes-counters "xdp seen/matched" \
		"$(st prefix seen)/$(st prefix matched)" "$(m_count "$M")/$(m_count "$M" y)"
else
	t_fail filter-prefixes "capture or sender failed to start"
	report prefix
	cap_wait 1
fi

# Length bounds on both sides (exactly the 2-descriptor frames) and non-IP
# frames in the capture too.
F2n=$TMP/length.pcapng
if cap_start length "$F2n" --match '{min-length: 3841, max-length: 7680, non-ip: true}' &&
	send length <<'EOF'; then
udp4 3840 label=n
udp4 3841 label=y
udp4 7680 label=y
udp4 7681 label=n
arp 60 label=n
arp 4000 label=y
udp6 5000 label=y
tcp4 9014 label=n
udp4 rand:3841-7680 count=8 label=y
EOF
	wait_arrived filter-length-non-ip "$(m_count "$TMP/length.sent" y)" "$F2n"
	cap_stop INT
	M=$TMP/length.sent
	tshark_ok filter-length-non-ip-tshark "$F2n" "$(m_count "$M" y)"
	frames_ok filter-length-non-ip-exact "$F2n" -- --manifest "$M" --labels y
else
	t_fail filter-length-non-ip "capture or sender failed to start"
	report length
	cap_wait 1
fi

# The stack beside a capture: real addresses, IPv6 on, no static neighbours.
v6() { # on|off
	local d=0
	[ "$1" = off ] && d=1
	in_tx sysctl -qw net.ipv6.conf.$IF_TX.disable_ipv6=$d
	in_cap sysctl -qw net.ipv6.conf.$IF_CAP.disable_ipv6=$d
}
v6 on
ip -n "$TX" addr add 192.0.2.1/24 dev "$IF_TX"
ip -n "$CAP" addr add 192.0.2.2/24 dev "$IF_CAP"
ip -n "$TX" addr add 2001:db8::1/64 dev "$IF_TX" nodad
ip -n "$CAP" addr add 2001:db8::2/64 dev "$IF_CAP" nodad
neigh_flush() {
	ip -n "$TX" neigh flush dev "$IF_TX"
	ip -n "$CAP" neigh flush dev "$IF_CAP"
}
# A datagram from the tx side's own stack (not raw): udp/9000 or 9001.
udp_to_cap() { # PORT SIZE
	in_tx "$PY" -c 'import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(bytes(int(sys.argv[2])), ("192.0.2.2", int(sys.argv[1])))' "$1" "$2"
}

F2c=$TMP/stack.pcapng
if cap_start stack "$F2c" --match '{proto: udp, service: [udp/9000]}'; then
	neigh_flush
	if in_tx ping -c 3 -i 0.2 -W 2 -s 8000 192.0.2.2 >"$TMP/ping4" 2>&1; then
		t_ok filter-stack-arp-ping
	else
		t_fail filter-stack-arp-ping "ping through a udp/9000 capture: $(tail -n 2 "$TMP/ping4" | tr '\n' ' ')"
	fi
	if in_tx ping -6 -c 3 -i 0.2 -W 2 2001:db8::2 >"$TMP/ping6" 2>&1; then
		t_ok filter-stack-nd-ping6
	else
		t_fail filter-stack-nd-ping6 "ping -6 through a udp/9000 capture: $(tail -n 2 "$TMP/ping6" | tr '\n' ' ')"
	fi
	udp_to_cap 9000 8000
	udp_to_cap 9001 8000
	udp_to_cap 9000 100
	wait_arrived filter-stack 2 "$F2c"
	cap_stop INT
	# The two datagrams to udp/9000, nothing of the pings or the 9001 one.
	n=$(tshark_count "$F2c") && u=$(tshark -r "$F2c" -Y 'udp.dstport == 9000' 2>/dev/null | wc -l)
	expect_eq filter-stack-captured "packets in the file (all / udp/9000)" "${n:-?}/${u:-?}" 2/2
else
	t_fail filter-stack "capture failed to start"
	report stack
	cap_wait 1
fi

# Every IP frame captured (the default match): the echo requests are taken,
# but ARP, not IP, still reaches the stack, so the neighbour is resolved.
F2d=$TMP/all.pcapng
if cap_start all "$F2d"; then
	neigh_flush
	in_tx ping -c 2 -i 0.2 -W 1 192.0.2.2 >/dev/null 2>&1
	# (the file may hold other IP frames too: IPv6 is on)
	echo_requests() { [ "$(tshark -r "$F2d" -Y 'icmp.type == 8' 2>/dev/null | wc -l)" -ge 2 ]; }
	wait_until 5 echo_requests || t_fail filter-all-arrived "the two echo requests were not in the file after 5 s"
	cap_stop INT
	if ip -n "$TX" neigh show 192.0.2.2 dev "$IF_TX" | grep -q lladdr; then
		t_ok filter-all-arp-passes
	else
		t_fail filter-all-arp-passes "no neighbour entry: $(ip -n "$TX" neigh show dev "$IF_TX")"
	fi
	icmp=$(tshark -r "$F2d" -Y 'icmp.type == 8' 2>/dev/null | wc -l)
	arp=$(tshark -r "$F2d" -Y arp 2>/dev/null | wc -l)
	expect_eq filter-all-ip-only "echo requests / ARP frames in the file" "$icmp/$arp" 2/0
else
	t_fail filter-all "capture failed to start"
	report all
	cap_wait 1
fi
ip -n "$TX" addr flush dev "$IF_TX"
ip -n "$CAP" addr flush dev "$IF_CAP"
v6 off

# ---- 3. how a capture ends -------------------------------------------------
UDP9000='{proto: udp, service: [udp/9000]}'
F3=$TMP/count.pcapng
if cap_start count "$F3" --match "$UDP9000" --count 20 && send count <<<"udp4 rand:64-9014 count=50"; then
	cap_wait 5
	expect_eq stop-count-exit "exit status" "$CAP_RC" 0
	expect_eq stop-count-reason "reason" "$(grep '^stopped:' "$TMP/count.out")" "stopped: count reached"
	tshark_ok stop-count-tshark "$F3" 20
	frames_ok stop-count-first-20 "$F3" -- --manifest "$TMP/count.sent" --want prefix --count 20
	expect_eq stop-count-written "written" "$(st count written)" 20
else
	t_fail stop-count "capture or sender failed to start"
	report count
	cap_wait 1
fi

# --duration with traffic flowing.
F3d=$TMP/duration.pcapng
t0=$EPOCHREALTIME
if cap_start duration "$F3d" --match "$UDP9000" --duration 1; then
	send_bg duration "udp4 rand:64-9014" --loop 4 --gap 0.005
	cap_wait 5
	elapsed=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
	send_stop
	if [ "$CAP_RC" = 0 ] && grep -q '^stopped: duration reached$' "$TMP/duration.out" &&
		awk -v e="$elapsed" 'BEGIN { exit !(e >= 1 && e < 4) }'; then
		t_ok stop-duration
	else
		t_fail stop-duration "exit status $CAP_RC after ${elapsed}s, $(grep '^stopped:' "$TMP/duration.out")"
	fi
	w=$(st duration written)
	tshark_ok stop-duration-tshark "$F3d" "$w"
	frames_ok stop-duration-complete "$F3d" -- --manifest "$TMP/duration.sent" --want prefix --count "$w"
else
	t_fail stop-duration "capture failed to start"
	report duration
	cap_wait 1
fi

# A signal while frames keep coming (multi-buffer ones in flight too): the
# file is complete and holds exactly the packets reported written, which
# are the first ones sent, without a gap.
for sig in INT TERM; do
	F=$TMP/sig$sig.pcapng
	if cap_start sig$sig "$F" --match "$UDP9000"; then
		send_bg sig$sig "udp4 rand:64-9014" --loop 8 --gap 0.004
		# The signal comes while frames flow: once some are in the file.
		wait_until 5 arrived 20 "$F" || t_fail stop-sig$sig-arrived "no frames in the file after 5 s"
		cap_stop $sig
		send_stop
		w=$(st sig$sig written)
		if [ "$CAP_RC" = 0 ] && grep -q "^stopped: SIG$sig\$" "$TMP/sig$sig.out" && [ "$w" -gt 0 ]; then
			t_ok stop-sig$sig
		else
			t_fail stop-sig$sig "exit status $CAP_RC, $(grep '^stopped:' "$TMP/sig$sig.out"), written $w"
			report sig$sig
		fi
		tshark_ok stop-sig$sig-tshark "$F" "$w"
		frames_ok stop-sig$sig-complete "$F" -- --manifest "$TMP/sig$sig.sent" --want prefix --count "$w"
		expect_eq stop-sig$sig-accounted "written + queue drops + write drops" \
			$(($(st sig$sig written) + $(st sig$sig queue_drops) + $(st sig$sig write_drops))) "$(st sig$sig captured)"
	else
		t_fail stop-sig$sig "capture failed to start"
		report sig$sig
		cap_wait 1
	fi
done

# Two rx queues, one socket each: frames sent from CPU 0 and CPU 1 go to rx
# queues 0 and 1 (AF_PACKET with PACKET_QDISC_BYPASS picks the tx queue by
# CPU, veth maps tx queue N to the peer's rx queue N). Both queues deliver
# everything, each in order.
if [ "$(nproc)" -lt 2 ]; then
	t_skip queues "needs 2 CPUs to spread frames over 2 rx queues"
elif ip link add ctx1 netns "$TX" numtxqueues 2 numrxqueues 2 type veth peer name ccap1 netns "$CAP" numtxqueues 2 numrxqueues 2 &&
	ip -n "$TX" link set ctx1 mtu 9000 up && ip -n "$CAP" link set ccap1 mtu 9000 up; then
	saved="$IF_TX $IF_CAP $CAP_MAC"
	IF_TX=ctx1 IF_CAP=ccap1 CAP_MAC=$(in_cap cat /sys/class/net/ccap1/address)
	if cap_start queues "$TMP/queues.pcapng"; then
		qpids=
		for cpu in 0 1; do
			in_tx taskset -c $cpu "$FRAMES" send "$IF_TX" "$CAP_MAC" "$TMP/queues$cpu.sent" --seed q$cpu --bypass 1 \
				<<<"udp4 rand:64-9014 count=300" >"$TMP/queues$cpu.send" 2>&1 &
			qpids="$qpids $!"
		done
		wait $qpids
		wait_arrived queues 600 "$TMP/queues.pcapng"
		cap_stop INT
		grep -q '^capturing on ccap1: 2 rx queues' "$TMP/queues.out" && t_ok queues-two-sockets ||
			t_fail queues-two-sockets "$(head -n 1 "$TMP/queues.out")"
		frames_ok queues-all-in-order "$TMP/queues.pcapng" -- --want merge --manifest "$TMP/queues0.sent,$TMP/queues1.sent"
		q=$(in_cap "$PY" "$FRAMES" ethtool-stats ccap1 | awk '$1 ~ /^rx_queue_[01]_xdp_redirect$/ { printf "%s%s", sep, $2; sep = "/" }')
		if awk -v q="$q" 'BEGIN { split(q, a, "/"); exit !(a[1] > 0 && a[2] > 0 && a[1] + a[2] == 600) }'; then
			t_ok queues-both-used
		else
			t_fail queues-both-used "frames redirected on rx queue 0/1: $q"
		fi
	else
		t_fail queues "capture failed to start"
		report queues
		cap_wait 1
	fi
	read -r IF_TX IF_CAP CAP_MAC <<<"$saved"
	ip -n "$TX" link del ctx1
else
	t_fail queues "cannot make a veth pair with 2 queues"
fi

# The interface goes away: the capture ends by itself (capture.h: the done
# fd, -ENETDOWN), with a complete file of what came before.
if ip link add ctx2 netns "$TX" type veth peer name ccap2 netns "$CAP" &&
	ip -n "$TX" link set ctx2 mtu 9000 up && ip -n "$CAP" link set ccap2 mtu 9000 up; then
	saved="$IF_TX $IF_CAP $CAP_MAC"
	IF_TX=ctx2 IF_CAP=ccap2 CAP_MAC=$(in_cap cat /sys/class/net/ccap2/address)
	if cap_start gone "$TMP/gone.pcapng" && send gone <<<"udp4 rand:64-9014 count=50"; then
		wait_arrived stop-interface-removed 50 "$TMP/gone.pcapng"
		ip -n "$CAP" link del ccap2
		cap_wait 3
		if [ "$CAP_RC" = 1 ] && grep -q '^stopped: Network is down$' "$TMP/gone.out"; then
			t_ok stop-interface-removed
		else
			t_fail stop-interface-removed "exit status $CAP_RC ('hung': still running 3 s after the interface was deleted), $(grep '^stopped:' "$TMP/gone.out")"
		fi
		frames_ok stop-interface-removed-file "$TMP/gone.pcapng" -- --manifest "$TMP/gone.sent"
	else
		t_fail stop-interface-removed "capture or sender failed to start"
		report gone
		cap_wait 1
	fi
	read -r IF_TX IF_CAP CAP_MAC <<<"$saved"
	ip -n "$CAP" link del ccap2 2>/dev/null
else
	t_fail stop-interface-removed "cannot make a veth pair"
fi

# ---- 4. rotation -----------------------------------------------------------
# 1 MiB files, 3 kept, about 5.5 MiB of traffic: 5 or 6 files written, the
# last 3 kept; together they end with the last frame sent, without a gap.
mkdir "$TMP/rot"
F4=$TMP/rot/rot.pcapng
if cap_start rot "$F4" --match "$UDP9000" --rotate-size 1MiB --rotate-keep 3 &&
	send rot --gap 0.004 <<<"udp4 rand:5000-9014 count=800"; then
	# Until the last frame sent is in the newest file (the files may rotate
	# meanwhile: the check is tried again).
	rot_complete() {
		$PY "$FRAMES" check "$TMP/rot/rot.pcapng.2" "$TMP/rot/rot.pcapng.1" "$TMP/rot/rot.pcapng" \
			--manifest "$TMP/rot.sent" --want suffix --max-file-size $((1 << 20))
	}
	wait_until 5 rot_complete || t_fail rotate-arrived "the last frames were not in the files after 5 s"
	cap_stop INT
	expect_eq rotate-exit "exit status" "$CAP_RC" 0
	expect_eq rotate-files-kept "files" "$(cd "$TMP/rot" && ls | sort | tr '\n' ' ')" "rot.pcapng rot.pcapng.1 rot.pcapng.2 "
	opened=$(st rot files)
	if [ "$opened" -ge 5 ]; then t_ok rotate-files-opened; else t_fail rotate-files-opened "$opened files opened, expected 5 or more"; fi
	for f in rot.pcapng.2 rot.pcapng.1 rot.pcapng; do
		n=$($PY "$FRAMES" check "$TMP/rot/$f" | grep -oP '^ok \K[0-9]+')
		tshark_ok "rotate-tshark-$f" "$TMP/rot/$f" "${n:-invalid}"
		expect_eq "rotate-mode-$f" "mode" "$(stat -c %a "$TMP/rot/$f")" 640
	done
	frames_ok rotate-newest-continuous "$TMP/rot/rot.pcapng.2" "$TMP/rot/rot.pcapng.1" "$TMP/rot/rot.pcapng" -- \
		--manifest "$TMP/rot.sent" --want suffix --max-file-size $((1 << 20))
	expect_eq rotate-no-drops "kernel/queue/write drops" "$(kdrops rot)/$(st rot queue_drops)/$(st rot write_drops)" 0/0/0
else
	t_fail rotate "capture or sender failed to start"
	report rot
	cap_wait 1
fi

# ---- 5. a full disk --------------------------------------------------------
mkdir "$TMP/full"
if mount -t tmpfs -o size=2m,mode=0700 nfbox-test-full "$TMP/full"; then
	F5=$TMP/full/full.pcapng
	# disk_full: the 2 MiB are used up (less than 64 KiB left), so a write
	# has failed: a short one is truncated back to the last whole block.
	disk_full() { [ $(($(stat -f -c '%a * %S' "$TMP/full"))) -lt 65536 ]; }
	if cap_start full "$F5" --match "$UDP9000" && send full <<<"udp4 rand:5000-9014 count=1500"; then
		wait_until 5 disk_full || t_fail full-disk-arrived "the disk was not full after 5 s: $(df -k "$TMP/full" | tail -n 1)"
		cap_stop INT
		wd=$(st full write_drops)
		if [ "$CAP_RC" != hung ] && [ "$wd" -gt 0 ] && grep -q 'error: No space left on device' "$TMP/full.out"; then
			t_ok full-disk-reported
		else
			t_fail full-disk-reported "exit status $CAP_RC, write drops $wd"
			report full
		fi
		expect_eq full-disk-accounted "written + write drops + queue drops" \
			$(($(st full written) + wd + $(st full queue_drops))) "$(st full captured)"
		tshark_ok full-disk-tshark "$F5" "$(st full written)"
		frames_ok full-disk-blocks "$F5" -- --count "$(st full written)"
	else
		t_fail full-disk "capture or sender failed to start"
		report full
		cap_wait 1
	fi
	# Stopped while frames still pour in: what the writer still held at the
	# stop is dropped (or written) by its last flush, and the report must
	# count it too.
	rm -f "$F5"
	if cap_start fullfly "$F5" --match "$UDP9000"; then
		send_bg fullfly "udp4 rand:5000-9014" --loop 6 --gap 0.001
		# Stopped once the disk is full, the frames still coming.
		wait_until 5 disk_full || t_fail full-disk-in-flight-arrived "the disk was not full after 5 s: $(df -k "$TMP/full" | tail -n 1)"
		cap_stop INT
		send_stop
		expect_eq full-disk-in-flight-accounted "written + write drops + queue drops" \
			$(($(st fullfly written) + $(st fullfly write_drops) + $(st fullfly queue_drops))) "$(st fullfly captured)"
		tshark_ok full-disk-in-flight-tshark "$F5" "$(st fullfly written)"
	else
		t_fail full-disk-in-flight "capture failed to start"
		report fullfly
		cap_wait 1
	fi
	umount "$TMP/full"
else
	t_skip full-disk "cannot mount a tmpfs"
fi

# ---- 6. safety -------------------------------------------------------------
echo precious >"$TMP/target"
touch -d '2001-01-01 00:00' "$TMP/target"
before=$(stat -c '%i %s %Y %a' "$TMP/target")
ln -s "$TMP/target" "$TMP/link.pcapng"
cap_run symlink --interface "$IF_CAP" --file "$TMP/link.pcapng" --duration 1
if [ "$CAP_RC" != 0 ] && grep -q "link.pcapng: Too many levels of symbolic links" "$TMP/symlink.err" &&
	[ -L "$TMP/link.pcapng" ] && [ "$(stat -c '%i %s %Y %a' "$TMP/target")" = "$before" ] &&
	[ "$(cat "$TMP/target")" = precious ]; then
	t_ok safety-symlink-refused
else
	t_fail safety-symlink-refused "exit status $CAP_RC; $(head -n 2 "$TMP/symlink.err"); target $(stat -c '%i %s %Y %a' "$TMP/target") was $before"
fi
ln -s "$TMP/nothing-here" "$TMP/dangling.pcapng"
cap_run dangling --interface "$IF_CAP" --file "$TMP/dangling.pcapng" --duration 1
if [ "$CAP_RC" != 0 ] && [ ! -e "$TMP/nothing-here" ] && grep -q 'symbolic links' "$TMP/dangling.err"; then
	t_ok safety-dangling-symlink-refused
else
	t_fail safety-dangling-symlink-refused "exit status $CAP_RC; $(head -n 2 "$TMP/dangling.err")"
fi

# A stale file at PATH is replaced, never written through (a hard link to
# it keeps its bytes); mode 0640 whatever the umask.
for mask in 000 077; do
	F=$TMP/mode$mask.pcapng
	echo old >"$F"
	chmod 666 "$F"
	ln "$F" "$TMP/hardlink$mask"
	old_mask=$(umask)
	umask $mask
	cap_run mode$mask --interface "$IF_CAP" --file "$F" --duration 0.3
	umask "$old_mask"
	if [ "$CAP_RC" = 0 ] && [ "$(stat -c %a "$F")" = 640 ] && [ "$(cat "$TMP/hardlink$mask")" = old ] &&
		[ "$(stat -c %i "$F")" != "$(stat -c %i "$TMP/hardlink$mask")" ] &&
		$PY "$FRAMES" check "$F" --ifname "$IF_CAP" >/dev/null; then
		t_ok safety-mode-umask$mask
	else
		t_fail safety-mode-umask$mask "exit status $CAP_RC, mode $(stat -c %a "$F"), hard link holds '$(head -c 20 "$TMP/hardlink$mask")'"
	fi
done

# The same --file twice: the second capture must not unlink the file the
# first is writing (its packets would go to a nameless inode).
F6=$TMP/busy.pcapng
if cap_start busy "$F6" --match "$UDP9000"; then
	ino=$(stat -c %i "$F6")
	# On another interface (lo): the same one would be refused earlier, for
	# its XDP program, before the file is looked at.
	cap_run busy2 --interface lo --file "$F6" --duration 1
	busy2=$CAP_RC
	send busy <<<"udp4 rand:64-9014 count=20"
	wait_arrived safety-same-file 20 "$F6"
	cap_stop INT
	if [ "$busy2" != 0 ] && grep -q 'being written by another capture' "$TMP/busy2.err" &&
		[ "$(stat -c %i "$F6")" = "$ino" ]; then
		t_ok safety-same-file-refused
	else
		t_fail safety-same-file-refused "second capture: exit status $busy2, $(head -n 1 "$TMP/busy2.err"); inode $ino -> $(stat -c %i "$F6")"
	fi
	frames_ok safety-same-file-first-intact "$F6" -- --manifest "$TMP/busy.sent"
else
	t_fail safety-same-file "capture failed to start"
	report busy
	cap_wait 1
fi

# bad_usage NAME EXPECTED-STDERR-REGEX ARGS...: exit status 2, the message.
bad_usage() {
	local name=$1 re=$2
	shift 2
	cap_run "$name" "$@"
	if [ "$CAP_RC" = 2 ] && grep -qE -- "$re" "$TMP/$name.err" && [ ! -e "$TMP/never.pcapng" ]; then
		t_ok "$name"
	else
		t_fail "$name" "exit status $CAP_RC (expected 2): $(head -n 3 "$TMP/$name.err" | tr '\n' ' ')"
	fi
}
NEVER=$TMP/never.pcapng
bad_usage safety-match-proto '^--match:1:9: error: proto .udpx.' --interface "$IF_CAP" --file "$NEVER" --match '{proto: udpx}'
bad_usage safety-match-negative '^--match:1:14: error: .*min-length' --interface "$IF_CAP" --file "$NEVER" --match '{min-length: -1}'
bad_usage safety-match-key '^--match:1:15: error: .*prot' --interface "$IF_CAP" --file "$NEVER" --match '{proto: udp,  prot: 1}'
bad_usage safety-match-line2 '^--match:2:7: error: .*9000x' --interface "$IF_CAP" --file "$NEVER" --match '{proto: udp,
  to: 9000x}'
bad_usage safety-no-interface 'nosuch0.*no such interface' --interface nosuch0 --file "$NEVER"
bad_usage safety-rotate-size "rotate-size '1KiB'" --interface "$IF_CAP" --file "$NEVER" --rotate-size 1KiB

# ---- 7. sanitizers ----------------------------------------------------------
bad=
for r in "${RUNS[@]}"; do
	[ -f "$TMP/$r.err" ] || continue
	grep -qE 'ERROR: (Address|Leak|Thread|Memory)Sanitizer|runtime error|UndefinedBehaviorSanitizer' "$TMP/$r.err" &&
		bad="$bad $r"
done
if [ -n "$bad" ]; then
	t_fail sanitizer-clean "reports in:$bad"
	for r in $bad; do grep -m 3 -E 'Sanitizer|runtime error' "$TMP/$r.err" | sed "s/^/    $r: /"; done
elif ! grep -q __asan_init "$NFBOX" 2>/dev/null; then
	t_skip sanitizer-clean "build: $NFBOX is not a sanitizer build (make coverage uses gcov instead)"
else
	t_ok sanitizer-clean
fi
# Every capture audits its UMEM frames at stop (free + pending + fill +
# rx == all of them, when the kernel dropped nothing): a leak or a double
# return in the receive loop is reported as "BUG: frame accounting".
bad=
for r in "${RUNS[@]}"; do
	[ -f "$TMP/$r.err" ] && grep -q 'BUG: frame accounting' "$TMP/$r.err" && bad="$bad $r"
done
if [ -n "$bad" ]; then
	t_fail frames-accounted "in:$bad: $(grep -h -m 2 'BUG: frame accounting' "$TMP"/*.err | head -n 2)"
else
	t_ok frames-accounted
fi
t_done
