#!/bin/bash
# A fleet of hundreds (root; issue 44): NODES (500) real `nfbox run --fleet`
# nodes, the nftables backend, each in a network namespace of its own, on a
# 3-member etcd cluster with TLS client certificates and etcd's RBAC made
# as packaging/fleet/runbook.md says (nfbox-fleet-rbac, a user and a
# certificate for each node), all on one bridge over 2001:db8::/64.
# Measured, and printed beside their targets:
#   push      5 pushes to every node: `nfbox fleet push --wait` until every
#             node reports the revision applied (median, p95); one with
#             --canary 5: the canaries' stage, then the rest
#   fan-out   `nfbox set add` on n1, one ban a second and 100 a second,
#             until each other node's kernel holds it: from each node's own
#             record of when it put the entry in force (its log), not from
#             polling; p50, p95, worst (target p95 < 1 s)
#   etcd's own  `etcdctl put` until `etcdctl watch` prints it, same run
#   restarts  a member that is not the leader restarted, then the leader
#             stopped (and started again): etcd's requests a second and CPU
#             in the seconds after (its /metrics), every node back in sync
#             (the group's revision reported, a ban made during the outage
#             in every node's record) within the bound printed
#   idle      a node's CPU, RSS and requests a second to etcd at rest
#   etcd      RSS, database size, CPU with every node and 10,000 shared
#             entries (made by `nfbox set add --file` on a node)
# Everything (namespaces, etcd's data, nodes) is removed on exit, also on
# failure or Ctrl-C (FLEET_LOGS=DIR keeps the logs there).
# Usage: NODES=N [PHASES="idle etcd push fanout events bulk"] tests/bench/fleetscale.sh [NFBOX]
# PHASES names the parts to run (all by default; the first push always runs).
# SHARE_WINDOW (a fleet file's share-window, nfbox-fleet(5)) for every node.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
NFBOX=$(realpath "${1:-build/nfbox}")
. tests/lib/fleet.sh
NODES=${NODES:-500}
PHASES=" ${PHASES:-idle etcd push fanout events bulk} "
phase() { [[ $PHASES == *" $1 "* ]]; }
for p in $PHASES; do
	case $p in idle | etcd | push | fanout | events | bulk) ;; *)
		echo "bench fleet: PHASES: unknown phase '$p' (idle etcd push fanout events bulk)" >&2
		exit 2
		;;
	esac
done
FL_PREFIX=nfs$$
PY="/usr/bin/python3 $PWD/tests/bench/fleetscale.py"
NPIDS=()
EPIDS=()
FAILS=0

ulimit -n 65536 2>/dev/null # etcd's members hold two connections for each node
command -v etcd >/dev/null || { echo "bench fleet: etcd is not installed (packaging/install-deps.sh)" >&2; exit 1; }
[ "$NODES" -ge 6 ] 2>/dev/null || { echo "bench fleet: NODES must be at least 6 (5 canaries and the rest)" >&2; exit 2; }

