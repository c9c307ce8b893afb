# Network-namespace topology for nfbox tests and the demo. Source after
# tests/lib/lib.sh. Everything it creates is named after $NS_PREFIX and
# removed by ns_cleanup (installed as an EXIT trap by ns_setup).
#
#   client ns                appliance ns                    server ns
#   c0 198.51.100.2/24  ---  lan0 198.51.100.1/24
#      2001:db8:1::2/64          2001:db8:1::1/64
#                            wan0 203.0.113.1/24      ---  s0 203.0.113.10/24
#                                 2001:db8:2::1/64            2001:db8:2::10/64
#
# Only documentation prefixes; no link touches the host's namespace.

NS_PREFIX=${NS_PREFIX:-nfb$$}
NS_C=$NS_PREFIX-c
NS_A=$NS_PREFIX-a
NS_S=$NS_PREFIX-s
NS_TMP=
NFBOX_PID=
NFBOX_SOCK=
NFBOX_PINS=

C4=198.51.100.2 A4L=198.51.100.1 A4W=203.0.113.1 S4=203.0.113.10
C6=2001:db8:1::2 A6L=2001:db8:1::1 A6W=2001:db8:2::1 S6=2001:db8:2::10

in_c() { ip netns exec "$NS_C" "$@"; }
in_a() { ip netns exec "$NS_A" "$@"; }
in_s() { ip netns exec "$NS_S" "$@"; }

ns_cleanup() {
	nfbox_stop
	for ns in "$NS_C" "$NS_A" "$NS_S"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	if [ -n "$NS_TMP" ]; then
		umount "$NS_TMP/bpf" 2>/dev/null
		rm -rf "$NS_TMP"
	fi
	# files a test gave a namespace (ns_etc): ip netns exec's /etc/netns/NS
	for ns in "$NS_C" "$NS_A" "$NS_S"; do
		[ -d "/etc/netns/$ns" ] && rm -rf "/etc/netns/$ns"
	done
	[ -n "${NS_ETC_MADE:-}" ] && rmdir /etc/netns 2>/dev/null
	return 0
}

# ns_etc NS FILE CONTENT: /etc/FILE as processes started in NS by `ip netns
# exec` see it (ip netns exec binds /etc/netns/NS/FILE over it); removed
# with the namespaces.
ns_etc() {
	[ -d /etc/netns ] || NS_ETC_MADE=1
	mkdir -p "/etc/netns/$1" && printf '%s\n' "$3" >"/etc/netns/$1/$2"
}

# ns_setup [MTU]: build the three namespaces; traps cleanup on exit.
ns_setup() {
	local mtu=${1:-1500}
	trap ns_cleanup EXIT
	# Killed (a timeout, ^C): leave through exit, so the EXIT trap cleans up.
	trap 'exit 130' INT
	trap 'exit 143' TERM
	NS_TMP=$(mktemp -d /tmp/nfbox-ns.XXXXXX)
	for ns in "$NS_C" "$NS_A" "$NS_S"; do
		ip netns add "$ns" || return 1
		ip -n "$ns" link set lo up
		# No duplicate address detection: a tentative link-local address
		# delays neighbour discovery by a second or more, and with it the
		# first IPv6 packets of a test.
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	done
	ip link add c0 netns "$NS_C" type veth peer name lan0 netns "$NS_A" || return 1
	ip link add s0 netns "$NS_S" type veth peer name wan0 netns "$NS_A" || return 1
	for l in "$NS_C c0" "$NS_A lan0" "$NS_A wan0" "$NS_S s0"; do
		set -- $l
		ip -n "$1" link set "$2" mtu "$mtu" up
	done
	ip -n "$NS_C" addr add $C4/24 dev c0
	ip -n "$NS_C" addr add $C6/64 dev c0 nodad
	ip -n "$NS_A" addr add $A4L/24 dev lan0
	ip -n "$NS_A" addr add $A6L/64 dev lan0 nodad
	ip -n "$NS_A" addr add $A4W/24 dev wan0
	ip -n "$NS_A" addr add $A6W/64 dev wan0 nodad
	ip -n "$NS_S" addr add $S4/24 dev s0
	ip -n "$NS_S" addr add $S6/64 dev s0 nodad
	ip -n "$NS_C" route add default via $A4L
	ip -n "$NS_C" -6 route add default via $A6L
	ip -n "$NS_S" route add default via $A4W
	ip -n "$NS_S" -6 route add default via $A6W
	in_a sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
	# A private bpffs for the pins: the host's /sys/fs/bpf is not touched.
	mkdir -p "$NS_TMP/bpf"
	mount -t bpf bpf "$NS_TMP/bpf" || return 1
	NFBOX_PINS=$NS_TMP/bpf/nfbox
	NFBOX_SOCK=$NS_TMP/nfbox.sock
}

