#!/bin/bash
# The default pin directory /sys/fs/bpf/nfbox on a machine where
# /sys/fs/bpf is not a bpf filesystem: nfbox mounts one itself. Run inside
# `ip netns exec`, whose private mount namespace has a fresh /sys, so the
# host's /sys/fs/bpf is never touched.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
printf 'version: 1\nhooks: { forward: { default: drop } }\nrules:\n  - { name: web, service: [tcp/80], action: accept }\n' >"$NS_TMP/p.yaml"
# One shell in the appliance namespace runs the daemon with the default
# pin dir, checks, and stops it: the mount lives as long as that shell.
ip netns exec "$NS_A" bash -c '
	stat -f -c %T /sys/fs/bpf | grep -q bpf && echo "already-bpffs"
	"$0" run --policy "$1" --socket "$2" >"$3/out" 2>"$3/err" &
	pid=$!
	for i in $(seq 100); do grep -q "^ready$" "$3/out" && break; sleep 0.1; done
	stat -f -c %T /sys/fs/bpf
	[ -e /sys/fs/bpf/nfbox/prog ] && echo pinned
	"$0" status --socket "$2" | grep "pin dir"
	touch "$3/ready"
	# Stay up until the outer test has probed the traffic.
	for i in $(seq 200); do [ -e "$3/probed" ] && break; sleep 0.05; done
	kill -TERM $pid; wait $pid; echo "rc=$?"
	[ -e /sys/fs/bpf/nfbox ] || echo cleaned
' "$NFBOX" "$NS_TMP/p.yaml" "$NS_TMP/s.sock" "$NS_TMP" >"$NS_TMP/result" 2>&1 &
shell=$!
for _ in $(seq 100); do [ -e "$NS_TMP/ready" ] && break; sleep 0.1; done
in_s "$NET" tcp-listen 8080 3 >/dev/null 2>&1 &
wait_listen in_s 8080
if in_c "$NET" tcp-connect $S4 8080 1 >/dev/null 2>&1; then t_fail default-pins-enforce "tcp/8080 passed"; else t_ok default-pins-enforce; fi
touch "$NS_TMP/probed"
wait $shell
r=$(cat "$NS_TMP/result")
if echo "$r" | grep -q already-bpffs; then
	t_fail bpffs-absent-first "/sys/fs/bpf was already bpffs in the namespace: nothing to check"
else
	t_ok bpffs-absent-first
fi
if echo "$r" | grep -qx bpf_fs && echo "$r" | grep -q pinned && echo "$r" | grep -q "pin dir:    /sys/fs/bpf/nfbox"; then
	t_ok mounts-bpffs-and-pins
else
	t_fail mounts-bpffs-and-pins "$r $(cat "$NS_TMP/err")"
fi
if echo "$r" | grep -q rc=0 && echo "$r" | grep -q cleaned; then t_ok sigterm-removes-default-pins; else t_fail sigterm-removes-default-pins "$r"; fi
t_done