cleanup() {
	local p n
	for p in "${NPIDS[@]}"; do [ -n "$p" ] && kill -TERM "$p" 2>/dev/null; done
	for p in "${NPIDS[@]}"; do
		[ -n "$p" ] || continue
		wait_until 10 eval "! kill -0 $p" || kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	for p in "${EPIDS[@]}"; do [ -n "$p" ] && { kill -9 "$p" && wait "$p"; } 2>/dev/null; done
	for n in $(ip netns list | awk -v p="$FL_PREFIX-" 'index($1, p) == 1 { print $1 }'); do
		ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$n" 2>/dev/null
	done
	if [ -n "$FL_TMP" ]; then
		# the nodes' and members' logs kept where FLEET_LOGS names a folder
		[ -n "${FLEET_LOGS:-}" ] && mkdir -p "$FLEET_LOGS" && cp "$FL_TMP"/*.err "$FL_TMP"/e?.log "$FLEET_LOGS/" 2>/dev/null
		rm -rf "$FL_TMP"
	fi
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
FL_TMP=$(mktemp -d /tmp/nfbox-fleetscale.XXXXXX)
mkdir -p "$FL_TMP/pki" && chmod 700 "$FL_TMP/pki"
say() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }
failed() { echo "bench fleet: FAILED: $*" >&2; FAILS=$((FAILS + 1)); }

# ---- the network: one bridge, every host on 2001:db8::/64 ----
ip6() { case $1 in e*) echo "2001:db8::e${1#e}" ;; cl) echo 2001:db8::50 ;; n*) echo "2001:db8::1:${1#n}" ;; esac; }
mac() { # a host's MAC: fixed, so that its neighbours can be written down
	case $1 in
	e*) printf '02:00:00:00:0e:%02x\n' "${1#e}" ;;
	cl) echo 02:00:00:00:00:50 ;;
	n*) printf '02:00:00:01:%02x:%02x\n' $((${1#n} / 256)) $((${1#n} % 256)) ;;
	esac
}
url() { echo "https://[$(ip6 "$1")]:2379"; }
host_add() { # NAME
	local ns
	ns=$(fl_ns "$1")
	ip netns add "$ns" || return 1
	ip -n "$ns" link set lo up
	ip link add eth0 netns "$ns" address "$(mac "$1")" type veth peer name "v$1" netns "$(fl_ns br)" || return 1
	ip -n "$(fl_ns br)" link set "v$1" master br0 up
	ip -n "$ns" link set eth0 up
	ip -n "$ns" addr add "$(ip6 "$1")/64" dev eth0 nodad
}
net_up() {
	local k
	ip netns add "$(fl_ns br)" || return 1
	ip -n "$(fl_ns br)" link add br0 type bridge || return 1
	ip -n "$(fl_ns br)" link set br0 up
	for k in e1 e2 e3 cl $(seq -f 'n%g' 1 "$NODES"); do host_add "$k" || return 1; done
	neigh_static
}
# Every neighbour a host talks to written down as permanent: the kernel's
# neighbour table is one for all namespaces, and its learned entries are
# capped at net.ipv6.neigh.default.gc_thresh3 (1,024) in all: 500 nodes that
# each know 3 members and members that each know 500 nodes overflowed it
# ("neighbor table overflow!"), so a node that lost its member could not
# reach the others (a time-out at each try: on one host only; a real node
# is a host of its own). Permanent entries are not counted against the cap,
# and the host's settings stay as they are.
neigh_static() {
	local m k
	for m in e1 e2 e3 cl $(seq -f 'n%g' 1 "$NODES"); do
		case $m in
		e*) for k in e1 e2 e3 cl $(seq -f 'n%g' 1 "$NODES"); do [ "$k" = "$m" ] || neigh_line "$k"; done ;;
		*) for k in e1 e2 e3; do neigh_line "$k"; done ;;
		esac | ip -n "$(fl_ns "$m")" -batch - || return 1
	done
}
neigh_line() { echo "neigh replace $(ip6 "$1") lladdr $(mac "$1") dev eth0 nud permanent"; }

# ---- etcd: 3 members (as tests/lib/fleet.sh, over IPv6) ----
etcd_start() { # MEMBER
	local m=$1 cluster= k
	for k in 1 2 3; do cluster="$cluster${cluster:+,}e$k=http://[$(ip6 e$k)]:2380"; done
	ip netns exec "$(fl_ns "$m")" etcd --name "$m" --data-dir "$FL_TMP/$m" \
		--listen-client-urls "$(url "$m")" --advertise-client-urls "$(url "$m")" \
		--listen-peer-urls "http://[$(ip6 "$m")]:2380" --initial-advertise-peer-urls "http://[$(ip6 "$m")]:2380" \
		--initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "$FL_PREFIX" \
		--cert-file "$FL_TMP/pki/$m.crt" --key-file "$FL_TMP/pki/$m.key" --trusted-ca-file "$FL_TMP/pki/ca.crt" \
		--client-cert-auth --heartbeat-interval 100 --election-timeout 1000 --bcrypt-cost 4 \
		--logger zap --log-level error >>"$FL_TMP/$m.log" 2>&1 &
	EPIDS[${m#e}]=$!
}
etcd_stop() { # MEMBER
	local p=${EPIDS[${1#e}]}
	[ -n "$p" ] && kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	EPIDS[${1#e}]=
}
ENDPOINTS="$(url e1),$(url e2),$(url e3)"
ectl() { # etcdctl (or a script using it) from the client namespace, as the admin certificate
	ETCDCTL_API=3 ETCDCTL_ENDPOINTS=$ENDPOINTS ETCDCTL_CACERT=$FL_TMP/pki/ca.crt \
		ETCDCTL_CERT=$FL_TMP/pki/admin.crt ETCDCTL_KEY=$FL_TMP/pki/admin.key \
		ETCDCTL_DIAL_TIMEOUT=3s ETCDCTL_COMMAND_TIMEOUT=20s ip netns exec "$(fl_ns cl)" "$@"
}
rootctl() { ectl etcdctl --user "root:$(cat "$FL_TMP/pki/root.pw")" "$@"; }
leader() { # the member that leads now
	rootctl endpoint status -w json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
for e in json.load(sys.stdin):
    if e["Status"]["leader"] == e["Status"]["header"]["member_id"]:
        print(e["Endpoint"])' | sed -n 's/^https:\/\/\[2001:db8::\(e[123]\)\].*/\1/p' | head -1
}
sample() { # SECONDS: etcd's metrics once a second, in the background
	ip netns exec "$(fl_ns cl)" $PY sample "$1" "$FL_TMP/metrics.jsonl" "$FL_TMP/pki/ca.crt" \
		"$FL_TMP/pki/admin.crt" "$FL_TMP/pki/admin.key" "$(url e1)" "$(url e2)" "$(url e3)" &
	SAMPLER=$!
}

