#!/bin/bash
# runner: long
# The Cockpit pages (cockpit-nfbox) in a real browser, as an operator uses
# them: a throw-away root of this machine's release (tests/lib/droot.sh)
# with nfbox.service, Debian's cockpit and the cockpit-nfbox .deb built
# from this tree, booted with systemd-nspawn inside the appliance namespace
# of tests/lib/netns.sh (a client namespace on 198.51.100.0/24 sends it
# traffic). Debian's chromium, headless, runs on this machine in that
# namespace and is driven through the DevTools protocol
# (tests/distro/cockpit_drive.py) against cockpit-ws on 127.0.0.1:9090.
#
# As the operator "admin" (password login, sudo for Cockpit's
# administrative access): log in; see a rule's counter move while traffic
# flows; ban an address on the Sets page and see its traffic dropped;
# read its event on the Events page; validate a broken policy and see the
# error at its line; apply a good policy with confirm and confirm it;
# apply one and let it roll back; trace a packet and see the rule that
# decides. As "viewer", a member of the daemon's --socket-group only: the
# read-only pages. Every assertion is on what the page shows (and, where
# the page claims an effect, on the effect as well).
#
# Takes 70 s to 2 minutes on 2 cores (a root installed and booted, a
# browser), longer when the .deb is built (if no suite has yet) or the
# release's cached root made (once). make check-long runs it on this
# machine's release and, as distro/test_cockpit[trixie] (tests/run.sh's
# BOTH_RELEASES), on the other (Debian 13 on a Debian 12 machine).
# Screenshots go to the directory printed on the "# screenshots:" line
# (kept; NFBOX_COCKPIT_SHOTS=DIR chooses DIR/RELEASE).
#
# Environment: as tests/distro/test_unit_systemd.sh (NFBOX_UNIT_RELEASE=
# trixie boots Debian 13, NFBOX_UNIT_DEB=FILE installs that .deb, with the
# cockpit-nfbox .deb beside it); NFBOX_COCKPIT_BACKPORTS=1 installs
# Cockpit from bookworm-backports on 12; NFBOX_COCKPIT_HOLD=1 waits, all up, before the
# browser starts until the file $tmp/release exists (to develop the driver
# against it; the driver's environment is in $tmp/env).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/droot.sh
. tests/lib/deb.sh
. tests/lib/netns.sh
PY=/usr/bin/python3
NET=$PWD/tests/lib/net.py
DRIVE=$PWD/tests/distro/cockpit_drive.py

droot_prepare cockpit
rel=${NFBOX_UNIT_RELEASE:-$rel}
droot_cgroup2 "$rel" "$PWD/tests/distro/test_cockpit.sh" || { t_fail cgroup2 "cannot make the unified cgroup hierarchy that $rel's systemd needs"; t_done; }
for tool in systemd-nspawn:systemd-container chromium:chromium; do
	command -v "${tool%%:*}" >/dev/null || { t_fail cockpit "${tool%%:*} is missing (packaging/install-deps.sh --long installs ${tool#*:}; make check-long runs it)"; t_done; }
done
$PY -c 'import websocket' 2>/dev/null || { t_fail cockpit "python3-websocket is missing (packaging/install-deps.sh --long installs it)"; t_done; }

BANNED=198.51.100.66
ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
tmp=$NS_TMP
root=$tmp/root
# (a directory of the release's own: the runner runs it on 12 and 13 at once)
shots=${NFBOX_COCKPIT_SHOTS:+$NFBOX_COCKPIT_SHOTS/$rel}
shots=${shots:-$(mktemp -d "/tmp/nfbox-cockpit-shots-$rel.XXXXXX")}
mkdir -p "$shots"
echo "# screenshots: $shots"
cockpit_cleanup() {
	droot_halt
	droot_cgroup2_free
	umount "$tmp/bpffs" 2>/dev/null
	droot_free "$root"
	ns_cleanup
}
trap cockpit_cleanup EXIT

# ---- the root: nfbox, cockpit, cockpit-nfbox, two users ----
# Cockpit from the release itself (287 on 12, the oldest the pages
# support; NFBOX_COCKPIT_BACKPORTS=1: bookworm-backports' newer one); sudo
# for its administrative access.
cockpit="cockpit cockpit-ws cockpit-system cockpit-bridge"
if [ "$rel" = bookworm ] && [ -z "${NFBOX_COCKPIT_BACKPORTS:-}" ]; then
	cockpit=$(printf '%s/bookworm ' $cockpit)
