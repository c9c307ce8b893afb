#!/bin/bash
# Debian 13 from a clean start, on any Debian machine: in a throw-away
# trixie root (tests/lib/droot.sh; the pristine root and apt's downloads are
# cached between runs) this copies the source tree, runs
# packaging/install-deps.sh, builds, and runs the unit suites (the .deb
# built there and lintian's verdict on 13 among them), the fuzzer and the
# BPF fixtures (the verifier loads the objects trixie's clang 19 built),
# every netns suite, with trixie's userland, and the package (apt install of
# the .deb built there, the installed binary enforcing, remove, purge),
# through tests/run.sh; then that .deb as a service under trixie's systemd
# (tests/distro/test_unit_systemd.sh, run from this machine); then `make
# demo`.
#
# Usage: tests/distro/debian13.sh     (root; .ci/run and make check-debian13)
# Ends with the runner's "N passed, N failed, N skipped" line; exits 1 on a
# failure.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/droot.sh

[ "$(id -u)" -eq 0 ] || { echo "debian13: run as root (chroot, mounts)" >&2; exit 1; }
work=$(mktemp -d /tmp/nfbox-debian13.XXXXXX)
root=$work/root
trap 'droot_free "$root"; rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

step() { printf '== debian13: %s (%ds)\n' "$1" "$SECONDS"; }

step "root"
droot_new trixie "$root" || exit 1
step "source tree"
mkdir -p "$root/src/nfbox"
if git rev-parse --git-dir >/dev/null 2>&1; then
	git ls-files -z --cached --others --exclude-standard |
		xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
		tar --null -T - -cf - | tar -C "$root/src/nfbox" -xf -
else
	tar --exclude=./build -cf - . | tar -C "$root/src/nfbox" -xf -
fi

# The pinned formatter as this machine's install-deps fetched it and
# checked its SHA-512 (make check-debian13 runs deps first): the root
# reaches Debian's archive, but may not reach the npm registry over TLS the
# way this machine does (a proxy's certificate authority is this machine's).
tools=${NFBOX_TOOL_CACHE:-/var/cache/nfbox/tools}
if [ -d "$tools" ]; then
	mkdir -p "$root/var/cache/nfbox"
	cp -a "$tools" "$root/var/cache/nfbox/"
fi

# As a new user would: install-deps first (it needs only sh and apt).
step "packaging/install-deps.sh"
if ! in_root "$root" sh -c 'cd /src/nfbox && packaging/install-deps.sh'; then
	echo "FAIL debian13: install-deps failed" >&2
	exit 1
fi
in_root "$root" sh -c 'clang --version | head -n 1; dpkg-query -W -f="\${Package} \${Version}\n" libbpf1 libxdp1 debhelper lintian'

step "build"
if ! in_root "$root" sh -c 'cd /src/nfbox && make -j"$(nproc)" unit' >"$work/build.log" 2>&1; then
	tail -n 30 "$work/build.log"
	echo "FAIL debian13: the build failed" >&2
	exit 1
fi

# Last among them, the package as an administrator meets it on 13: apt
# installs the .deb built here into this root, the installed binary enforces
# in namespaces (the enforcement suite), then remove and purge.
# The runner's summary is kept aside: one line, for both runs, comes last.
summary='^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$'
step "unit suites, fuzzer, BPF fixtures, netns suites, the installed package"
in_root "$root" sh -c 'cd /src/nfbox && NFBOX_DEB_HERE=1 tests/run.sh unit/ fuzz/ bpf/ netns/ distro/test_deb_root' |
	tee "$work/run.log" | grep -Ev "$summary"
rc=${PIPESTATUS[0]}

# The same .deb as a service under Debian 13's own systemd: the root booted
# with systemd-nspawn from this machine (tests/distro/test_unit_systemd.sh),
# and every feature under that unit (tests/distro/test_unit_features.sh).
step "the .deb built on 13 under trixie's systemd"
if in_root "$root" sh -c 'cd /src/nfbox && packaging/build-deb.sh --outdir /src/deb' >"$work/deb.log" 2>&1; then
	deb=$(ls "$root"/src/deb/nfbox_*.deb | head -n 1)
	cp "$deb" "$work/" && deb=$work/$(basename "$deb")
	NFBOX_UNIT_RELEASE=trixie NFBOX_UNIT_DEB=$deb tests/run.sh distro/test_unit_systemd distro/test_unit_features |
		tee "$work/unit.log" | grep -Ev "$summary"
	[ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
else
	tail -n 5 "$work/deb.log"
	echo "FAIL distro/test_unit_systemd[trixie]: the .deb did not build on 13" | tee "$work/unit.log"
	echo "0 passed, 1 failed, 0 skipped" >>"$work/unit.log"
	rc=1
fi

step "make demo"
if ! in_root "$root" sh -c 'cd /src/nfbox && make demo' >"$work/demo.log" 2>&1; then
	tail -n 20 "$work/demo.log"
	echo "FAIL debian13: make demo failed" >&2
	rc=1
else
	tail -n 3 "$work/demo.log"
fi
step "done"
# Both runners' lines added up (a run without one counts as failed).
sums=$(grep -hE "$summary" "$work/run.log" "$work/unit.log")
[ "$(printf '%s\n' "$sums" | grep -c passed)" -eq 2 ] || rc=1
printf '%s\n' "$sums" | awk -v rc="$rc" '{ p += $1; f += $3; s += $5 } END {
	if (rc && !f) f = 1; printf "%d passed, %d failed, %d skipped\n", p, f, s }'
exit $rc