# ---- the fleet: users, certificates, fleet files, nodes ----
fl_url() { url "$1"; }
rotation() { case $(($1 % 3)) in 0) echo 1 2 3 ;; 1) echo 2 3 1 ;; 2) echo 3 1 2 ;; esac; } # a node's members, in turn
secret() { head -c 18 /dev/urandom | base64 >"$FL_TMP/pki/$1.pw" && chmod 600 "$FL_TMP/pki/$1.pw"; }
rbac_node() { # K: the runbook's step for node nK
	ectl "$PWD/packaging/fleet/nfbox-fleet-rbac" --root-password-file "$FL_TMP/pki/root.pw" node "$FL_GROUP" "n$1" \
		"$FL_TMP/pki/n$1.pw" >/dev/null
}
fleet_up() {
	local k pids=()
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$FL_TMP/pki/ca.key" \
		-out "$FL_TMP/pki/ca.crt" -days 2 -subj /CN=nfbox-bench-ca 2>/dev/null || return 1
	for k in 1 2 3; do fl_cert e$k "$(ip6 e$k)" || return 1; done
	for k in admin root operator; do fl_cert $k && secret $k || return 1; done
	for k in $(seq "$NODES"); do
		fl_cert "n$k" && secret "n$k" && fl_fleet_file "n$k" "n$k" "n$k" "$(rotation "$k")" || return 1
		[ -z "${SHARE_WINDOW:-}" ] || echo "share-window: $SHARE_WINDOW" >>"$FL_TMP/n$k.yaml"
	done
	fl_fleet_file operator operator
	for k in 1 2 3; do etcd_start e$k; done
	wait_until 30 ectl etcdctl endpoint health || return 1
	ectl "$PWD/packaging/fleet/nfbox-fleet-rbac" init "$FL_TMP/pki/root.pw" >/dev/null || return 1
	ectl "$PWD/packaging/fleet/nfbox-fleet-rbac" --root-password-file "$FL_TMP/pki/root.pw" operator operator \
		"$FL_TMP/pki/operator.pw" >/dev/null || return 1
	for k in $(seq "$NODES"); do # four at a time
		rbac_node "$k" &
		pids+=($!)
		if [ ${#pids[@]} -ge 4 ]; then
			for p in "${pids[@]}"; do wait "$p" || return 1; done
			pids=()
		fi
	done
	for p in "${pids[@]}"; do wait "$p" || return 1; done
}
# A node enters its network namespace only (nsenter): `ip netns exec` also
# makes a mount namespace, and 500 of them, each a copy of the host's
# mounts that every new namespace's mount propagates to, made starting the
# last nodes take seconds each.
node_start() { # K
	nsenter --net="/run/netns/$(fl_ns "n$1")" "$NFBOX" run --fleet "$FL_TMP/n$1.yaml" --policy "$FL_TMP/p0.yaml" \
		--state-dir "$FL_TMP/state-n$1" --socket "$FL_TMP/n$1.sock" --no-pin \
		>"$FL_TMP/n$1.out" 2>"$FL_TMP/n$1.err" &
	NPIDS[$1]=$!
}
ready() { grep -q '^ready$' "$FL_TMP/n$1.out" || ! kill -0 "${NPIDS[$1]}"; } # or dead
nodes_up() { # in waves of 25, each ready before the next
	local k j
	for ((k = 1; k <= NODES; k += 25)); do
		for ((j = k; j < k + 25 && j <= NODES; j++)); do node_start "$j"; done
		for ((j = k; j < k + 25 && j <= NODES; j++)); do
			wait_until 60 ready "$j" && grep -q '^ready$' "$FL_TMP/n$j.out" ||
				{ tail -n 3 "$FL_TMP/n$j.err" >&2; return 1; }
		done
	done
}
policy() { # FILE [K]: the shared blocklist, nftables, and rule K (a push's change)
	{
		echo "version: 1"
		echo "options: { backend: nftables }"
		echo "sets:"
		echo "  blocklist: { dynamic: true, shared: true }"
		echo "hooks:"
		echo "  input: { default: accept }"
		echo "rules:"
		echo "  - { name: drop-blocked, hook: input, from: blocklist, action: drop }"
		[ -n "${2:-}" ] && echo "  - { name: push-$2, hook: input, service: tcp/$((2000 + $2)), action: drop }"
	} >"$1"
}
push() { ip netns exec "$(fl_ns cl)" "$NFBOX" fleet push --fleet "$FL_TMP/operator.yaml" "$@"; }
fleet_json() { ip netns exec "$(fl_ns cl)" "$NFBOX" fleet status --fleet "$FL_TMP/operator.yaml" --json; }
# every node reports the group's revision (nodes count, in sync count)
in_sync() {
	fleet_json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
s = json.load(sys.stdin)
rev = s.get("revision")
print(len(s["nodes"]), sum(1 for n in s["nodes"] if n.get("revision") == rev))'
}
all_in_sync() { [ "$(in_sync)" = "$NODES $NODES" ]; }
ms_since() { echo $(((${EPOCHREALTIME/./} - $1) / 1000)); }
stats() { sort -n | awk '{ v[NR] = $1 } END { i = int(NR * 0.95 + 0.999); if (i < 1) i = 1; printf "%d %d\n", v[int((NR + 1) / 2)], v[i] }'; }
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { if (v == "" || v == "nan") print "FAILED"; else print (v + 0 < t + 0) ? "MET" : "MISSED" }'; }
row() { printf '%-58s %12s  %s\n' "$1" "$2" "${3:-}"; }

# ---- idle: nodes' CPU (from /proc) and RSS, etcd's requests over the window ----
ticks() { # PID...: their CPU ticks (user and system), summed
	local p t=0 s
	for p in "$@"; do
		[ -n "$p" ] && read -r -a s <"/proc/$p/stat" 2>/dev/null && t=$((t + s[13] + s[14]))
	done
	echo "$t"
}
node_ticks() { ticks "${NPIDS[@]}"; }
etcd_ticks() { ticks "${EPIDS[@]}"; }
node_rss_kib() { # median VmRSS
	local p
	for p in "${NPIDS[@]}"; do [ -n "$p" ] && awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null; done |
		sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
idle() { # SECONDS LABEL: prints the idle rows
	local secs=$1 t0 c0 c1 hz
	hz=$(getconf CLK_TCK)
	: >"$FL_TMP/metrics.jsonl"
	t0=$(date +%s.%N)
	c0=$(node_ticks)
	sample "$secs"
	wait "$SAMPLER"
	c1=$(node_ticks)
	read -r rq rqmax cpu cpumax rss db <<<"$($PY rates "$FL_TMP/metrics.jsonl" "$t0")"
	row "$2: a node's CPU (mean of $NODES, % of a core)" \
		"$(awk -v d=$((c1 - c0)) -v n="$NODES" -v s="$secs" -v hz="$hz" 'BEGIN { printf "%.3f %%", 100 * d / hz / s / n }')"
	row "$2: a node's RSS (median)" "$(awk -v k="$(node_rss_kib)" 'BEGIN { printf "%.1f MiB", k / 1024 }')"
	row "$2: requests/s to etcd, a node (all etcd's / $NODES)" "$(awk -v r="$rq" -v n="$NODES" 'BEGIN { printf "%.2f", r / n }')"
	row "$2: etcd, requests/s (3 members)" "$rq"
	row "$2: etcd, CPU (3 members, cores)" "$cpu"
	row "$2: etcd, RSS (3 members)" "$(awk -v b="$rss" 'BEGIN { printf "%.0f MiB", b / 1048576 }')"
	row "$2: etcd, database size" "$(awk -v b="$db" 'BEGIN { printf "%.1f MiB", b / 1048576 }')"
}

# ---- go ----
say "building $NODES nodes' namespaces"
neigh_overflows() { dmesg 2>/dev/null | grep -c 'neighbor table overflow'; }
OVERFLOWS0=$(neigh_overflows)
net_up || { failed "cannot build the namespaces"; exit 1; }
say "etcd, certificates and RBAC for $NODES nodes"
fleet_up || { failed "cannot set up etcd: $(tail -n 3 "$FL_TMP/e1.log")"; exit 1; }
policy "$FL_TMP/p0.yaml"
say "starting $NODES nodes"
T=${EPOCHREALTIME/./}
nodes_up || { failed "a node did not start"; exit 1; }
START_MS=$(ms_since "$T")
# the first push tried again while etcd is busy with the nodes' arrival
wait_until 120 push "$FL_TMP/p0.yaml" --wait 600s || { failed "first push: $(push "$FL_TMP/p0.yaml" 2>&1 | tail -n 3)"; exit 1; }
wait_until 60 all_in_sync || { failed "not every node in sync after the first push: $(in_sync)"; exit 1; }

printf '\n== a fleet of %s nodes (nftables, a namespace each) on 3 etcd members (TLS, RBAC); share-window %s; %s ==\n' \
	"$NODES" "${SHARE_WINDOW:-200ms (default)}" "$(date -u +%F)"
row "nodes started and ready (waves of 25)" "$((START_MS / 1000)) s"
if phase idle; then
	say "idle"
	sleep 5
	idle 20 "idle"
fi

if phase etcd; then
	say "etcd's own: put to watch"
	rootctl watch --prefix /bench/ >"$FL_TMP/watch.out" 2>&1 &
	WPID=$!
	sleep 1
	: >"$FL_TMP/etcd.ms"
	for i in $(seq 1 40); do
		t0=${EPOCHREALTIME/./}
		rootctl put "/bench/k$i" "v$i" >/dev/null
		until grep -qx "v$i" "$FL_TMP/watch.out"; do
			[ "$(ms_since "$t0")" -gt 10000 ] && { failed "etcd watch missed k$i"; break; }
		done
		ms_since "$t0" >>"$FL_TMP/etcd.ms"
	done
	kill "$WPID" 2>/dev/null
	wait "$WPID" 2>/dev/null
	read -r em ep <<<"$(stats <"$FL_TMP/etcd.ms")"
	row "etcd's own: etcdctl put -> etcdctl watch, median / p95" "$em / $ep ms"
fi

if phase push; then
	say "pushes"
	: >"$FL_TMP/push.ms"
	for i in 1 2 3 4 5; do
		policy "$FL_TMP/p$i.yaml" "$i"
		t0=${EPOCHREALTIME/./}
		push "$FL_TMP/p$i.yaml" --wait 600s >"$FL_TMP/push$i.out" 2>&1 || failed "push $i: $(tail -n 2 "$FL_TMP/push$i.out")"
		ms_since "$t0" >>"$FL_TMP/push.ms"
		[ "$(grep -c ': applied ' "$FL_TMP/push$i.out")" = "$NODES" ] || failed "push $i: not every node applied it"
	done
	read -r pm pp <<<"$(stats <"$FL_TMP/push.ms")"
	row "push until every node reports it applied, median / p95 of 5" "$pm / $pp ms"
	policy "$FL_TMP/p6.yaml" 6
	t0=${EPOCHREALTIME/./}
	push "$FL_TMP/p6.yaml" --canary 5 --confirm-within 60s --wait 600s 2>&1 | while IFS= read -r line; do
		echo "$(ms_since "$t0") $line"
	done >"$FL_TMP/canary.out"
	canary_ms=$(awk '/ to every node/ { print $1; exit }' "$FL_TMP/canary.out")
	all_ms=$(tail -n 1 "$FL_TMP/canary.out" | awk '{ print $1 }')
	[ "$(grep -c ': confirmed ' "$FL_TMP/canary.out")" = 5 ] && [ "$(grep -c ': applied ' "$FL_TMP/canary.out")" = "$NODES" ] ||
		failed "canary push: $(tail -n 3 "$FL_TMP/canary.out")"
	row "push --canary 5: the 5 canaries confirmed" "${canary_ms:-?} ms"
	row "push --canary 5: then every node applied (from the start)" "${all_ms:-?} ms"
fi

fanout() { # RATE COUNT FIRST: COUNT bans at RATE a second on n1, addresses from 198.51.100.FIRST / 203.0.113.
	local k a=()
	for ((k = $3; k < $3 + $2; k++)); do
		if [ "$k" -le 250 ]; then a+=("198.51.100.$k"); else a+=("203.0.113.$((k - 250))"); fi
	done
	c0=$(node_ticks) e0=$(etcd_ticks)
	$PY bans "$NFBOX" "$FL_TMP/n1.sock" "$1" "$FL_TMP/bans$1.t0" "${a[@]}" || failed "bans at $1/s: a set add failed"
	read -r f50 f95 fmax miss pairs <<<"$($PY fanout "$FL_TMP/bans$1.t0" "$FL_TMP" n1 "$NODES" 60)"
	c1=$(node_ticks) e1=$(etcd_ticks)
	[ "$miss" = 0 ] || failed "bans at $1/s: $miss (ban, node) pairs not in force after 60 s"
	row "ban fan-out at $1/s ($2 bans x $((NODES - 1)) nodes), p50 / p95 / worst" "$f50 / $f95 / $fmax ms" \
		"$(verdict "$f95" 1000) (p95 < 1000 ms)"
	# CPU from the first ban until the last is in force everywhere (and up
	# to the second after), for one ban on one node: the nodes' and etcd's
	# (of a burst: at 1 a second it would be their idle cost)
	[ "$1" -gt 1 ] && row "ban fan-out at $1/s: CPU a (ban, node), nodes / etcd" "$(awk -v n=$((c1 - c0)) -v e=$((e1 - e0)) \
		-v p=$(($2 * (NODES - 1))) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.0f / %.0f us", 1e6 * n / hz / p, 1e6 * e / hz / p }')"
}
if phase fanout; then
	say "shared bans, 1 a second"
	fanout 1 20 1
	say "shared bans, 100 a second"
	fanout 100 200 21
fi

# An event at etcd: MEMBER stopped for DOWN s, then started again; a ban
# made on a node at the moment it stops must reach every node (nothing
# lost, every node following again); etcd's metrics from 3 s before to 40 s
# after
lost_count() { cat "$FL_TMP"/n*.err | grep -c 'fleet: etcd not reached'; }
event() { # LABEL BAN MEMBER DOWN
	local label=$1 ban=$2 m=$3 down=$4 t0 ts lost0 sync_ms
	[ -n "$m" ] || { failed "$label: no member to stop"; return; }
	: >"$FL_TMP/metrics.jsonl"
	sample 43
	sleep 3
	lost0=$(lost_count)
	ts=$(date +%s.%N)
	t0=${EPOCHREALTIME/./}
	etcd_stop "$m"
	$PY bans "$NFBOX" "$FL_TMP/n$((NODES / 2)).sock" 1 "$FL_TMP/ev.t0" "$ban" || failed "$label: the ban made then failed"
	read -r f50 f95 fmax miss pairs <<<"$($PY fanout "$FL_TMP/ev.t0" "$FL_TMP" "n$((NODES / 2))" "$NODES" 60)"
	[ "$miss" = 0 ] || failed "$label: the ban made as $m stopped is missing on $miss nodes after 60 s"
	while [ "$(ms_since "$t0")" -lt $((down * 1000)) ]; do sleep 0.2; done
	etcd_start "$m"
	wait_until 30 ectl etcdctl endpoint health || failed "$label: etcd not healthy again"
	if wait_until 60 all_in_sync; then sync_ms=$(ms_since "$t0"); else failed "$label: not every node in sync: $(in_sync)"; fi
	wait "$SAMPLER"
	read -r rq rqmax cpu cpumax rss db <<<"$($PY rates "$FL_TMP/metrics.jsonl" "$ts")"
	row "$label: nodes that lost etcd and came back" "$(($(lost_count) - lost0)) of $NODES"
	row "$label: a ban made as it stopped, on every node (bound 30 s)" "$fmax ms" "$(verdict "$fmax" 30000)"
	row "$label: ... that ban's p50 / p95 over the nodes" "$f50 / $f95 ms"
	row "$label: every node reports the revision, $m back after ${down} s" "${sync_ms:-?} ms"
	row "$label: etcd requests/s for 40 s, mean / worst second" "$rq / $rqmax"
	row "$label: etcd CPU (cores) for 40 s, mean / worst second" "$cpu / $cpumax"
}
if phase events; then
	say "a member restarted"
	L=$(leader)
	case "$L" in e1) M=e2 ;; *) M=e1 ;; esac
	event "member $M restarted" 203.0.113.201 "$M" 5
	say "the leader lost"
	event "leader $(leader) lost" 203.0.113.202 "$(leader)" 10
