#!/bin/sh
# Build the Debian package nfbox_VERSION_ARCH.deb from an already built
# binary, without debhelper: `make install` fills a staging tree, this script
# adds DEBIAN/ (control, conffiles, md5sums, maintainer scripts) and the
# files Debian policy wants (copyright, changelog, compressed man pages), and
# dpkg-deb --root-owner-group packs it (no fakeroot needed).
#
# Usage: packaging/build-deb.sh [--binary FILE] [--outdir DIR] VERSION
#   --binary FILE  package FILE as /usr/sbin/nfbox (default: build/nfbox)
#   --outdir DIR   write the .deb into DIR (default: build)
# `make deb` runs `packaging/build-deb.sh $(VERSION)` from the repository root.
# Prints the path of the .deb on success.
#
# Environment:
#   NFBOX_MAINTAINER  Maintainer field (default: DEBFULLNAME <DEBEMAIL>, or a
#                     placeholder)
#   DEB_HOST_ARCH     Architecture field (default: dpkg --print-architecture)
#   DEB_BUILD_OPTIONS "nostrip" keeps the debugging symbols in the binary
#   SOURCE_DATE_EPOCH date of the generated changelog entry
set -eu
umask 022

prog=build-deb
die() { echo "$prog: $*" >&2; exit 1; }
usage() { echo "usage: $0 [--binary FILE] [--outdir DIR] VERSION" >&2; exit 2; }

binary=
outdir=
version=
while [ $# -gt 0 ]; do
	case "$1" in
	--binary) [ $# -ge 2 ] || usage; binary=$2; shift 2 ;;
	--binary=*) binary=${1#*=}; shift ;;
	--outdir) [ $# -ge 2 ] || usage; outdir=$2; shift 2 ;;
	--outdir=*) outdir=${1#*=}; shift ;;
	-h|--help) sed -n '2,19p' "$0"; exit 0 ;;
	-*) echo "$prog: unknown option '$1'" >&2; usage ;;
	*) [ -z "$version" ] || usage; version=$1; shift ;;
	esac
done
[ -n "$version" ] || usage
# Debian version syntax (policy 5.6.12): digits first; no revision means a
# native package.
case "$version" in
[0-9]*) ;;
*) die "version '$version' must start with a digit" ;;
esac
if printf '%s' "$version" | LC_ALL=C grep -q '[^A-Za-z0-9.+~:-]'; then
	die "version '$version' has characters a Debian version cannot have"
fi

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
abspath() { case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s/%s\n' "$PWD" "$1" ;; esac; }
binary=$(abspath "${binary:-build/nfbox}")
outdir=$(abspath "${outdir:-build}")
if [ ! -f "$binary" ] || [ ! -x "$binary" ]; then
	die "$binary: no executable here; build it first (make)"
fi
for tool in dpkg-deb dpkg make install md5sum gzip; do
	command -v "$tool" >/dev/null 2>&1 || die "'$tool' is needed (apt-get install dpkg make coreutils gzip)"
done

arch=${DEB_HOST_ARCH:-$(dpkg --print-architecture)}
if [ -n "${NFBOX_MAINTAINER:-}" ]; then
	maintainer=$NFBOX_MAINTAINER
elif [ -n "${DEBEMAIL:-}" ]; then
	maintainer="${DEBFULLNAME:-nfbox maintainers} <$DEBEMAIL>"
else
	maintainer="nfbox maintainers <nfbox@example.org>"
fi
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
	date=$(LC_ALL=C date -u -R -d "@$SOURCE_DATE_EPOCH")
	year=$(date -u +%Y -d "@$SOURCE_DATE_EPOCH")
else
	date=$(LC_ALL=C date -u -R)
	year=$(date -u +%Y)
fi

mkdir -p "$outdir"
work=$(mktemp -d "${TMPDIR:-/tmp}/nfbox-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# debian/nfbox is where dpkg-shlibdeps expects the package's files.
pkg=$work/debian/nfbox
mkdir -p "$pkg" "$work/bin"

# --- files: make install --------------------------------------------------
# B points make at a directory holding just the binary to package, and -o
# keeps make from rebuilding it (the binary is packaged as built). The paths
# are given so that a PREFIX in the environment cannot move them.
cp -p "$binary" "$work/bin/nfbox"
make --no-print-directory -s -o "$work/bin/nfbox" B="$work/bin" \
	PREFIX=/usr SBINDIR=/usr/sbin MANDIR=/usr/share/man DESTDIR="$pkg" install >&2 ||
	die "make install failed"

for f in usr/sbin/nfbox etc/nfbox/policy.yaml lib/systemd/system/nfbox.service \
	usr/share/man/man8/nfbox.8 usr/share/man/man5/nfbox-policy.5; do
	[ -f "$pkg/$f" ] || die "make install did not install /$f"
done

# Strip as dh_strip does; scripts (test dummies) are left alone.
is_elf() { [ "$(head -c 4 "$1" | od -An -c | tr -d ' \n')" = '177ELF' ]; }
case " ${DEB_BUILD_OPTIONS:-} " in
*" nostrip "*) ;;
*)
	if is_elf "$pkg/usr/sbin/nfbox" && command -v strip >/dev/null 2>&1; then
		strip --remove-section=.comment --remove-section=.note "$pkg/usr/sbin/nfbox"
	fi ;;