# The backend the suite runs against: NFBOX_BACKEND=nftables (the runner
# runs the engine suites once per backend) puts `backend: nftables` into
# every policy nfbox_start and nfbox_ctl reload are given.
NFBOX_BACKEND=${NFBOX_BACKEND:-bpf}
backend_policy() {
	[ "$NFBOX_BACKEND" = nftables ] || return 0
	grep -Eq '(^|[{,]) *backend:' "$1" && return 0
	# The first options line (flow or block style) gets the key, or the
	# file gets an options section; written in place (sed and bash: a
	# python3 start costs more CPU than the rest of a reload).
	local s
	if grep -Eq '^options:[[:space:]]*\{' "$1"; then
		s=$(sed -E '0,/^options:[[:space:]]*\{/s//options: { backend: nftables,/' "$1" && echo x) || return 1
	elif grep -Eq '^options:[[:space:]]*$' "$1"; then
		s=$(sed -E '0,/^options:[[:space:]]*$/s//options:\n  backend: nftables/' "$1" && echo x) || return 1
	else
		s=$(cat "$1")$'\noptions:\n  backend: nftables\n'x
	fi
	printf '%s' "${s%x}" >"$1"
}
bpf_backend() { [ "$NFBOX_BACKEND" = bpf ]; }
# Whether the engine enforces with conntrack, and so with reassembly
# (yes/no): the BPF links' defrag flag, or (nftables backend) a ct
# expression in table inet nfbox.
engine_defrag() {
	if bpf_backend; then
		nfbox_ctl status --json |
			jq -r '.links | if length == 0 then "none" elif all(.defrag) then "yes" elif any(.defrag) then "mixed" else "no" end'
	else
		# No table (or no nft) is not "no": it is nothing to judge by.
		local t
		t=$(in_a nft list table inet nfbox 2>/dev/null) || { echo none; return; }
		grep -Eq '(^|[[:space:]])ct ' <<<"$t" && echo yes || echo no
	fi
}

# notify_standin: a stand-in for systemd's notify socket at
# $NS_TMP/notify.sock (for NOTIFY_SOCKET=), its messages one per line ('|'
# for a newline) in $NS_TMP/notify.log; NOTIFY_PID is the stand-in. Status 1
# if it did not bind within 5 s.
notify_standin() {
	/usr/bin/python3 - "$NS_TMP/notify.sock" >"$NS_TMP/notify.log" <<'PY' &
import signal, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
while True:
    print(s.recv(4096).decode().replace("\n", "|"), flush=True)
PY
	NOTIFY_PID=$!
	wait_until 5 test -S "$NS_TMP/notify.sock"
}

# nfbox_start POLICY [extra run options]: run the daemon in the appliance
# namespace and wait for its "ready" line (10 s at most).
nfbox_start() {
	local policy=$1
	shift
	backend_policy "$policy"
	: >"$NS_TMP/nfbox.out"
	# ip netns exec execs nfbox: $! is the daemon itself, for signals.
	ip netns exec "$NS_A" "$NFBOX" run --policy "$policy" --state-dir "$NS_TMP/state" --socket "$NFBOX_SOCK" --pin-dir "$NFBOX_PINS" "$@" \
		>"$NS_TMP/nfbox.out" 2>"$NS_TMP/nfbox.err" &
	NFBOX_PID=$!
	nfbox_wait_ready
}

# Wait for the "ready" line of the daemon $NFBOX_PID (10 s at most); its
# errors on stderr if it does not come.
nfbox_wait_ready() {
	for _ in $(seq 100); do
		grep -q '^ready$' "$NS_TMP/nfbox.out" && return 0
		kill -0 "$NFBOX_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "nfbox did not become ready:" >&2
	cat "$NS_TMP/nfbox.err" >&2
	return 1
}

nfbox_stop() {
	[ -n "$NFBOX_PID" ] || return 0
	kill -TERM "$NFBOX_PID" 2>/dev/null
	for _ in $(seq 50); do
		kill -0 "$NFBOX_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$NFBOX_PID" 2>/dev/null
	wait "$NFBOX_PID" 2>/dev/null
	NFBOX_PID=
}

nfbox_ctl() {
	local a prev=
	if [ "$1" = reload ]; then
		for a in "$@"; do
			[ "$prev" = --policy ] && backend_policy "$a"
			prev=$a
		done
	fi
	cli_run "$NFBOX" "$1" --socket "$NFBOX_SOCK" "${@:2}"
}

