#!/bin/bash
# nfbox.service under a real systemd: a throw-away root of this machine's
# release (tests/lib/droot.sh) with systemd and the .deb installed, booted
# with systemd-nspawn (its own network namespace, a bpffs of the test's own
# on its /sys/fs/bpf, as systemd mounts one at boot). Through the unit as an
# administrator uses it: enable --now (READY once enforcing, STATUS=), the
# shipped policy enforced on loopback, reload (good and bad; journalctl -p
# err), restart (ExecStop= sees the restart job and the next daemon adopts),
# a bad policy at start (exit 78, no restart loop, the last good policy
# still enforced), stop (detaches) and package removal.
#
# Environment: NFBOX_UNIT_RELEASE=trixie boots Debian 13 instead of this
# machine's release, NFBOX_UNIT_DEB=FILE installs that .deb instead of one
# built here (tests/distro/debian13.sh passes the one built on 13).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/droot.sh
. tests/lib/deb.sh

droot_prepare unit-systemd
rel=${NFBOX_UNIT_RELEASE:-$rel}
command -v systemd-nspawn >/dev/null || { t_fail unit-systemd "systemd-nspawn is missing (packaging/install-deps.sh installs systemd-container)"; t_done; }

droot_cgroup2 "$rel" "$PWD/tests/distro/test_unit_systemd.sh" || { t_fail cgroup2 "cannot make the unified cgroup hierarchy that $rel's systemd needs"; t_done; }

tmp=$(mktemp -d /tmp/nfbox-unit.XXXXXX)
root=$tmp/root
cleanup() {
	droot_halt
	droot_cgroup2_free
	umount "$tmp/bpffs" 2>/dev/null
	droot_free "$root"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

unit_root "$rel" "$root" "$tmp"

# Boot it. Its pins go to a bpffs of ours, bound where systemd would have
# mounted one.
mkdir -p "$tmp/bpffs"
mount -t bpf bpf "$tmp/bpffs" || { t_fail bpffs "cannot mount a bpf filesystem"; t_done; }
if ! droot_boot "$root" "$tmp/nspawn.log" --private-network --bind="$tmp/bpffs:/sys/fs/bpf"; then
	t_fail boot "the container did not boot: $(tail -n 5 "$tmp/nspawn.log" | tr '\n' ' ')"
	t_done
fi
in_ct() { nsenter -t "$DROOT_LEADER" -a "$@"; }
t_ok boot

show() { in_ct systemctl show nfbox -p "$1" --value; }
# A TCP connection to 127.0.0.1:PORT from inside: "drop" (no answer),
# "open" or "refused" (it got through the input hook); anything else (the
# container not reached) is "error ...", never taken for "refused".
probe() {
	local err rc
	err=$(in_ct timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>&1)
	rc=$?
	case $rc in
	0) echo open ;;
	124) echo drop ;;
	*) grep -q 'Connection refused' <<<"$err" && echo refused || echo "error $rc: $err" ;;
	esac
}
want() { # NAME PORT drop|through
	local got ok=0
	got=$(probe "$2")
	case "$3:$got" in
	drop:drop | through:open | through:refused) ok=1 ;;
	esac
	if [ "$ok" = 1 ]; then
		t_ok "$1"
	else
		t_fail "$1" "port $2: $got, want $3"
	fi
}

# --- enable --now: ready once enforcing -----------------------------------------
in_ct systemctl enable --now nfbox >"$tmp/enable.out" 2>&1
if [ "$(show ActiveState)" = active ] && show StatusText | grep -Eq '^enforcing generation 1: [0-9]+ rules$'; then
	t_ok start-ready
else
	t_fail start-ready "$(show ActiveState): $(show StatusText); $(in_ct journalctl -u nfbox --no-pager -n 5 | tr '\n' ' ')"
fi
want shipped-policy-keeps-loopback 8080 through
t_check cli-finds-daemon in_ct nfbox status

# --- reload: good, then bad ---------------------------------------------------------
# Without its loopback rule the shipped policy drops what it does not list,
# as it does for traffic from the network (the only link here is lo).
sed -i '/name: loopback,/d' "$root/etc/nfbox/policy.yaml"
in_ct systemctl reload nfbox >/dev/null 2>&1
want shipped-policy-keeps-ssh 22 through
want shipped-policy-drops-8080 8080 drop
sed -i 's/^  ssh: \[tcp\/22\]$/  ssh: [tcp\/22, tcp\/8080]/' "$root/etc/nfbox/policy.yaml"
in_ct systemctl reload nfbox >/dev/null 2>&1
if show StatusText | grep -q '^enforcing generation 3:'; then t_ok reload; else t_fail reload "$(show StatusText)"; fi
want reload-opens-8080 8080 through
cp "$root/etc/nfbox/policy.yaml" "$tmp/good.yaml"
printf 'version: 1\nrules:\n  - { name: x, sevice: [tcp/1], action: accept }\n' >"$root/etc/nfbox/policy.yaml"
if in_ct systemctl reload nfbox >/dev/null 2>&1; then
	t_fail bad-reload "systemctl reload succeeded on an invalid policy"