esac

# Man pages compressed, reproducibly (no name or time stamp in the gzip).
find "$pkg/usr/share/man" -type f ! -name '*.gz' -exec gzip -9n {} +

doc=$pkg/usr/share/doc/nfbox
mkdir -p "$doc"
if [ -f packaging/debian/copyright ]; then
	install -m 0644 packaging/debian/copyright "$doc/copyright"
else
	cat >"$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: nfbox

Files: *
Copyright: $year the nfbox authors
License: GPL-2 or BSD-2-clause

License: GPL-2
 This program is free software; you can redistribute it and/or modify it
 under the terms of the GNU General Public License version 2 as published
 by the Free Software Foundation.
 .
 This program is distributed in the hope that it will be useful, but
 WITHOUT ANY WARRANTY; without even the implied warranty of
 MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE. See the GNU General
 Public License for more details.
 .
 On Debian systems, the complete text of the GNU General Public License
 version 2 can be found in /usr/share/common-licenses/GPL-2.

License: BSD-2-clause
 Redistribution and use in source and binary forms, with or without
 modification, are permitted provided that the following conditions are
 met:
 .
 1. Redistributions of source code must retain the above copyright notice,
    this list of conditions and the following disclaimer.
 .
 2. Redistributions in binary form must reproduce the above copyright
    notice, this list of conditions and the following disclaimer in the
    documentation and/or other materials provided with the distribution.
 .
 THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS
 IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO,
 THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR
 PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR
 CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL,
 EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO,
 PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR
 PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF
 LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING
 NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE OF THIS
 SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
EOF
fi
# A version without a Debian revision is a native package: changelog.gz.
case "$version" in
*-*) changelog=changelog.Debian.gz ;;
*) changelog=changelog.gz ;;
esac
if [ -f packaging/debian/changelog ]; then
	gzip -9nc packaging/debian/changelog >"$doc/$changelog"
else
	printf 'nfbox (%s) unstable; urgency=medium\n\n  * Built from the nfbox source tree by packaging/build-deb.sh.\n\n -- %s  %s\n' \
		"$version" "$maintainer" "$date" | gzip -9n >"$doc/$changelog"
fi

# The maintainer scripts call systemctl only where deb-systemd-invoke (from
# init-system-helpers, which is not Essential) is missing.
mkdir -p "$pkg/usr/share/lintian/overrides"
cat >"$pkg/usr/share/lintian/overrides/nfbox" <<'EOF'
# systemctl is called only as a fallback when deb-systemd-invoke is missing.
nfbox: maintainer-script-calls-systemctl
EOF

