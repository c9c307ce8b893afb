#!/bin/bash
# Upgrades of the package keep enforcing: `apt-get install ./nfbox_NEW.deb`
# over an older nfbox that enforces a policy under traffic, in a booted root
# of this machine's release (tests/lib/droot.sh) whose network namespace is
# the appliance's of tests/lib/netns.sh: a client and a server namespace
# on veth links, real datagrams forwarded through the appliance. The older
# packages are built here from older commits (git archive; kept in
# /var/cache/nfbox/debs by commit), the new one from this tree:
#   - SAME (0e705a1, layout 13 as this tree, before the IPv4-mapped drop):
#     the new daemon adopts the state and runs its own programs in place
#     of the old (the mapped source, which passed, is dropped);
#   - OLDER (1e0c523, the last release, layout 12): the new daemon sets
#     the old state aside, still enforcing, loads its own classifier, then
#     removes the old;
# and in both, with a dynamic-set ban in place (dropped at XDP too): no
# datagram of a banned or denied flow, sent every millisecond throughout,
# reaches the server; /etc/nfbox/policy.yaml and /etc/default/nfbox as the
# administrator changed them are kept; the dynamic set, the rules' last
# hits, a fleet's applied revision (STATE/fleet/applied) and, with the same
# layout, the counters are kept (with another layout the counters start from
# 0, as documented). Then downgrades: to a package with the check (this
# tree's relabelled older) refused with a message, the policy enforced
# throughout; to the older commit's, which has none, the older daemon adopts
# the state (SAME) or refuses it and leaves it enforcing (OLDER, whose
# --fresh cannot replace it either, as README.Debian says).
#
# Environment: NFBOX_UPGRADE_DEB=FILE tests that .deb as the new one instead
# of one built from this tree (e.g. a build of main, the negative control).
# NFBOX_DEB_CACHE: where the older packages are kept (/var/cache/nfbox/debs).
# runner: long
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/droot.sh
. tests/lib/upgrade.sh

SAME=0e705a1670d2d7f9f7e4936a4c77d6d2a72d04f6
OLDER=1e0c5234e67411b1000d484afb65f0a27c8da3f9
DEB_CACHE=${NFBOX_DEB_CACHE:-/var/cache/nfbox/debs}

droot_prepare upgrade
command -v systemd-nspawn >/dev/null || { t_fail upgrade "systemd-nspawn is missing (packaging/install-deps.sh installs systemd-container)"; t_done; }
NET=$PWD/tests/lib/net.py