# Counter of a rule from `nfbox stats --json`: nfbox_count HOOK RULE [packets|bytes]
nfbox_count() {
	nfbox_ctl stats --json |
		jq -r --arg h "$1" --arg r "$2" --arg k "${3:-packets}" 'first((.rules[] | select(.hook == $h and .rule == $r) | .[$k]), -1)'
}

# Wait until no listener holds PORT (an earlier one-shot listener on the
# same port may still be echoing its last connection): wait_free NSFUNC PORT
wait_free() {
	local fn=$1 port=$2
	for _ in $(seq 50); do
		$fn ss -lntu 2>/dev/null | grep -q ":$port " || return 0
		sleep 0.1
	done
	return 1
}

# Start a one-shot TCP echo listener once the port is free, and wait until
# it listens (status 1 if the port stays taken or it never listens; a check
# that expects a connection to fail must not go on then): listen NSFUNC PORT SECONDS
listen() {
	wait_free "$1" "$2" || return 1
	$1 "$NET" tcp-listen "$2" "$3" >/dev/null 2>&1 &
	wait_listen "$1" "$2" tcp
}

# Wait until a TCP or UDP listener is up: wait_listen NSFUNC PORT [udp|tcp]
# (with udp or tcp, only a socket of that kind counts)
wait_listen() {
	local fn=$1 port=$2 kind=-lntu
	case ${3:-} in udp) kind=-lnu ;; tcp) kind=-lnt ;; esac
	for _ in $(seq 50); do
		$fn ss $kind 2>/dev/null | grep -q ":$port " && return 0
		sleep 0.1
	done
	return 1
}

# Whether a `net.py tcp-stream` run (its output in FILE) streamed and never
# stalled for a second: stream_ok FILE
stream_ok() {
	awk 'match($0, /streamed [0-9]+ bytes, longest stall [0-9.]+s/) {
		split(substr($0, RSTART, RLENGTH), w, " "); ok = w[2] + 0 > 0 && w[6] + 0 < 1.0; exit
	} END { exit !ok }' "$1"
}

# probe_from SRC DST PORT: one UDP datagram from the client's address SRC
# to DST:PORT (udp-blast, counted at the server): "pass" or "drop", or why
# neither can be told (no listener, the datagram not sent): never "drop" by
# mistake. The receiver ends at the first datagram; one that has not come
# 0.4 s after the sender is done is not coming (a datagram crosses the
# namespaces within a millisecond, and one already in the socket is still
# counted when the receiver is stopped): then it is stopped and says 0.
probe_from() {
	local net=${NET:-$PWD/tests/lib/net.py} w
	: >"$NS_TMP/count" # here, not in the child: no "listening" of the last probe's
	# ip netns exec execs timeout, which passes SIGTERM on: $! can stop the receiver
	ip netns exec "$NS_S" timeout 10 "$net" udp-first 8 "$3" >"$NS_TMP/count" 2>&1 &
	w=$!
	if ! wait_until 5 grep -q listening "$NS_TMP/count"; then
		kill -TERM $w 2>/dev/null
		wait $w 2>/dev/null
		echo "no-listener"
		return
	fi
	if ! in_c "$net" udp-blast "$2" "$3" 1 "$1" 2>&1 | grep -qx "sent 1"; then
		kill -TERM $w 2>/dev/null
		wait $w 2>/dev/null
		echo "not-sent"
		return
	fi
	wait_until 0.4 grep -q '^got' "$NS_TMP/count" || kill -TERM $w 2>/dev/null
	wait $w 2>/dev/null
	awk '/^got/ {print ($3 > 0) ? "pass" : "drop"}' "$NS_TMP/count"
}

# kernel_set SET: the dynamic set's entries as the kernel holds them, read
# with bpftool or nft (tests/lib/kset.py), not through nfbox: "PREFIX LEFT"
# a line, LEFT the seconds until the kernel stops matching it, or "never".
kernel_set() {
	if bpf_backend; then
		/usr/bin/python3 tests/lib/kset.py bpf "$NFBOX_PINS" "$1"
	else
		in_a /usr/bin/python3 tests/lib/kset.py nft "$1"
	fi
}
# kernel_holds SET PREFIX [MIN-LEFT]: the kernel matches PREFIX (written
# with its length: 192.0.2.7/32) in SET, for MIN-LEFT seconds more at least.
kernel_holds() { kernel_set "$1" | held_for "$2" "${3:-0}"; }
# held_for PREFIX MIN-LEFT: kernel_set's lines on standard input hold PREFIX
# for MIN-LEFT seconds more at least
held_for() { awk -v p="$1" -v m="$2" '$1 == p && ($2 == "never" || $2 + 0 >= m) { f = 1 } END { exit !f }'; }