# Normal modes whatever install(1) or the umask did.
find "$pkg" -type d -exec chmod 0755 {} +
find "$pkg" -type f -exec chmod 0644 {} +
chmod 0755 "$pkg/usr/sbin/nfbox"

# --- DEBIAN/ ---------------------------------------------------------------
mkdir -p "$pkg/DEBIAN"
(cd "$pkg" && find etc -type f | LC_ALL=C sort | sed 's|^|/|') >"$pkg/DEBIAN/conffiles"
# dpkg keeps the checksums of conffiles itself; md5sums lists the rest.
(cd "$pkg" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -print |
	sed 's|^\./||' | LC_ALL=C sort | tr '\n' '\0' | xargs -0 -r md5sum) >"$pkg/DEBIAN/md5sums"

# Depends: dpkg-shlibdeps when it can read the binary, else a fixed list.
# Either way libbpf1 must be >= 1:1.4 (netfilter link support), which the
# symbol versions alone do not say.
fixed_depends="libbpf1 (>= 1:1.4), libc6, libelf1, libmnl0, libnftnl11, libxdp1, libyaml-0-2, zlib1g"
depends=
if command -v dpkg-shlibdeps >/dev/null 2>&1 && is_elf "$pkg/usr/sbin/nfbox"; then
	printf 'Source: nfbox\n\nPackage: nfbox\nArchitecture: any\n' >"$work/debian/control"
	if out=$(cd "$work" && dpkg-shlibdeps -O -e debian/nfbox/usr/sbin/nfbox 2>"$work/shlibdeps.err"); then
		depends=$(printf '%s\n' "$out" | sed -n 's/^shlibs:Depends=//p')
	fi
	if [ -z "$depends" ]; then
		echo "$prog: warning: dpkg-shlibdeps gave no dependencies; using the fixed list" >&2
		sed 's/^/  /' "$work/shlibdeps.err" >&2
	fi
	rm -f "$work/debian/control"
fi
if [ -z "$depends" ]; then
	depends=$fixed_depends
