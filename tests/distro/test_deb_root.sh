#!/bin/bash
# The Debian package as an administrator meets it, in a throw-away root of
# this machine's release (tests/lib/droot.sh): apt installs the .deb with
# its dependencies (on Debian 12 refusing first, naming backports, until
# bookworm-backports is enabled), a downgrade is refused unless asked for,
# the shipped policy validates there with the installed binary, and removal
# and purge leave what README.Debian says.
#
# Usage: tests/distro/test_deb_root.sh   (root) in a new root of this release.
# With NFBOX_DEB_HERE=1 this system is itself a throw-away root that has the
# build dependencies (the Debian 13 run, tests/distro/debian13.sh): the
# package goes into it, and the netns enforcement suite also runs with the
# installed binary.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/droot.sh
. tests/lib/deb.sh

here=${NFBOX_DEB_HERE:-0}
droot_prepare deb-root

tmp=$(mktemp -d /tmp/nfbox-debroot.XXXXXX)
root=$tmp/root
if [ "$here" -eq 1 ]; then
	# Never on a real system: only a root made by tests/lib/droot.sh has this mark.
	if [ ! -f /.nfbox-complete ]; then
		t_fail deb-root "NFBOX_DEB_HERE=1 installs and purges the package on this system: only inside a throw-away root (tests/lib/droot.sh)"
		rm -rf "$tmp"
		t_done
	fi
	root=
	in_root() {
		shift
		/usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
			PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"
	}
fi
trap 'droot_free "$root"; rm -rf "$tmp"' EXIT

if ! deb=$(deb_of_tree 2>"$tmp/build.err"); then
	t_fail deb-build "$(tail -n 3 "$tmp/build.err")"
	t_done
fi
t_ok deb-build
if [ "$here" -eq 0 ] && ! droot_new "$rel" "$root" 2>"$tmp/root.err"; then
	t_fail root "cannot make a $rel root: $(cat "$tmp/root.err")"
	t_done
fi
cp "$deb" "$root/tmp/"
pkg=/tmp/$(basename "$deb")
in_root "$root" apt-get -qq update >"$tmp/update.out" 2>&1 || { t_fail apt-update "$(tail -n 3 "$tmp/update.out")"; t_done; }

if [ "$rel" = bookworm ]; then
	# Without backports apt refuses, and its message names the fix.
	if in_root "$root" apt-get install -y --no-install-recommends "$pkg" >"$tmp/refused.out" 2>&1; then
		t_fail refusal-names-backports "installed without bookworm-backports (libbpf1 $(in_root "$root" dpkg-query -W -f='${Version}' libbpf1))"
	elif grep -q 'libbpf1-from-bookworm-backports' "$tmp/refused.out"; then
		t_ok refusal-names-backports
	else
		t_fail refusal-names-backports "apt said: $(grep -m 3 -E 'Depends|E:' "$tmp/refused.out" | tr '\n' ' ')"
	fi
	# The one step README.Debian gives.
	echo "deb $(droot_mirror) bookworm-backports main" >"$root/etc/apt/sources.list.d/bookworm-backports.list"
	in_root "$root" apt-get -qq update >/dev/null 2>&1
	apt_t=(-t bookworm-backports)
	install=(apt-get install -y --no-install-recommends "${apt_t[@]}" "$pkg")
else
	apt_t=()
	install=(apt-get install -y --no-install-recommends "$pkg")
fi
if in_root "$root" "${install[@]}" >"$tmp/install.out" 2>&1; then
	t_ok apt-install
else
	t_fail apt-install "$(grep -E 'E:|Depends' "$tmp/install.out" | head -n 3 | tr '\n' ' ')"
	t_done
fi

# A downgrade: this tree's package, relabelled older, is refused with a
# message and the installed one stays; NFBOX_DOWNGRADE=yes lets it in.
version=$(dpkg-deb -f "$deb" Version)
older=(apt-get install -y --no-install-recommends --allow-downgrades "${apt_t[@]}" /tmp/older.deb)
installed() { in_root "$root" dpkg-query -W -f='${Version} ${Status}' nfbox; }
if ! deb_relabel "$deb" "$version~older" "$root/tmp/older.deb"; then
	t_fail downgrade-refused "cannot relabel $deb"
elif in_root "$root" "${older[@]}" >"$tmp/older.out" 2>&1; then
	t_fail downgrade-refused "apt-get installed $version~older over $version"
elif grep -q "nfbox: refusing to replace nfbox $version by the older $version~older (a downgrade)" "$tmp/older.out" &&
	[ "$(installed)" = "$version install ok installed" ]; then
	t_ok downgrade-refused