fi

if phase bulk; then
	say "10,000 shared entries"
	for k in $(seq 1 10000); do printf '2001:db8:b::%x\n' "$k"; done >"$FL_TMP/bulk.txt"
	for k in $(seq "$NODES"); do echo "n$k $(stat -c %s "$FL_TMP/n$k.err")"; done >"$FL_TMP/bulk.offsets"
	t0=${EPOCHREALTIME/./}
	"$NFBOX" set add blocklist --file "$FL_TMP/bulk.txt" --timeout 1h --socket "$FL_TMP/n2.sock" >/dev/null ||
		failed "set add of 10,000 entries on n2"
	read -r b50 b95 bmax bmiss <<<"$($PY bulk "$FL_TMP/bulk.offsets" "$FL_TMP" n2 10000 "$t0" 300)"
	[ "$bmiss" = 0 ] || failed "10,000 entries: $bmiss nodes do not hold them all after 300 s"
	row "10,000 entries on n2 -> every node holds them, p50 / p95 / worst" "$b50 / $b95 / $bmax ms"
	sleep 5
	idle 20 "10,000 entries"
fi

overflows=$(($(neigh_overflows) - OVERFLOWS0))
[ "$overflows" -le 0 ] || failed "the kernel said 'neighbor table overflow' $overflows times: the test rig lost packets, the figures are not the fleet's"
say "done; cleaning up"
[ "$FAILS" -eq 0 ]