else
	# Raise libbpf1's minimum to 1:1.4 (or add it) without touching the rest.
	depends=$(printf '%s\n' "$depends" | tr ',' '\n' | sed 's/^ *//; s/ *$//' | awk '
		/^libbpf1( |$)/ {
			v = $0; sub(/^libbpf1 *\(>= */, "", v); sub(/\).*$/, "", v)
			if (v == $0 || system("dpkg --compare-versions \"" v "\" lt 1:1.4") == 0)
				$0 = "libbpf1 (>= 1:1.4)"
		}
		NF { print }' | LC_ALL=C sort -u | paste -sd, - | sed 's/,/, /g')
fi

installed_size=$(du -sk --exclude=DEBIAN "$pkg" | cut -f1)
cat >"$pkg/DEBIAN/control" <<EOF
Package: nfbox
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: $depends
Suggests: bpftool, nftables
Section: net
Priority: optional
Description: BPF firewall appliance that filters whole, reassembled datagrams
 nfbox compiles a YAML policy of interface groups, address sets, services
 and ordered rules into BPF maps. Fixed netfilter BPF programs, attached
 with IP defragmentation, enforce it on the input, forward and output
 hooks, so port rules cannot be evaded by fragmenting a datagram, and rule
 lookups cost little per packet however long the policy is. Policies are
 replaced atomically on reload.
 .
 nftables (through libnftnl) provides connection tracking and NAT; AF_XDP
 multi-buffer sockets capture jumbo frames to pcapng files. The package
 ships a hardened systemd unit, nfbox.service, which is not enabled on
 installation: review /etc/nfbox/policy.yaml, then run
 "systemctl enable --now nfbox".
EOF

# Maintainer scripts: what dh_installsystemd --no-enable would generate,
# plus fallbacks for systems without deb-systemd-helper. Nothing here fails
# when systemd is not running (containers, chroots, image builds).
cat >"$pkg/DEBIAN/postinst" <<'EOF'
#!/bin/sh
# nfbox postinst (generated by packaging/build-deb.sh)
set -e

unit=nfbox.service

systemd_running() {
	[ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1
}

case "$1" in
configure | abort-upgrade | abort-deconfigure | abort-remove)
	# Not enabled on first installation: a firewall should not start
	# enforcing a policy nobody has reviewed. An administrator's choice is
	# kept over upgrades.
	if command -v deb-systemd-helper >/dev/null 2>&1; then
		if deb-systemd-helper debian-installed "$unit"; then
			# Only removes a mask that postrm set on removal.
			deb-systemd-helper unmask "$unit" >/dev/null || true
			if deb-systemd-helper --quiet was-enabled "$unit"; then
				deb-systemd-helper enable "$unit" >/dev/null || true
			fi
		fi
		# Record the unit's symlinks, to be removed on purge.
		deb-systemd-helper update-state "$unit" >/dev/null || true
	fi
	if systemd_running; then
		systemctl --system daemon-reload >/dev/null 2>&1 || true
		# On upgrade, run the new binary if the old one was running.
		if [ -n "$2" ]; then
			if command -v deb-systemd-invoke >/dev/null 2>&1; then
				deb-systemd-invoke try-restart "$unit" >/dev/null || true
			else
				systemctl try-restart "$unit" >/dev/null 2>&1 || true
			fi
		fi
	fi
	;;
esac

exit 0
EOF

cat >"$pkg/DEBIAN/prerm" <<'EOF'
#!/bin/sh
# nfbox prerm (generated by packaging/build-deb.sh)
set -e

unit=nfbox.service

# On upgrade the daemon keeps running; postinst restarts it.
if [ "$1" = remove ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
	# Stopping detaches the programs: the policy is no longer enforced.
	if command -v deb-systemd-invoke >/dev/null 2>&1; then
		deb-systemd-invoke stop "$unit" >/dev/null || true
	else
		systemctl stop "$unit" >/dev/null 2>&1 || true
	fi
fi

exit 0
EOF

cat >"$pkg/DEBIAN/postrm" <<'EOF'
#!/bin/sh
# nfbox postrm (generated by packaging/build-deb.sh)
set -e

unit=nfbox.service
pins=/sys/fs/bpf/nfbox

case "$1" in
remove)
	if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
		systemctl --system daemon-reload >/dev/null 2>&1 || true
	fi
	if command -v deb-systemd-helper >/dev/null 2>&1; then
		deb-systemd-helper mask "$unit" >/dev/null || true
	fi
	# A daemon that was killed leaves its policy pinned and enforced; with
	# the program gone nothing could adopt or remove it, so unpin it (this
	# detaches its programs). Only on a BPF file system.
	if [ -d "$pins" ] && [ "$(stat -f -c %T "$pins" 2>/dev/null)" = bpf_fs ]; then
		rm -rf "$pins" || true
	fi
	;;
purge)
	if command -v deb-systemd-helper >/dev/null 2>&1; then
		deb-systemd-helper purge "$unit" >/dev/null || true
		deb-systemd-helper unmask "$unit" >/dev/null || true
	else
		# The unit file is gone by now, so systemctl disable cannot help:
		# remove the link an enable made (WantedBy=multi-user.target).
		rm -f "/etc/systemd/system/multi-user.target.wants/$unit"
		if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
			systemctl --system daemon-reload >/dev/null 2>&1 || true
		fi
	fi
	# State (captures) and the runtime directory systemd made for the unit.
	rm -rf /var/lib/nfbox /run/nfbox
	;;
esac

exit 0
EOF
chmod 0755 "$pkg/DEBIAN/postinst" "$pkg/DEBIAN/prerm" "$pkg/DEBIAN/postrm"
chmod 0644 "$pkg/DEBIAN/control" "$pkg/DEBIAN/conffiles" "$pkg/DEBIAN/md5sums"

# --- pack --------------------------------------------------------------------
deb=$outdir/nfbox_${version#*:}_$arch.deb
dpkg-deb --root-owner-group -Zxz --build "$pkg" "$work/out.deb" >/dev/null
mv -f "$work/out.deb" "$deb"
echo "$deb"