elif show StatusText | grep -q '^reload failed, unchanged: enforcing generation 3:'; then
	t_ok bad-reload
else
	t_fail bad-reload "$(show StatusText)"
fi
if in_ct journalctl -u nfbox -p err --no-pager | grep -q "policy.yaml:3:16: error: unknown key 'sevice'"; then
	t_ok journal-err-priority
else
	t_fail journal-err-priority "$(in_ct journalctl -u nfbox -p err --no-pager | tail -n 3 | tr '\n' ' ')"
fi
want bad-reload-keeps-8080 8080 through

# --- restart with the bad file: fails once, keeps the last good policy ------------
in_ct systemctl restart nfbox >/dev/null 2>&1
sleep 3 # past RestartSec=: a restart would have happened by now
if [ "$(show ActiveState)" = failed ] && [ "$(show ExecMainStatus)" = 78 ] && [ "$(show NRestarts)" = 0 ]; then
	t_ok bad-policy-no-restart-loop
else
	t_fail bad-policy-no-restart-loop "$(show ActiveState), status $(show ExecMainStatus), $(show NRestarts) restarts"
fi
want bad-start-keeps-policy-8080 8080 through
want bad-start-keeps-policy-9999 9999 drop

# --- restart: the next daemon adopts -------------------------------------------------
cp "$tmp/good.yaml" "$root/etc/nfbox/policy.yaml"
in_ct systemctl reset-failed nfbox
in_ct systemctl start nfbox
in_ct systemctl restart nfbox
if in_ct nfbox status | grep -q 'adopted at start: enforcement had no gap' &&
	in_ct journalctl -u nfbox --no-pager | grep -q 'keeping the policy enforced for the next daemon'; then
	t_ok restart-adopts
else
	t_fail restart-adopts "$(in_ct nfbox status 2>&1 | grep -i 'pin dir'); $(in_ct journalctl -u nfbox --no-pager -n 6 | tr '\n' ' ')"
fi
want restart-keeps-9999-dropped 9999 drop

# --- stop detaches; removal leaves no link --------------------------------------------
in_ct systemctl stop nfbox
if [ ! -e "$tmp/bpffs/nfbox" ] && tables=$(in_ct nft list tables 2>&1) && ! grep -q '^table inet nfbox$' <<<"$tables"; then
	t_ok stop-detaches
else
	t_fail stop-detaches "left: $(ls "$tmp/bpffs") $(in_ct nft list tables 2>&1 | tr '\n' ' ')"
fi
want stop-opens-9999 9999 through

# --- upgrade: the package's restart keeps the policy ------------------------------
# dpkg -i of the package over itself runs what an upgrade runs (prerm
# upgrade, postinst configure OLD-VERSION: a restart).
in_ct systemctl start nfbox
pkg=/var/tmp/$(basename "$deb")
keeps=$(in_ct journalctl -u nfbox --no-pager | grep -c 'keeping the policy enforced')
in_ct dpkg -i "$pkg" >"$tmp/upgrade.out" 2>&1
if [ "$(in_ct journalctl -u nfbox --no-pager | grep -c 'keeping the policy enforced')" -gt "$keeps" ] &&
	[ "$(show ActiveState)" = active ] && in_ct nfbox status | grep -q 'adopted at start'; then
	t_ok upgrade-restart-adopts
else
	t_fail upgrade-restart-adopts "$(show ActiveState); $(tail -n 2 "$tmp/upgrade.out" | tr '\n' ' '); $(in_ct journalctl -u nfbox --no-pager -n 8 | tr '\n' ' ')"
fi
want upgrade-keeps-9999-dropped 9999 drop

# --- removal stops and leaves no link; a new installation is not started ----------
in_ct apt-get remove -y nfbox >"$tmp/remove.out" 2>&1
# (not "!= active" nor an empty find: a failed show or find gives those too)
state=$(show ActiveState)
if [[ "$state" =~ ^(inactive|failed)$ ]] && links=$(find "$root/etc/systemd" -name nfbox.service) && [ -z "$links" ] &&
	[ ! -e "$tmp/bpffs/nfbox" ]; then
	t_ok remove
else
	t_fail remove "$(show ActiveState); links: $(find "$root/etc/systemd" -name nfbox.service); pins: $(ls -d "$tmp/bpffs/nfbox" 2>/dev/null)"
fi
in_ct dpkg -i "$pkg" >"$tmp/reinstall.out" 2>&1
if [ "$(show ActiveState)" = inactive ] && [ "$(show UnitFileState)" = disabled ]; then
	t_ok install-does-not-start
else
	t_fail install-does-not-start "$(show ActiveState), $(show UnitFileState)"
fi
t_done
