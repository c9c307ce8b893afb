#!/bin/bash
# Fail closed wherever nfbox runs: `ip netns exec NS nfbox run` with default
# options pins into a bpf filesystem of the mount namespace outside its own
# (here: this test's), so SIGKILL leaves the policy enforced and the next
# daemon adopts it; two appliances in two namespaces on default paths keep
# apart; state pinned for another namespace is never adopted; a bpffs that
# would die with nfbox is refused; --no-pin says what it costs.
#
# The test runs in a mount namespace of its own, with a tmpfs on /run: the
# bpffs nfbox mounts, /run/netns and /run/nfbox live and die with it, and
# the host's mounts are never touched.
set -u
if [ -z "${NFBOX_PRIVATE_MNT:-}" ]; then
	exec unshare --mount --propagation private env NFBOX_PRIVATE_MNT=1 "$0" "$@"
fi
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
mount -t tmpfs -o mode=0755 nfbox-test-run /run || { t_fail setup "cannot mount a tmpfs on /run"; t_done; }
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
NS_B=$NS_PREFIX-b
PIDS=()

cleanup_all() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	ip netns pids "$NS_B" 2>/dev/null | xargs -r kill -9 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	ns_cleanup
	umount /sys/fs/bpf 2>/dev/null
}

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
trap cleanup_all EXIT
ip netns add "$NS_B" || { t_fail setup "cannot add $NS_B"; t_done; }
if stat -f -c %T /sys/fs/bpf | grep -q bpf; then
	t_fail bpffs-absent-first "/sys/fs/bpf is already a bpf filesystem here: nothing to check"
else
	t_ok bpffs-absent-first
fi
printf 'version: 1\nhooks: { forward: { default: drop } }\nrules:\n  - { name: web, service: [tcp/80], action: accept }\n' >"$NS_TMP/p.yaml"

