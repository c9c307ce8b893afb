#!/bin/sh
# Install every build and test dependency of nfbox on Debian 12 (bookworm, with
# bookworm-backports for libbpf >= 1.4, bpftool and a new linux-libc-dev) or on
# Debian 13 and later (native packages). Idempotent and quiet when all is present.
#
# Usage: packaging/install-deps.sh [--build-only] [--long] [--check] [--print-mirror]
#   --build-only    only what building needs (no test tools)
#   --long          also what only the long runs need (make check-long: the
#                   browser of tests/distro/test_cockpit.sh)
#   --check         report what is missing, install nothing; exit 1 if anything is
#   --print-mirror  print the Debian archive this system's apt sources use
#                   (tests build Debian roots from it) and exit
set -eu

# The Debian source package's Build-Depends (packaging/debian/control) are
# all here. clang's libFuzzer runtime (the policy fuzzer) is added below by
# the name this release gives it: libclang-rt-14-dev on 12, libclang-rt-dev
# (for clang 19) on 13.
BUILD_PKGS="make gcc build-essential clang llvm pkg-config libbpf-dev bpftool linux-libc-dev
 libxdp-dev libnftnl-dev libmnl-dev libyaml-dev libssl-dev libmicrohttpd-dev libjansson-dev libelf-dev zlib1g-dev
 libmaxminddb-dev libc-ares-dev libcurl4-openssl-dev debhelper dpkg-dev"
TEST_PKGS="iproute2 iputils-ping ethtool nftables python3 python3-scapy iperf3 hping3 man-db groff-base systemd
 tcpdump tshark jq procps kmod lintian debootstrap bash-completion systemd-container netbase tzdata dnsmasq-base suricata
 python3-jsonschema python3-yaml python3-prometheus-client logrotate keepalived conntrackd conntrack gcovr
 nodejs curl ca-certificates etcd-server etcd-client openssl"
# ... and those of the long runs only (--long): Debian's chromium and the
# DevTools client that drive Cockpit (360 MiB installed; make check skips them).
LONG_PKGS="chromium python3-websocket"
# Packages that must come from backports on bookworm, and the version each needs.
BPO_PKGS="libbpf-dev bpftool linux-libc-dev"
# ... and those of the tests (Suricata 7: bookworm itself has none).
BPO_TEST_PKGS="suricata"
# Packages the tests unpack (dpkg-deb -x) and run from there, never
# installed on this host (fail2ban's would start banning here, nginx's would
# serve on the host's port 80; test_urlfeed runs its own in a namespace): their .deb
# is downloaded into DEB_CACHE, so that no test needs the network.
DOWNLOAD_PKGS="fail2ban nginx"
DEB_CACHE=${NFBOX_DEB_CACHE:-/var/cache/nfbox/debs}
# The formatter the tree is checked with (tests/unit/test_format.sh, make
# format), one version for every Debian release: clang-format built to
# WebAssembly, run by node, from the npm registry, checked against its
# published SHA-512. Debian's own clang-format differs from release to release.
FORMAT_VERSION=23.1.0
FORMAT_SHA512=Mjb0KPghsr+HH+GL42EvlEB1OcNZLUqlS5J/97kMuIhu703OYcrFm+r1kMxXuaufhvQgAHtxCouxNZXFqpIynQ==
TOOL_CACHE=${NFBOX_TOOL_CACHE:-/var/cache/nfbox/tools}
FORMAT_DIR=$TOOL_CACHE/clang-format-$FORMAT_VERSION

mode=all long=
for arg in "$@"; do
	case "$arg" in
	--build-only) mode=build ;;
	--long) long=1 ;;
	--check) mode=check ;;
	--print-mirror) mode=mirror ;;
	-h|--help) sed -n '2,13p' "$0"; exit 0 ;;
	*) echo "install-deps: unknown option '$arg' (try --help)" >&2; exit 2 ;;
	esac
done

pkgs="$BUILD_PKGS"
[ "$mode" = build ] || pkgs="$pkgs $TEST_PKGS"
[ -z "$long" ] || [ "$mode" = build ] || pkgs="$pkgs $LONG_PKGS"

. /etc/os-release
codename=${VERSION_CODENAME:-}

# Derive the archive URI from the system's own apt sources: machines may use a
# local mirror, so no archive host is hard-coded here.
archive_uri() {
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk -v c="$codename" '
			/^[[:space:]]*$/ { if (deb && uri && main) { print uri; exit } deb = uri = main = 0; next }
			/^Types:/ && / deb( |$)/ { deb = 1 }
			/^URIs:/ { uri = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == c) main = 1 }
			END { if (deb && uri && main) print uri }
		' "$f" | head -n 1
	done | head -n 1
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk -v c="$codename" '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/) { if ($(i + 1) == c) print $i; break } }' "$f"
	done | head -n 1
}

if [ "$mode" = mirror ]; then
	uri=$(archive_uri | head -n 1)
	[ -n "$uri" ] || { echo "install-deps: no '$codename' archive in /etc/apt/sources*" >&2; exit 1; }
	echo "$uri"
	exit 0
fi

