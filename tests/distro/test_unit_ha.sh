#!/bin/bash
# runner: long
# An HA pair as the package runs it: two booted Debian roots (this machine's
# release, or NFBOX_UNIT_RELEASE=trixie) with nfbox, keepalived and
# conntrackd installed, each booted with systemd-nspawn inside a node
# namespace of tests/lib/hapair.sh (two switches and a sync link), and
# nfbox.service as shipped running each node's policy: nfbox starts and
# supervises keepalived and conntrackd under the unit's sandbox; one node
# is master, the other backup; server-push flows (TCP and UDP) through the
# master go on through the backup when the master's links are cut (their
# state came over conntrackd's sync: without it not one packet would pass),
# and the backup's status says master.
# Two booted roots cost about a minute and a half: `make check-long` runs it
# (# runner: long); every single-node feature under the unit is in
# tests/distro/test_unit_features.sh, in `make check`.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/droot.sh
. tests/lib/deb.sh
. tests/lib/hapair.sh
NET=$PWD/tests/lib/net.py

droot_prepare unit-ha
rel=${NFBOX_UNIT_RELEASE:-$rel}
droot_cgroup2 "$rel" "$PWD/tests/distro/test_unit_ha.sh" || { t_fail cgroup2 "cannot make the unified cgroup hierarchy that $rel's systemd needs"; t_done; }
command -v systemd-nspawn >/dev/null || { t_fail unit-ha "systemd-nspawn is missing (packaging/install-deps.sh installs systemd-container)"; t_done; }
P=nuh$$ SW=$P-sw C=$P-c S=$P-s ADVERT=100ms
TMP=$(mktemp -d /tmp/nfbox-unit-ha.XXXXXX)
declare -A PID=() NSPAWN=() LEADER=()
ha_cleanup() {
	local n
	for n in 1 2; do
		[ -n "${NSPAWN[$n]:-}" ] || continue
		droot_halt "${NSPAWN[$n]}"
	done
	for n in 1 2; do
		umount "$TMP/bpffs$n" 2>/dev/null
		droot_free "$TMP/root$n"
	done
	droot_cgroup2_free
	teardown
}
trap ha_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- one root with the pair's packages, copied for the second node ----
if [ -n "${NFBOX_UNIT_DEB:-}" ]; then
	deb=$NFBOX_UNIT_DEB
elif ! deb=$(deb_of_tree 2>"$TMP/build.err"); then
	t_fail deb-build "$(grep -m 1 -iE 'error|unmet' "$TMP/build.err")"
	t_done
fi
droot_new "$rel" "$TMP/root1" 2>"$TMP/root.err" || { t_fail root "$(cat "$TMP/root.err")"; t_done; }
cp "$deb" "$TMP/root1/var/tmp/"
t=(apt-get install -y --no-install-recommends)
if [ "$rel" = bookworm ]; then
	echo "deb $(droot_mirror) bookworm-backports main" >"$TMP/root1/etc/apt/sources.list.d/bookworm-backports.list"
	t+=(-t bookworm-backports)
fi
if ! in_root "$TMP/root1" sh -c "apt-get -qq update && ${t[*]} systemd dbus nftables keepalived conntrackd /var/tmp/$(basename "$deb")" >"$TMP/install.out" 2>&1; then
	t_fail install "$(grep -m 3 -E 'E:|Depends' "$TMP/install.out" | tr '\n' ' ')"
	t_done
fi
droot_unmount "$TMP/root1"
# A drop-in that narrows the unit (NFBOX_UNIT_DROPIN, as in
# tests/distro/test_unit_features.sh): how the checks were seen to fail.
if [ -n "${NFBOX_UNIT_DROPIN:-}" ]; then
	mkdir -p "$TMP/root1/etc/systemd/system/nfbox.service.d"
	printf '[Service]\n%s\n' "$NFBOX_UNIT_DROPIN" >"$TMP/root1/etc/systemd/system/nfbox.service.d/narrow.conf"
fi
cp -a "$TMP/root1" "$TMP/root2" && mount --bind "$TMP/root2" "$TMP/root2" || { t_fail root2 "cannot copy the root"; t_done; }
# keepalived and conntrackd are nfbox's to start, not their own units'
for n in 1 2; do
	for u in keepalived conntrackd; do chroot "$TMP/root$n" systemctl disable "$u" >/dev/null 2>&1; done
done