# run_default NS OUT [OPTIONS...]: nfbox run on default paths in NS; waits for
# "ready" (or exit); the daemon's pid is in $DPID.
run_default() {
	local ns=$1 out=$2
	shift 2
	ip netns exec "$ns" "$NFBOX" run --policy "$NS_TMP/p.yaml" --state-dir "$NS_TMP/state-$ns" "$@" >"$out.out" 2>"$out.err" &
	DPID=$!
	PIDS+=("$DPID")
	for _ in $(seq 100); do
		grep -q '^ready$' "$out.out" && return 0
		kill -0 "$DPID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
ctl() { local ns=$1; shift; ip netns exec "$ns" "$NFBOX" "$@"; }
# denied: a connection to the listener on tcp/8080 times out (dropped; not
# refused, not failed for want of the listener)
denied() { local r; r=$(in_c "$NET" tcp-probe $S4 8080 1); [ "${r%% *}" = timeout ]; }
in_s "$NET" tcp-listen 8080 60 >/dev/null 2>&1 &
wait_listen in_s 8080 || { t_fail setup "no listener on tcp/8080"; t_done; }

# ---- 1. default paths under ip netns exec, SIGKILL, adoption ----
if run_default "$NS_A" "$NS_TMP/a1"; then t_ok default-start; else t_fail default-start "$(cat "$NS_TMP/a1.err")"; fi
PIN_A=/sys/fs/bpf/nfbox-$NS_A
[ -e "$PIN_A/prog" ] && stat -f -c %T /sys/fs/bpf | grep -q bpf && t_ok pins-in-outer-namespace ||
	t_fail pins-in-outer-namespace "no $PIN_A/prog seen from outside nfbox's mount namespace"
st=$(ctl "$NS_A" status 2>&1)
echo "$st" | grep -q "pin dir:    $PIN_A$" && echo "$st" | grep -q "netns:      $NS_A (cookie" &&
	t_ok default-socket-per-netns || t_fail default-socket-per-netns "$st"
[ -S "/run/nfbox/nfbox-$NS_A.sock" ] && t_ok socket-named-after-netns || t_fail socket-named-after-netns "$(ls /run/nfbox)"
denied && t_ok enforces || t_fail enforces "tcp/8080 passed"
kill -9 "$DPID"; wait "$DPID" 2>/dev/null
denied && t_ok sigkill-stays-closed || t_fail sigkill-stays-closed "tcp/8080 passed after SIGKILL: the pins died with nfbox"
if run_default "$NS_A" "$NS_TMP/a2"; then
	ctl "$NS_A" status | grep -q "pin dir:    $PIN_A (adopted at start" && t_ok restart-adopts ||
		t_fail restart-adopts "$(ctl "$NS_A" status)"
else
	t_fail restart-adopts "$(cat "$NS_TMP/a2.err")"
fi
A2=$DPID

# ---- 2. a second appliance on default paths in another namespace ----
if run_default "$NS_B" "$NS_TMP/b1"; then t_ok second-appliance-starts; else t_fail second-appliance-starts "$(cat "$NS_TMP/b1.err")"; fi
B1=$DPID
[ -e "/sys/fs/bpf/nfbox-$NS_B/prog" ] && [ -S "/run/nfbox/nfbox-$NS_B.sock" ] && t_ok second-appliance-own-paths ||
	t_fail second-appliance-own-paths "$(ls /sys/fs/bpf /run/nfbox)"
kill -9 "$B1"; wait "$B1" 2>/dev/null
if run_default "$NS_B" "$NS_TMP/b2"; then
	sb=$(ctl "$NS_B" status)
	sa=$(ctl "$NS_A" status)
	echo "$sb" | grep -q "adopted at start" && echo "$sa" | grep -q "pid $A2," && t_ok appliances-apart ||
		t_fail appliances-apart "B: $sb / A: $sa"
else
	t_fail appliances-apart "$(cat "$NS_TMP/b2.err")"
fi
denied && t_ok first-still-enforces || t_fail first-still-enforces "tcp/8080 passed"

# ---- 3. never adopt another namespace's state ----
ip netns exec "$NS_B" "$NFBOX" run --policy "$NS_TMP/p.yaml" --state-dir "$NS_TMP/state-b" --socket "$NS_TMP/other.sock" --pin-dir "$PIN_A" \
	>"$NS_TMP/x.out" 2>"$NS_TMP/x.err"
rc=$?
[ "$rc" = 1 ] && grep -q "enforces another network namespace" "$NS_TMP/x.err" && [ -e "$PIN_A/prog" ] &&
	ctl "$NS_A" status | grep -q "pid $A2," && denied && t_ok foreign-state-not-adopted ||
	t_fail foreign-state-not-adopted "rc $rc: $(cat "$NS_TMP/x.err")"

# ---- 4. a bpffs that dies with nfbox, and --no-pin ----
ip netns exec "$NS_B" sh -c 'mkdir -p "$1/priv" && mount -t bpf bpf "$1/priv" &&
	exec "$2" run --policy "$1/p.yaml" --state-dir "$1/state" --socket "$1/priv.sock" --pin-dir "$1/priv/nfbox"' \
	sh "$NS_TMP" "$NFBOX" >"$NS_TMP/priv.out" 2>"$NS_TMP/priv.err"
rc=$?
[ "$rc" = 1 ] && grep -q "only nfbox's own mount namespace has" "$NS_TMP/priv.err" && t_ok private-bpffs-refused ||
	t_fail private-bpffs-refused "rc $rc: $(cat "$NS_TMP/priv.err")"
kill -TERM "$A2"; wait "$A2" 2>/dev/null
[ ! -e "$PIN_A" ] && t_ok sigterm-removes-pins || t_fail sigterm-removes-pins "$(ls "$PIN_A")"
if run_default "$NS_A" "$NS_TMP/np" --no-pin; then
	ctl "$NS_A" status | grep -q "pin dir:    none (--no-pin): enforcement ends with this process" &&
		grep -q "enforcement ends with it" "$NS_TMP/np.err" && [ ! -e "$PIN_A" ] && denied && t_ok no-pin-says-so ||
		t_fail no-pin-says-so "$(ctl "$NS_A" status; cat "$NS_TMP/np.err")"
	kill -9 "$DPID"; wait "$DPID" 2>/dev/null
	# What --no-pin means: the policy ended with the process.
	in_c "$NET" tcp-connect $S4 8080 2 >/dev/null 2>&1 && t_ok no-pin-ends-with-process ||
		t_fail no-pin-ends-with-process "tcp/8080 still denied after SIGKILL with --no-pin"
else
	t_fail no-pin-says-so "$(cat "$NS_TMP/np.err")"
fi
t_done
