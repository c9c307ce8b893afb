#!/bin/sh
# Install every build and test dependency of nfbox on Debian 12 (bookworm, with
# bookworm-backports for libbpf >= 1.4, bpftool and a new linux-libc-dev) or on
# Debian 13 and later (native packages). Idempotent and quiet when all is present.
#
# Usage: packaging/install-deps.sh [--build-only] [--check]
#   --build-only  only what building needs (no test tools)
#   --check       report what is missing, install nothing; exit 1 if anything is
set -eu

BUILD_PKGS="make gcc clang llvm pkg-config libbpf-dev bpftool linux-libc-dev
 libxdp-dev libnftnl-dev libmnl-dev libyaml-dev libclang-rt-14-dev"
TEST_PKGS="iproute2 iputils-ping nftables python3 python3-scapy iperf3 hping3 man-db groff-base systemd
 tcpdump tshark jq procps kmod dpkg-dev"
# Packages that must come from backports on bookworm, and the version each needs.
BPO_PKGS="libbpf-dev bpftool linux-libc-dev"

mode=all
for arg in "$@"; do
	case "$arg" in
	--build-only) mode=build ;;
	--check) mode=check ;;
	-h|--help) sed -n '2,9p' "$0"; exit 0 ;;
	*) echo "install-deps: unknown option '$arg' (try --help)" >&2; exit 2 ;;
	esac
done

pkgs="$BUILD_PKGS"
[ "$mode" = build ] || pkgs="$pkgs $TEST_PKGS"

. /etc/os-release
codename=${VERSION_CODENAME:-}

libbpf_ok() {
	# libbpf >= 1.4 is the first with netfilter link support.
	v=$(dpkg-query -W -f='${Version}' libbpf-dev 2>/dev/null) || return 1
	dpkg --compare-versions "$v" ge 1:1.4 || dpkg --compare-versions "$v" ge 1.4
}

missing() {
	out=""
	for p in $pkgs; do
		s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
		[ "$s" = installed ] || out="$out $p"
	done
	if [ "$codename" = bookworm ] && ! libbpf_ok; then
		case " $out " in *" libbpf-dev "*) ;; *) out="$out libbpf-dev" ;; esac
	fi
	echo "$out"
}

need=$(missing)
if [ -z "$need" ]; then
	exit 0
fi
if [ "$mode" = check ]; then
	echo "install-deps: missing:$need" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing:$need; run as root (sudo $0)" >&2
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt_quiet() { apt-get -qq -o Dpkg::Use-Pty=0 "$@" >/tmp/nfbox-apt.log 2>&1 || { cat /tmp/nfbox-apt.log >&2; return 1; }; }

# Derive the archive URI from the system's own apt sources: machines may use a
# local mirror, so no archive host is hard-coded here.
archive_uri() {
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk '
			/^[[:space:]]*$/ { if (deb && uri && main) { print uri; exit } deb = uri = main = 0; next }
			/^Types:/ && / deb( |$)/ { deb = 1 }
			/^URIs:/ { uri = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") main = 1 }
			END { if (deb && uri && main) print uri }
		' "$f" | head -n 1
	done | head -n 1
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/) { if ($(i + 1) == "bookworm") print $i; break } }' "$f"
	done | head -n 1
}

if [ "$codename" = bookworm ]; then
	bpo=/etc/apt/sources.list.d/nfbox-bookworm-backports.sources
	if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		uri=$(archive_uri | head -n 1)
		if [ -z "$uri" ]; then
			echo "install-deps: cannot find the bookworm archive in /etc/apt/sources*; add bookworm-backports by hand" >&2
			exit 1
		fi
		printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uri" >"$bpo"
	fi
	apt_quiet update
	# shellcheck disable=SC2086
	apt_quiet install -y --no-install-recommends -t bookworm-backports $BPO_PKGS
	apt_quiet install -y --no-install-recommends $(echo "$need" | tr ' ' '\n' | grep -vxE 'libbpf-dev|bpftool|linux-libc-dev' | tr '\n' ' ')
else
	apt_quiet update
	# shellcheck disable=SC2086
	apt_quiet install -y --no-install-recommends $need
fi

need=$(missing)
if [ -n "$need" ]; then
	echo "install-deps: still missing after install:$need" >&2
	exit 1
fi
echo "install-deps: installed build and test dependencies"
