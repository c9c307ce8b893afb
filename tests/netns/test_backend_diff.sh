#!/bin/bash
# The three-way differential test: for each seed, a generated policy (the
# whole language: tests/diff/diffgen.py says what) and generated probes on
# its edges go through the appliance once with backend: bpf and once with
# backend: nftables, each in fresh namespaces, and are judged by the
# reference interpreter (tests/diff/refjudge.c). Probe by probe, the three
# must agree on what counted each packet (a rule, the default,
# established; a limit gone past) and on whether it came out of the
# appliance, and where.
#
# Positive controls: every probe must move a counter in each backend, each
# seed must both forward and drop real traffic (so a run in which nothing
# was sent or nothing judged fails), and a bug planted on purpose
# (NFBOX_TEST_PLANT, compiled into the test build only: the nftables
# backend forgets rules' source addresses) must make one seed's
# comparison fail.
#
# nfbox trace (the what-if) is held to the same observations: for every
# probe it can describe (one whole packet, its state known, no limit gone
# past) the rule, default or established that it says decides must be
# what counted the packet in each backend, and the packet must come out
# where its verdict says. A bug planted in nfbox trace (NFBOX_TEST_PLANT=
# trace-swap-ports: it reads the packet's ports the wrong way round) must
# make a seed fail.
#
# A disagreement prints the probe and the packets, then a reduced policy:
# rules are taken out one at a time while the disagreement on that probe
# alone stays (NFBOX_DIFF_REDUCE=0: no reduction).
#
# Seeds: NFBOX_DIFF_SEEDS (default 3; 40 with NFBOX_LONG), starting at
# NFBOX_DIFF_SEED (replay one with NFBOX_DIFF_SEEDS=1); probes per seed
# NFBOX_DIFF_PROBES (120).
#
# The runner runs this in two suites at once, so that neither is make
# check's long tail: this file (NFBOX_DIFF_PART=1, the default) takes the
# first two thirds of the seeds, test_backend_diff_controls.sh
# (NFBOX_DIFF_PART=2) the rest, each from a random seed of its own, and the
# positive controls. NFBOX_DIFF_PART=all runs the seeds and the controls in
# one.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
GEN=$PWD/tests/diff/diffgen.py
B=${NFBOX_BUILD:-build}
[[ "$B" == /* ]] || B=$PWD/$B
JUDGE=${NFBOX_REFJUDGE:-$B/asan/refjudge}
seeds=${NFBOX_DIFF_SEEDS:-$([ -n "${NFBOX_LONG:-}" ] && echo 40 || echo 3)}
first=${NFBOX_DIFF_SEED:-$((RANDOM % 100000))}
part=${NFBOX_DIFF_PART:-1}
case $part in # this part's seeds; the controls only in part 2
1) seeds=$((seeds - seeds / 3)) ;;
2) seeds=$((seeds / 3)) ;;
all) ;;
*) t_fail setup "NFBOX_DIFF_PART is 1, 2 or all, not '$part'"; t_done ;;
esac
P=nfd$$
TMP=$(mktemp -d /tmp/nfbox-diff.XXXXXX)
PID=

cleanup_ns() {
	for ns in $P-c $P-a $P-s; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
}
cleanup() {
	[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
	cleanup_ns
	umount "$TMP/bpf" 2>/dev/null
	[ -n "${NFBOX_DIFF_KEEP:-}" ] && echo "kept $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 143' TERM
[ -x "$JUDGE" ] || { t_fail setup "$JUDGE is not built (make unit)"; t_done; }
mkdir -p "$TMP/bpf"
mount -t bpf bpf "$TMP/bpf" || { t_fail setup "cannot mount a bpf filesystem"; t_done; }

# Fresh namespaces: client (c0, c1: no addresses, silent), appliance
# (lan0, lan1, wan0, wan1), server (s0, s1: no addresses, silent). Frames
# are sent and watched with packet sockets (diffgen.py probe).
topology() { # DIR
	local d=$1 a="ip -n $P-a" l addr
	cleanup_ns
	for ns in $P-c $P-a $P-s; do ip netns add $ns || return 1; ip -n $ns link set lo up; done
	ip link add c0 netns $P-c type veth peer name lan0 netns $P-a || return 1
	ip link add c1 netns $P-c type veth peer name lan1 netns $P-a || return 1
	ip link add s0 netns $P-s type veth peer name wan0 netns $P-a || return 1
	ip link add s1 netns $P-s type veth peer name wan1 netns $P-a || return 1
	for ns in $P-c $P-s; do
		ip netns exec $ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
	done
	for l in "$P-c c0" "$P-c c1" "$P-s s0" "$P-s s1"; do
		set -- $l
		ip netns exec $1 sysctl -qw net.ipv6.conf.$2.disable_ipv6=1
		ip -n $1 link set $2 multicast off arp off up
	done
	ip netns exec $P-a sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 \
		net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
		net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	for i in lan0 lan1 wan0 wan1; do $a link set $i up; ip netns exec $P-a sysctl -qw net.ipv4.conf.$i.rp_filter=0; done
	$a addr add 198.51.100.1/24 dev lan0; $a addr add 2001:db8:1::1/64 dev lan0 nodad
	$a addr add 192.0.2.1/24 dev lan1; $a addr add 2001:db8:3::1/64 dev lan1 nodad
	$a addr add 203.0.113.1/28 dev wan0; $a addr add 2001:db8:2::1/64 dev wan0 nodad
	$a addr add 203.0.113.17/28 dev wan1; $a addr add 2001:db8:4::1/64 dev wan1 nodad
	local m0 m1
	m0=$(ip -n $P-s -br link show s0 | awk '{print $3}')
	m1=$(ip -n $P-s -br link show s1 | awk '{print $3}')
	$a neigh replace 203.0.113.2 lladdr "$m0" dev wan0 nud permanent
	$a neigh replace 203.0.113.18 lladdr "$m1" dev wan1 nud permanent
	$a -6 neigh replace 2001:db8:2::2 lladdr "$m0" dev wan0 nud permanent
	$a -6 neigh replace 2001:db8:4::2 lladdr "$m1" dev wan1 nud permanent
	$a route add 203.0.113.64/26 via 203.0.113.2
	$a route add 203.0.113.128/26 via 203.0.113.18
	$a -6 route add 2001:db8:5::/64 via 2001:db8:2::2
	$a -6 route add 2001:db8:6::/64 via 2001:db8:4::2
	# The clients the replies go back to (diffgen.py replies).
	while read -r l addr; do
		local c=c${l#lan} mac
		mac=$(ip -n $P-c -br link show "$c" | awk '{print $3}')
		$a neigh replace "$addr" lladdr "$mac" dev "$l" nud permanent
	done < <(cat "$d/neighbors.txt" 2>/dev/null)
	# What the appliance's own stack sends by itself must not reach its
	# output hook, where the reference does not expect it: its answers to
	# the probes sent to it (a reset, an echo reply, port unreachable),
	# the answers to rejected packets (resets and ICMP errors, to anyone),
	# and IPv6's multicast (router solicitations, MLD reports). A table of
	# the test's, before conntrack and before nfbox, drops them.
	# (Neighbours are all static; the output probes are none of these.)
	# The backends differ in what they do with the answers to rejected
	# packets: the nftables backend's go through the output hook's rules
	# (counted as established, or judged by the rules), the BPF backend's
	# pass it by their mark (counted as reject_replies).
	ip netns exec $P-a nft -f - <<'NFT'
table inet nfbox_test {
	chain out {
		type filter hook output priority -300; policy accept;
		ip daddr { 198.51.100.0/24, 192.0.2.0/24, 224.0.0.0/4, 203.0.113.1, 203.0.113.17 } drop
		ip6 daddr { 2001:db8:1::/64, 2001:db8:3::/64, ff00::/8, 2001:db8:2::1, 2001:db8:4::1 } drop
		tcp flags & rst == rst drop
		icmp type { destination-unreachable, time-exceeded, parameter-problem } drop
		icmpv6 type { destination-unreachable, packet-too-big, time-exceeded, parameter-problem } drop
	}
}
NFT
}

# run_backend DIR BACKEND: the probes through BACKEND: DIR/BACKEND.obs.
run_backend() {
	local d=$1 b=$2 set prefix
	topology "$d" || return 1
	if [ "$b" = bpf ]; then trace "$d" || return 1; fi
	sed "s/^  BACKEND$/  backend: $b/" "$d/policy.yaml" >"$d/$b.yaml"
	rm -rf "$TMP/bpf/pins" "$TMP/state-$b" # a fresh start: no dynamic-set entries of the seed before
	ip netns exec $P-a "$NFBOX" run --policy "$d/$b.yaml" --state-dir "$TMP/state-$b" --socket "$TMP/s.sock" \
		--pin-dir "$TMP/bpf/pins" >"$d/$b.out" 2>"$d/$b.err" &
	PID=$!
	wait_until 20 grep -q '^ready$' "$d/$b.out" || { cat "$d/$b.err"; return 1; }
	for set in $(awk '{ print $1 }' "$d/dynamic.txt" | sort -u); do # the dynamic sets' entries, at run time
		grep -qx "$set" "$d/fed.txt" 2>/dev/null && continue # a country set: the daemon filled it from geo.mmdb
		awk -v s="$set" '$1 == s { print $2 }' "$d/dynamic.txt" >"$d/dyn-$set.txt"
		"$NFBOX" set add "$set" --file "$d/dyn-$set.txt" --socket "$TMP/s.sock" >/dev/null || return 1
	done
	/usr/bin/python3 "$GEN" probe "$d" "$b" "$TMP/s.sock" $P || return 1
	kill -TERM $PID
	wait $PID
	PID=
}

# judge DIR: the reference's verdicts (DIR/ref.out), and nfbox trace's
# (DIR/trace.json) on the probes it can describe.
judge() {
	sed 's/^  BACKEND$/  backend: bpf/' "$1/policy.yaml" >"$1/check.yaml"
	"$JUDGE" "$1/check.yaml" "$1/judge.in" "$1/dynamic.txt" >"$1/ref.out" 2>"$1/ref.err"
}

# trace DIR: nfbox trace's verdicts (DIR/trace.json), run where the
# appliance's interfaces are (the topology of run_backend), as an operator
# runs it: a redirect takes a packet to its input interface's address.
trace() {
	/usr/bin/python3 "$GEN" trace "$1" "$NFBOX" "$P-a" 2>>"$1/ref.err"
}

# agree DIR [--no-controls] [BACKEND...]: the reference and the backends
# (both unless named) agree on DIR's probes (and the positive controls
# hold, unless told otherwise).
agree() {
	local d=$1 controls= b backends
	shift
	[ "${1:-}" = --no-controls ] && { controls=$1; shift; }
	backends=("$@")
	[ ${#backends[@]} -gt 0 ] || backends=(bpf nftables)
	judge "$d" || return 1
	for b in "${backends[@]}"; do
		run_backend "$d" "$b" || return 1
	done
	/usr/bin/python3 "$GEN" compare "$d" "${backends[@]}" $controls >"$d/compare.out" 2>&1
}

# reduce DIR: the smallest policy (rule by rule) on which the first probe
# that disagrees still does, printed.
reduce() {
	local d=$1 id r=$TMP/reduce n=0 tries=0
	id=$(sed -n 's/^probe \([0-9]*\) .*/\1/p' "$d/compare.out" | head -n 1)
	[ -n "$id" ] || return 0
	rm -rf "$r"
	/usr/bin/python3 "$GEN" only "$d" "$id" "$r" || return 0
	cp "$d/neighbors.txt" "$r/" 2>/dev/null
	while [ $tries -lt 60 ]; do
		tries=$((tries + 1))
		/usr/bin/python3 "$GEN" drop-rule "$r/policy.yaml" $n "$r/try.yaml"
		[ $? -eq 3 ] && break
		mkdir -p "$r/t" && cp "$r/try.yaml" "$r/t/policy.yaml" && cp "$r"/{probes.json,judge.in,dynamic.txt,fed.txt} "$r/t/"
		cp "$r/neighbors.txt" "$r/t/" 2>/dev/null
		if sed 's/^  BACKEND$/  backend: bpf/' "$r/t/policy.yaml" >"$r/t/check.yaml" &&
			"$NFBOX" validate --quiet "$r/t/check.yaml" >/dev/null 2>&1 && ! agree "$r/t" --no-controls &&
			grep -q "^probe $id " "$r/t/compare.out"; then
			cp "$r/try.yaml" "$r/policy.yaml" # still disagrees without rule n: gone
		else
			n=$((n + 1))
		fi
	done
	echo "    reduced policy (probe $id alone, $tries tries):"
	sed 's/^/      /' "$r/policy.yaml"
}

seed_case() { # SEED [PLANT BACKEND]: with a plant, only the backend it is in
	local seed=$1 plant=${2:-} d=$TMP/seed-$1${2:+-planted}
	mkdir -p "$d"
	/usr/bin/python3 "$GEN" gen "$seed" "$d" || { t_fail "seed-$seed" "cannot generate"; return 1; }
	sed 's/^  BACKEND$/  backend: bpf/' "$d/policy.yaml" >"$d/check.yaml"
	if ! "$NFBOX" validate --quiet "$d/check.yaml" >"$d/validate.out" 2>&1; then
		t_fail "seed-$seed" "generated an invalid policy (a generator bug): $(cat "$d/validate.out")"
		return 1
	fi
	# Replies of the flows need the reference's verdicts on the flows.
	judge "$d" && /usr/bin/python3 "$GEN" replies "$d" || { t_fail "seed-$seed" "reference: $(cat "$d/ref.err")"; return 1; }
	if [ -n "$plant" ]; then
		NFBOX_TEST_PLANT=$plant agree "$d" "$3"
		return
	fi
	if agree "$d"; then
		t_ok "seed-$seed ($(tail -n 1 "$d/compare.out"))"
	else
		t_fail "seed-$seed" "the reference and the backends disagree (replay: NFBOX_DIFF_SEED=$seed NFBOX_DIFF_SEEDS=1 $0)"
		head -n 60 "$d/compare.out" 2>/dev/null | sed 's/^/    /'
		[ -s "$d/compare.out" ] || { tail -n 5 "$d"/*.err 2>/dev/null | sed 's/^/    /'; }
		echo "    policy:"
		sed 's/^/      /' "$d/check.yaml"
		echo "    dynamic sets (nfbox set add): $(tr '\n' ' ' <"$d/dynamic.txt")"
		[ "${NFBOX_DIFF_REDUCE:-1}" = 0 ] || reduce "$d"
	fi
}

for i in $(seq 0 $((seeds - 1))); do
	seed_case $((first + i))
done
[ "$part" = 1 ] && t_done

# The positive control: a planted bug in one backend must be caught. Seeds
# whose policy has a rule with a source address are tried in turn (at most
# three of them) until one catches it: a seed whose probes never reach a
# rule with a source (an earlier rule takes them all) cannot. A bug that
# three such seeds all miss fails the test. (The search reads only the
# seeds' policies: diffgen.py policy. A plant runs through the backend it
# is in, the other has nothing to show.)
caught=0 tried=0
for i in $(seq 0 19); do
	seed=$((first + 1000 + i))
	mkdir -p "$TMP/probe-$seed"
	/usr/bin/python3 "$GEN" policy $seed "$TMP/probe-$seed" || continue
	grep -q 'from: ' "$TMP/probe-$seed/policy.yaml" || continue
	tried=$((tried + 1))
	if ! seed_case $seed nft-skip-source nftables; then
		grep -q 'differs from the reference' "$TMP/seed-$seed-planted/compare.out" 2>/dev/null && caught=1
	fi
	[ $caught -eq 1 ] || [ $tried -ge 3 ] && break
done
[ $caught -eq 1 ] && t_ok "planted-bug-caught (nftables forgets rules' sources: seed $seed disagrees)" ||
	t_fail planted-bug-caught "a bug planted in the nftables backend (NFBOX_TEST_PLANT=nft-skip-source) went unnoticed by seed ${seed:-?}"

# The same for nfbox trace: seeds whose policy has a service are tried
# until one catches the swapped ports (at most three), through the BPF
# backend (nfbox trace runs beside it: run_backend).
caught=0 tried=0
for i in $(seq 0 19); do
	seed=$((first + 2000 + i))
	mkdir -p "$TMP/probe-$seed"
	/usr/bin/python3 "$GEN" policy $seed "$TMP/probe-$seed" || continue
	grep -q 'service: ' "$TMP/probe-$seed/policy.yaml" || continue
	tried=$((tried + 1))
	if ! seed_case $seed trace-swap-ports bpf; then
		grep -q 'differs from nfbox trace' "$TMP/seed-$seed-planted/compare.out" 2>/dev/null && caught=1
	fi
	[ $caught -eq 1 ] || [ $tried -ge 3 ] && break
done
[ $caught -eq 1 ] && t_ok "planted-trace-bug-caught (nfbox trace swaps ports: seed $seed disagrees)" ||
	t_fail planted-trace-bug-caught "a bug planted in nfbox trace (NFBOX_TEST_PLANT=trace-swap-ports) went unnoticed by seed ${seed:-?}"
t_done