libbpf_ok() {
	# libbpf >= 1.4 is the first with netfilter link support.
	v=$(dpkg-query -W -f='${Version}' libbpf-dev 2>/dev/null) || return 1
	dpkg --compare-versions "$v" ge 1:1.4 || dpkg --compare-versions "$v" ge 1.4
}

# Is some libclang-rt-*-dev (libFuzzer's runtime) installed?
fuzzer_rt_installed() {
	dpkg-query -W -f='${db:Status-Status}\n' 'libclang-rt-*dev' 2>/dev/null | grep -qx installed
}

# Its package name in this release's archive (after apt-get update): the
# unversioned name where it exists, else the one of the default clang.
fuzzer_rt_package() {
	if apt-cache show libclang-rt-dev >/dev/null 2>&1; then
		echo libclang-rt-dev
		return
	fi
	v=$(apt-cache depends clang 2>/dev/null | sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1)
	echo "libclang-rt-${v:-14}-dev"
}

missing() {
	out=""
	for p in $pkgs; do
		s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
		[ "$s" = installed ] || out="$out $p"
	done
	fuzzer_rt_installed || out="$out libclang-rt"
	if [ "$codename" = bookworm ] && ! libbpf_ok; then
		case " $out " in *" libbpf-dev "*) ;; *) out="$out libbpf-dev" ;; esac
	fi
	if [ "$mode" != build ]; then
		for p in $DOWNLOAD_PKGS; do
			ls "$DEB_CACHE/${p}_"*.deb >/dev/null 2>&1 || out="$out download:$p"
		done
		[ -f "$FORMAT_DIR/package/clang-format-cli.cjs" ] || out="$out download:clang-format"
	fi
	echo "$out"
}

# The formatter into FORMAT_DIR: the npm registry's tarball, refused unless
# its SHA-512 is the one pinned above.
download_format() {
	[ -f "$FORMAT_DIR/package/clang-format-cli.cjs" ] && return 0
	url=https://registry.npmjs.org/@wasm-fmt/clang-format/-/clang-format-$FORMAT_VERSION.tgz
	tmp=$(mktemp -d) || return 1
	if ! curl -fsSL --retry 3 -o "$tmp/f.tgz" "$url"; then
		echo "install-deps: cannot download $url" >&2
		rm -rf "$tmp"
		return 1
	fi
	sum=$(python3 -c 'import base64, hashlib, sys; print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$tmp/f.tgz")
	if [ "$sum" != "$FORMAT_SHA512" ]; then
		echo "install-deps: $url is not the pinned file (sha512 $sum)" >&2
		rm -rf "$tmp"
		return 1
	fi
	mkdir -p "$FORMAT_DIR" && tar -xzf "$tmp/f.tgz" -C "$FORMAT_DIR" && rm -rf "$tmp"
}

# The .deb files of DOWNLOAD_PKGS into DEB_CACHE (after apt-get update).
download() {
	for p in $DOWNLOAD_PKGS; do
		ls "$DEB_CACHE/${p}_"*.deb >/dev/null 2>&1 && continue
		mkdir -p "$DEB_CACHE" && (cd "$DEB_CACHE" && apt_quiet download "$p") || return 1
	done
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
# COMMAND with no service started by the packages it installs (policy-rc.d):
# the tests run Suricata, dnsmasq, keepalived and etcd in their own namespaces;
# none of them may start on this host's interfaces. Those that would start
# at the next boot are disabled.
no_start() {
	local made= r
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && made=1
	fi
	"$@"
	r=$?
	[ -n "$made" ] && rm -f /usr/sbin/policy-rc.d
	if [ -d /run/systemd/system ]; then
		systemctl disable suricata.service etcd.service >/dev/null 2>&1 || true
	fi
	return $r
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
	need=$(echo "$need" | sed "s/ libclang-rt\\( \\|\$\\)/ $(fuzzer_rt_package)\\1/")
	# shellcheck disable=SC2086
	apt_quiet install -y --no-install-recommends -t bookworm-backports $BPO_PKGS
	# shellcheck disable=SC2086
	[ "$mode" = build ] || no_start apt_quiet install -y --no-install-recommends -t bookworm-backports $BPO_TEST_PKGS
	no_start apt_quiet install -y --no-install-recommends $(echo "$need" | tr ' ' '\n' | grep -vxE 'libbpf-dev|bpftool|linux-libc-dev|suricata|download:.*' | tr '\n' ' ')
else
	apt_quiet update
	need=$(echo "$need" | sed "s/ libclang-rt\\( \\|\$\\)/ $(fuzzer_rt_package)\\1/")
	# shellcheck disable=SC2086
	no_start apt_quiet install -y --no-install-recommends $(echo "$need" | tr ' ' '\n' | grep -vx 'download:.*' | tr '\n' ' ')
fi
[ "$mode" = build ] || download || { echo "install-deps: cannot download $DOWNLOAD_PKGS into $DEB_CACHE" >&2; exit 1; }
[ "$mode" = build ] || download_format || exit 1

need=$(missing)
if [ -n "$need" ]; then
	echo "install-deps: still missing after install:$need" >&2
	exit 1
fi
[ "$mode" = build ] && echo "install-deps: installed build dependencies" || echo "install-deps: installed build and test dependencies"