tmp=$(mktemp -d /tmp/nfbox-upgrade.XXXXXX)
root=$tmp/root
UP_TMP=$tmp
NS_TMP=
cleanup() {
	up_traffic_stop
	droot_halt
	[ -n "$NS_TMP" ] && ns_cleanup
	droot_free "$root"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- the packages ------------------------------------------------------------------
# deb_of COMMIT: the package of an older commit, built once (under a lock)
# and kept by commit, release and architecture. Its version is the tree's
# VERSION~old.N (N: the commit's place in the history), below this tree's.
deb_of() {
	local c=$1 out
	out=$DEB_CACHE/nfbox-$c-$rel-$(dpkg --print-architecture).deb
	mkdir -p "$DEB_CACHE" || return 1
	(
		flock 9
		[ -f "$out" ] && exit 0
		src=$tmp/src-$c
		mkdir -p "$src"
		git archive "$c" | tar -x -C "$src" || exit 1
		v=$(cat "$src/VERSION")~old.$(git rev-list --count "$c")
		echo "$v" >"$src/VERSION"
		{
			printf 'nfbox (%s) unstable; urgency=medium\n\n' "$v"
			printf '  * Commit %s, built by tests/distro/test_upgrade.sh.\n\n' "$c"
			printf ' -- nfbox maintainers <maintainers@nfbox.dev>  %s\n\n' "$(git show -s --format=%aD "$c")"
			cat "$src/packaging/debian/changelog"
		} >"$src/changelog" && mv "$src/changelog" "$src/packaging/debian/changelog"
		deb=$(cd "$src" && packaging/build-deb.sh --outdir "$tmp/out-$c" 2>"$DEB_CACHE/$c.log") || exit 1
		cp "$deb" "$out.tmp" && mv "$out.tmp" "$out"
		rm -rf "$src" "$tmp/out-$c"
	) 9>"$DEB_CACHE/.$c.lock" || { echo "building $c failed; see $DEB_CACHE/$c.log" >&2; return 1; }
	echo "$out"
}
for c in $SAME $OLDER; do
	if ! git cat-file -e "$c^{commit}" 2>/dev/null; then
		t_fail history "commit $c is not in this clone (a shallow clone? 'git fetch --unshallow'): the older packages are built from it"
		t_done
	fi
done
t0=$SECONDS
declare -A old_deb
for c in $SAME $OLDER; do
	if ! old_deb[$c]=$(deb_of "$c" 2>"$tmp/build.err"); then
		t_fail "build-${c:0:7}" "$(tail -n 3 "$tmp/build.err" | tr '\n' ' ')"
		t_done
	fi
done
if [ -n "${NFBOX_UPGRADE_DEB:-}" ]; then
	new_deb=$NFBOX_UPGRADE_DEB
elif ! new_deb=$(packaging/build-deb.sh --outdir "$tmp/new" 2>"$tmp/build.err"); then
	t_fail build-new "$(grep -m 1 -iE 'error|unmet' "$tmp/build.err")"
	t_done
fi
echo "# packages ready in $((SECONDS - t0)) s"
new_version=$(dpkg-deb -f "$new_deb" Version)

# --- a booted appliance between a client and a server --------------------------
in_ct() { nsenter -t "$DROOT_LEADER" -a "$@"; }
up_nfbox() { in_ct nfbox "$@"; }
show() { in_ct systemctl show nfbox -p "$1" --value; }
journal() { in_ct journalctl -u nfbox --no-pager "$@"; }
# apt_ct [VAR=VALUE...] ARGS...: apt-get install in the container, as an
# unattended upgrade runs it (a changed conffile kept without a question).
apt_t=()
apt_ct() {
	local envs=()
	while [[ "$1" == *=* ]]; do envs+=("$1"); shift; done
	in_ct env DEBIAN_FRONTEND=noninteractive "${envs[@]}" apt-get install -y --no-install-recommends \
		-o Dpkg::Options::=--force-confold "${apt_t[@]}" "$@"
}
installed() { in_ct dpkg-query -W -f='${Version} ${Status}' nfbox; }
wait_active() { wait_until "${1:-30}" sh -c "[ \"\$(nsenter -t $DROOT_LEADER -a systemctl show nfbox -p ActiveState --value)\" = active ] && nsenter -t $DROOT_LEADER -a nfbox status >/dev/null"; }

# boot DEB: a fresh root with the older package DEB installed, booted in
# the appliance namespace of a fresh topology (tests/lib/netns.sh).
boots=0
boot() {
	droot_new "$rel" "$root" 2>"$tmp/root.err" || { t_fail root "$(cat "$tmp/root.err")"; return 1; }
	cp "$1" "$new_deb" "$root/var/tmp/"
	deb_relabel "$new_deb" "$new_version~lower" "$root/var/tmp/lower.deb" || { t_fail relabel "cannot relabel $new_deb"; return 1; }
	if [ "$rel" = bookworm ]; then
		echo "deb $(droot_mirror) bookworm-backports main" >"$root/etc/apt/sources.list.d/bookworm-backports.list"
		apt_t=(-t bookworm-backports)
	fi
	if ! in_root "$root" sh -c "apt-get -qq update && apt-get install -y --no-install-recommends ${apt_t[*]} systemd dbus nftables /var/tmp/$(basename "$1")" >"$tmp/install.out" 2>&1; then
		t_fail install "$(grep -m 3 -E 'E:|Depends' "$tmp/install.out" | tr '\n' ' ')"
		return 1
	fi
	droot_unmount "$root"
	NS_PREFIX=nfbu$$$((++boots))
	. tests/lib/netns.sh
	ns_setup || { t_fail setup "cannot build the namespaces"; return 1; }
	trap cleanup EXIT
	if ! droot_boot "$root" "$tmp/nspawn.log" --network-namespace-path="/run/netns/$NS_A" \
		--bind="$NS_TMP/bpf:/sys/fs/bpf"; then
		t_fail boot "the container did not boot: $(tail -n 5 "$tmp/nspawn.log" | tr '\n' ' ')"
		return 1
	fi
}

# --- one upgrade and its downgrade -----------------------------------------------
# The older package enforcing, with an administrator's policy and
# options (conffiles changed), a ban, a rule hit once, a fleet's applied
# revision (state the daemon keeps).
enforce_older() {
	local n=$1
	up_policy >"$root/etc/nfbox/policy.yaml"
	printf '# changed by the administrator\nNFBOX_OPTS=""\n' >>"$root/etc/default/nfbox"
	cp "$root/etc/nfbox/policy.yaml" "$tmp/policy.yaml"
	cp "$root/etc/default/nfbox" "$tmp/default"
	in_ct systemctl enable --now nfbox >"$tmp/enable.out" 2>&1
	wait_active || { t_fail "$n-start" "$(show ActiveState): $(journal -n 5 | tr '\n' ' ')"; return 1; }
	mkdir -p "$root/var/lib/nfbox/state/fleet"
	echo "7 $(printf '%064d' 7) /var/lib/nfbox/state/fleet/r7/policy.yaml" >"$root/var/lib/nfbox/state/fleet/applied"
	cp "$root/var/lib/nfbox/state/fleet/applied" "$tmp/applied"
	up_ban || t_fail "$n-ban" "nfbox set add failed"
	in_c "$NET" udp-say $S6 7009 once >/dev/null
	in_c "$NET" udp-blast $S4 7001 50 >/dev/null
	wait_until 5 test "$(up_rule once packets)" = 1 || t_fail "$n-once" "the rule 'once' counted $(up_rule once packets)"
	wait_until 5 test "$(up_rule banned packets)" -ge 50 || t_fail "$n-ban" "the banned rule counted $(up_rule banned packets) of 50"
	if [ "$(up_mapped 43001)" = arrived ]; then
		t_ok "$n-mapped-passes-before" # the older program lets it through: the check after can tell
	else
		t_fail "$n-mapped-passes-before" "the older program dropped the mapped source: the check after cannot tell"
	fi
}

# What the new daemon did with the state: adopted it and replaced the
# programs (same), or replaced it (older).
check_takeover() {
	journal >"$tmp/journal"
	if [ "$1" = same ]; then
		if [ "$(up_status adopted)" = true ] && [ "$(up_status programs_replaced)" = true ] &&
			grep -q "was another build's: this build's programs run in its place" "$tmp/journal"; then
			t_ok same-adopted-programs-replaced
		else
			t_fail same-adopted-programs-replaced "adopted $(up_status adopted), programs_replaced $(up_status programs_replaced)"
		fi
	elif [ "$(up_status replaced)" = "is of layout 12, older than this nfbox's 13" ] &&
		[ "$(up_status set_aside)" = 0 ] && ! ls -d "$NS_TMP/bpf/nfbox"/old-* >/dev/null 2>&1 &&
		grep -q "is of layout 12, older than this nfbox's 13: set aside in /sys/fs/bpf/nfbox/old-abi12" "$tmp/journal" &&
		grep -q 'the state set aside in /sys/fs/bpf/nfbox/old-abi12 is removed' "$tmp/journal"; then
		t_ok older-replaced
	else
		t_fail older-replaced "replaced '$(up_status replaced)', set aside $(up_status set_aside); $(grep -i 'aside' "$tmp/journal" | tail -n 2 | tr '\n' ' ')"
	fi
}

# The rule hit once: its last hit kept, and its count (1) with the same
# layout; with another, the counters start from 0 (as documented).
check_counters() {
	local n=$1 once_hit=$2 want=1
	[ "$n" = older ] && want=0
	if [ "$(up_rule once last_hit)" = "$once_hit" ] && [ "$(up_rule once packets)" = "$want" ]; then
		t_ok "$n-counters-last-hit"
	else
		t_fail "$n-counters-last-hit" "once: $(up_rule once packets) packets (want $want), last hit $(up_rule once last_hit) (was $once_hit)"
	fi
}

# Downgrades. To a package that has the check (this tree's, relabelled
# older): refused, the newer one restarted, its policy enforced throughout.
# To the older commit's, which has none: it installs, and its daemon adopts
# the state of its own layout (same) or refuses the newer layout and leaves
# it enforcing with no daemon (older), which its --fresh cannot replace.
downgrade() {
	local n=$1 deb=/var/tmp/$(basename "$2")
	up_traffic_start
	if apt_ct --allow-downgrades /var/tmp/lower.deb >"$tmp/down.out" 2>&1; then
		t_fail "$n-downgrade-refused" "apt-get installed the relabelled package"
	elif grep -q "nfbox: refusing to replace nfbox $new_version by the older $new_version~lower" "$tmp/down.out" &&
		[ "$(installed)" = "$new_version install ok installed" ] && wait_active 10; then
		t_ok "$n-downgrade-refused"
	else
		t_fail "$n-downgrade-refused" "$(grep -E 'nfbox:|E:|dpkg' "$tmp/down.out" | head -n 4 | tr '\n' ' '); $(installed); $(show ActiveState)"
	fi
	apt_ct --allow-downgrades "$deb" >"$tmp/old.out" 2>&1 ||
		t_fail "$n-downgrade-to-older-commit" "$(grep -E 'E:|dpkg' "$tmp/old.out" | head -n 3 | tr '\n' ' ')"
	sleep 3 # the older daemon's start: it adopts, or refuses (and is retried)
	up_no_gap "$n-downgrade-no-gap"
	journal >"$tmp/journal"
	if [ "$n" = same ]; then
		if wait_active 10 && up_nfbox status | grep -q 'adopted at start'; then
			t_ok same-downgrade-adopts
		else
			t_fail same-downgrade-adopts "$(show ActiveState); $(tail -n 3 "$tmp/journal" | tr '\n' ' ')"
		fi
		return
	fi
	if [ "$(show ActiveState)" != active ] && grep -q 'was made by another nfbox version' "$tmp/journal" &&
		[ -e "$NS_TMP/bpf/nfbox/prog" ]; then
		t_ok older-downgrade-refuses-state-keeps-enforcing
	else
		t_fail older-downgrade-refuses-state-keeps-enforcing "$(show ActiveState); $(tail -n 3 "$tmp/journal" | tr '\n' ' ')"
	fi
	in_ct systemctl stop nfbox # no daemon runs: nfbox-stop touches nothing
	if in_ct timeout 20 nfbox run --fresh --policy /etc/nfbox/policy.yaml --socket /run/nfbox-fresh.sock >"$tmp/fresh.out" 2>&1; then
		t_fail older-fresh-cannot-replace "the older nfbox run --fresh ran"
	elif grep -q 'made by another nfbox version' "$tmp/fresh.out" && [ -e "$NS_TMP/bpf/nfbox/prog" ]; then
		t_ok older-fresh-cannot-replace # README.Debian: with those versions, remove it by hand
	else
		t_fail older-fresh-cannot-replace "$(tail -n 2 "$tmp/fresh.out" | tr '\n' ' ')"
	fi
}

# scenario NAME COMMIT: the older package of COMMIT enforcing, upgraded to
# the new one under traffic, then downgraded back.
scenario() {
	local n=$1 c=$2 once_hit
	boot "${old_deb[$c]}" || return 1
	enforce_older "$n" || return 1
	once_hit=$(up_rule once last_hit)
	up_traffic_start
	sleep 2
	if apt_ct "/var/tmp/$(basename "$new_deb")" >"$tmp/upgrade.out" 2>&1 && wait_active; then
		t_ok "$n-upgrade"
	else
		t_fail "$n-upgrade" "$(grep -E 'E:|nfbox:' "$tmp/upgrade.out" | head -n 3 | tr '\n' ' '); $(show ActiveState); $(journal -n 5 | tr '\n' ' ')"
	fi
	sleep 2
	up_no_gap "$n-upgrade-no-gap"
	t_check "$n-new-version" test "$(installed)" = "$new_version install ok installed"
	check_takeover "$n"
	if [ "$(up_mapped 43002)" = dropped ]; then
		t_ok "$n-new-program-runs" # the IPv4-mapped drop, without --fresh
	else
		t_fail "$n-new-program-runs" "the mapped source still passes: the older program runs"
	fi
	t_check "$n-policy-kept" cmp "$tmp/policy.yaml" "$root/etc/nfbox/policy.yaml"
	t_check "$n-default-kept" cmp "$tmp/default" "$root/etc/default/nfbox"
	t_check "$n-fleet-applied-kept" cmp "$tmp/applied" "$root/var/lib/nfbox/state/fleet/applied"
	t_check "$n-ban-kept" up_listed
	t_check "$n-early-xdp" test "$(up_status early_xdp)" = lan0
	check_counters "$n" "$once_hit"
	downgrade "$n" "${old_deb[$c]}"
}

for s in "same $SAME" "older $OLDER"; do
	set -- $s
	t1=$SECONDS
	scenario "$1" "$2"
	echo "# $1: $((SECONDS - t1)) s"
	up_traffic_stop
	droot_halt
	[ -n "$NS_TMP" ] && ns_cleanup
	NS_TMP=
	droot_free "$root"
done
t_done