fi
PASS=nfbox-cockpit-test
users() { # ROOT
	in_root "$1" sh -c "groupadd -f nfbox-ro && useradd -m -s /bin/bash -G sudo admin && useradd -m -s /bin/bash -G nfbox-ro viewer &&
		printf 'admin:$PASS\nviewer:$PASS\n' | chpasswd" >"$tmp/users.out" 2>&1 ||
		{ t_fail users "$(cat "$tmp/users.out")"; t_done; }
}
unit_root "$rel" "$root" "$tmp" --beside cockpit-nfbox --then users sudo $cockpit
t_ok install
echo "# cockpit-ws $(in_root "$root" dpkg-query -W -f='${Version}' cockpit-ws)"
# the read-only view as /etc/default/nfbox says to set it up
echo 'NFBOX_OPTS="--socket-group nfbox-ro"' >"$root/etc/default/nfbox"
mkdir -p "$root/etc/systemd/system/nfbox.service.d"
printf '[Service]\nCapabilityBoundingSet=CAP_CHOWN\n' >"$root/etc/systemd/system/nfbox.service.d/socket-group.conf"
# a host name that resolves (sudo says so in Cockpit's dialog otherwise)
echo nfbox-cockpit >"$root/etc/hostname"
echo '127.0.1.1 nfbox-cockpit' >>"$root/etc/hosts"

# The policy the operator starts from. Line numbers matter: the Policy
# page's checks break the rule on line $PROBE_LINE.
cat >"$root/etc/nfbox/policy.yaml" <<'YAML'
version: 1
interfaces: { loopback: [lo], lan: [lan0] }
sets:
  banned: { dynamic: true }
hooks:
  input: { default: drop }
options: { established: accept }
rules:
  - { name: loopback, hook: input, in: loopback, action: accept }
  - { name: drop-banned, hook: input, from: banned, action: drop, log: true }
  - { name: probe, hook: input, in: lan, service: udp/7000, action: accept }
YAML
PROBE_LINE=11

# ---- boot it in the appliance namespace ----
mkdir -p "$tmp/bpffs"
mount -t bpf bpf "$tmp/bpffs" || { t_fail bpffs "cannot mount a bpf filesystem"; t_done; }
if ! SYSTEMD_NSPAWN_API_VFS_WRITABLE=network droot_boot "$root" "$tmp/nspawn.log" \
	--network-namespace-path="/run/netns/$NS_A" --resolv-conf=off --bind="$tmp/bpffs:/sys/fs/bpf"; then
	t_fail boot "the container did not boot: $(tail -n 5 "$tmp/nspawn.log" | tr '\n' ' ')"
	t_done
fi
in_ct() { nsenter -t "$DROOT_LEADER" -a "$@"; }
show() { in_ct systemctl show "$1" -p "$2" --value; }
in_ct systemctl enable --now nfbox >"$tmp/enable.out" 2>&1
if [ "$(show nfbox ActiveState)" = active ]; then
	t_ok nfbox-started
else
	t_fail nfbox-started "$(show nfbox ActiveState): $(in_ct journalctl -u nfbox --no-pager -n 8 | tr '\n' ' ')"
	t_done
fi
in_ct systemctl start cockpit.socket >"$tmp/cockpit.out" 2>&1
cockpit_up() { in_a "$PY" "$NET" tcp-probe 127.0.0.1 9090 1 | grep -q '^open'; }
if wait_until 20 cockpit_up; then
	t_ok cockpit-listening
else
	t_fail cockpit-listening "$(show cockpit.socket ActiveState); $(tail -n 3 "$tmp/cockpit.out" | tr '\n' ' ')"
	t_done
fi

# ---- the browser: the operator's tasks, then the read-only view ----
# The driver runs commands on this machine (traffic from the client
# namespace, the daemon's own view through the container); it prints the
# test's "ok"/"FAIL" lines.
export COCKPIT_PASS=$PASS COCKPIT_SHOTS=$shots COCKPIT_NET=$NET COCKPIT_NS_C=$NS_C COCKPIT_NS_A=$NS_A
export COCKPIT_LEADER=$DROOT_LEADER COCKPIT_ROOT=$root COCKPIT_C4=$C4 COCKPIT_A4=$A4L COCKPIT_BANNED=$BANNED
export COCKPIT_PROBE_LINE=$PROBE_LINE
in_c ip addr add $BANNED/24 dev c0
if [ -n "${NFBOX_COCKPIT_HOLD:-}" ]; then
	export -p | grep ' COCKPIT_' >"$tmp/env"
	echo "# holding: (. $tmp/env; ip netns exec $NS_A $PY $DRIVE operator); touch $tmp/release to go on"
	while [ ! -e "$tmp/release" ]; do sleep 1; done
fi
# (It exits 1 once it has said what failed; another status: it crashed.)
drive() { # operator|viewer
	in_a "$PY" "$DRIVE" "$1" 2>"$tmp/drive-$1.err"
	case $? in
	0) ;;
	1) T_FAILED=$((T_FAILED + 1)) ;;
	*) t_fail "drive-$1" "the driver stopped: $(tail -n 3 "$tmp/drive-$1.err" | tr '\n' ' ')" ;;
	esac
}
drive operator
drive viewer
t_done