# ---- the pair's network, and each node's root booted in its namespace ----
topology && node 1 && node 2 || { t_fail setup "cannot build the namespaces"; t_done; }
boot() { # N
	local n=$1 l=
	policy "$n" bpf none >"$TMP/root$n/etc/nfbox/policy.yaml"
	mkdir -p "$TMP/bpffs$n" && mount -t bpf bpf "$TMP/bpffs$n" || return 1
	SYSTEMD_NSPAWN_API_VFS_WRITABLE=network droot_boot "$TMP/root$n" "$TMP/nspawn$n.log" \
		--network-namespace-path="/run/netns/$P-f$n" --resolv-conf=off --bind="$TMP/bpffs$n:/sys/fs/bpf"
	# two at once: the pair's trap stops both
	NSPAWN[$n]=$DROOT_NSPAWN l=$DROOT_LEADER
	DROOT_NSPAWN= DROOT_LEADER=
	LEADER[$n]=$l
	[ -n "$l" ] && in_node "$n" systemctl enable --now nfbox >"$TMP/enable$n.out" 2>&1
}
in_node() { local n=$1; shift; nsenter -t "${LEADER[$n]}" -a "$@"; }
role() { in_node "$1" nfbox status --json 2>/dev/null | jq -r .ha.role 2>/dev/null; }
role_is() { [ "$(role "$1")" = "$2" ]; }
for n in 1 2; do
	if boot $n && [ "$(in_node $n systemctl show nfbox -p ActiveState --value)" = active ]; then
		t_ok "node$n-started"
	else
		t_fail "node$n-started" "$(tail -n 3 "$TMP/nspawn$n.log" | tr '\n' ' ') $(in_node $n journalctl -u nfbox --no-pager -n 6 2>/dev/null | tr '\n' ' ')"
		t_done
	fi
done
daemons() { in_node "$1" nfbox status --json |
	jq -r '.ha as $h | ["keepalived", "conntrackd"] | map("\(.):\(if ($h[.].pid // 0) != 0 then "up" else "down" end)") | join(" ")'; }
in_cgroup() { in_node 1 systemctl status nfbox --no-pager -l >"$TMP/cgroup" 2>&1; grep -q "keepalived" "$TMP/cgroup" && grep -q "conntrackd" "$TMP/cgroup"; }
t_check node1-master wait_until 10 role_is 1 master
t_check node2-backup role_is 2 backup
t_check daemons-under-unit [ "$(daemons 1)" = "keepalived:up conntrackd:up" ]
t_check daemons-in-unit-cgroup in_cgroup

# ---- server-push flows through the master, the master's links cut ----
# After the client's first word only the server sends (push-serve): a node
# without the flows' state drops every packet of them, and nothing picks
# them up again, so they go on only on the state conntrackd synced.
ip netns exec $S timeout 40 "$NET" push-serve 5000 35 >"$TMP/serve" 2>&1 &
wait_until 5 eval "ip netns exec $S ss -lntu | grep -q ':5000 '"
ip netns exec $C timeout 40 "$NET" push-watch 198.51.100.10 5000 30 "$TMP/watch" >/dev/null 2>&1 &
arrived() { awk -v p="$1" -v t="$2" '$1 == p && $2 > t { n++ } END { print n + 0 }' "$TMP/watch" 2>/dev/null || echo 0; }
flowing() { [ "$(arrived tcp "$1")" -ge 10 ] && [ "$(arrived udp "$1")" -ge 10 ]; }
t_check flows-through-master wait_until 5 flowing 0
synced() { [ "$(in_node 2 nfbox status --json | jq -r .ha.sync.from_peer 2>/dev/null)" -ge 2 ] 2>/dev/null; }
t_check backup-holds-the-flows wait_until 12 synced
t0=$(date +%s.%N)
ip -n $SW link set p1l down
ip -n $SW link set p1w down
t_check backup-takes-over wait_until 5 role_is 2 master
if wait_until 10 flowing "$(echo "$t0 + 1" | bc)"; then
	t_ok "flows-survive-failover (udp stopped for $(awk -v t="$t0" '$1 == "udp" && $2 > t - 1 { if (last && $2 - last > g) g = $2 - last; last = $2 } END { printf "%.2f", g }' "$TMP/watch") s)"
else
	t_fail flows-survive-failover "after the failover: tcp $(arrived tcp "$t0"), udp $(arrived udp "$t0") lines"
fi
t_done