else
	t_fail downgrade-refused "$(grep -E 'nfbox:|E:' "$tmp/older.out" | head -n 3 | tr '\n' ' '); installed: $(installed)"
fi
if in_root "$root" env NFBOX_DOWNGRADE=yes "${older[@]}" >"$tmp/older.out" 2>&1 &&
	[ "$(installed)" = "$version~older install ok installed" ]; then
	t_ok downgrade-when-asked
else
	t_fail downgrade-when-asked "$(grep -E 'nfbox:|E:' "$tmp/older.out" | head -n 3 | tr '\n' ' '); installed: $(installed)"
fi

# The installed binary runs with the libraries apt chose, on the shipped policy.
if out=$(in_root "$root" nfbox validate --strict /etc/nfbox/policy.yaml 2>&1); then
	t_ok shipped-policy-validates
else
	t_fail shipped-policy-validates "$out"
fi
# The installed binary (its BPF objects are inside it) enforces a policy on
# real traffic between namespaces: the netns enforcement suite, run with it.
if [ "$here" -eq 1 ]; then
	if NFBOX_BIN=/usr/sbin/nfbox tests/netns/test_enforce.sh >"$tmp/enforce.out" 2>&1 &&
		! grep -q '^FAIL ' "$tmp/enforce.out" && grep -q '^ok ' "$tmp/enforce.out"; then
		t_ok "installed-binary-enforces ($(grep -c '^ok ' "$tmp/enforce.out") cases of tests/netns/test_enforce.sh)"
	else
		t_fail installed-binary-enforces "$(grep -m 5 -E '^FAIL|^skip' "$tmp/enforce.out" | tr '\n' ' ')$(tail -n 3 "$tmp/enforce.out" | tr '\n' ' ')"
	fi
fi
# Where this release wants the unit (lintian: aliased-location on 13).
want=/lib/systemd/system/nfbox.service
[ "$rel" = bookworm ] || want=/usr/lib/systemd/system/nfbox.service
if in_root "$root" dpkg -L nfbox | grep -qx "$want"; then
	t_ok unit-location
else
	t_fail unit-location "the package does not ship $want: $(in_root "$root" dpkg -L nfbox | grep nfbox.service)"
fi
t_check examples-installed test -f "$root/usr/share/doc/nfbox/examples/home-router.yaml"
t_check completion-installed test -f "$root/usr/share/bash-completion/completions/nfbox"
t_check schema-installed test -f "$root/usr/share/nfbox/policy.schema.json"

# An administrator enabled it (the link `systemctl enable` makes: there is
# no systemd to ask in the root); removal disables it without a mask and
# without a link to the unit file that is gone.
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf "$want" "$root/etc/systemd/system/multi-user.target.wants/nfbox.service"
mkdir -p "$root/var/lib/nfbox/capture"
echo x >"$root/var/lib/nfbox/capture/kept.pcapng"
echo x >"$root/var/lib/nfbox/state"
if ! in_root "$root" apt-get remove -y nfbox >"$tmp/remove.out" 2>&1; then
	t_fail remove "$(tail -n 3 "$tmp/remove.out")"
else
	# (a find that fails finds nothing too)
	if ! links=$(find "$root/etc/systemd" -name 'nfbox.service' 2>&1); then
		t_fail remove-leaves-no-link-or-mask "find: $links"
	elif [ -z "$links" ]; then
		t_ok remove-leaves-no-link-or-mask
	else
		t_fail remove-leaves-no-link-or-mask "left behind: ${links//$root/}"
	fi
fi
# Purge keeps the captures unless asked.
in_root "$root" dpkg --purge nfbox >"$tmp/purge.out" 2>&1
if [ -f "$root/var/lib/nfbox/capture/kept.pcapng" ] && [ ! -e "$root/var/lib/nfbox/state" ] &&
	[ ! -e "$root/etc/nfbox/policy.yaml" ]; then
	t_ok purge-keeps-captures
else
	t_fail purge-keeps-captures "after purge: $(cd "$root" && ls -d var/lib/nfbox/* etc/nfbox/* 2>&1 | tr '\n' ' ')"
fi
in_root "$root" "${install[@]}" >/dev/null 2>&1
in_root "$root" env NFBOX_PURGE_CAPTURES=yes dpkg --purge nfbox >/dev/null 2>&1
if [ ! -e "$root/var/lib/nfbox" ]; then
	t_ok purge-captures-when-asked
else
	t_fail purge-captures-when-asked "left: $(cd "$root" && find var/lib/nfbox | tr '\n' ' ')"
fi
t_done
