#!/bin/sh
# Build the Debian package from the source package in packaging/debian:
# the source tree (the files git tracks, or all but build/ outside git) is
# copied to build/deb/nfbox-VERSION/ with packaging/debian as its debian/,
# and dpkg-buildpackage -b builds it there with the distribution's flags and
# hardening. The .deb, .buildinfo and .changes land in build/deb/.
#
# Usage: packaging/build-deb.sh [--outdir DIR]
# `make deb` runs it. Prints the path of the .deb on success.
#
# Needs the Build-Depends of packaging/debian/control (packaging/install-deps.sh
# installs them) and dpkg-dev. DEB_BUILD_OPTIONS is passed on (nocheck,
# nostrip, parallel=N).
set -eu
umask 022

prog=build-deb
die() { echo "$prog: $*" >&2; exit 1; }

outdir=
while [ $# -gt 0 ]; do
	case "$1" in
	--outdir) [ $# -ge 2 ] || die "--outdir needs a directory"; outdir=$2; shift 2 ;;
	--outdir=*) outdir=${1#*=}; shift ;;
	-h|--help) sed -n '2,14p' "$0"; exit 0 ;;
	*) die "unknown argument '$1' (try --help)" ;;
	esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
case "$outdir" in
"") outdir=$root/build/deb ;;
/*) ;;
*) outdir=$PWD/$outdir ;;
esac
for tool in dpkg-buildpackage dpkg-parsechangelog dh; do
	command -v "$tool" >/dev/null 2>&1 ||
		die "'$tool' is missing: run packaging/install-deps.sh (it installs dpkg-dev and debhelper)"
done

# The changelog's version is the package's; it must be the tree's VERSION.
version=$(dpkg-parsechangelog -l packaging/debian/changelog -S Version)
tree_version=$(cat VERSION)
[ "$version" = "$tree_version" ] ||
	die "packaging/debian/changelog is at $version but VERSION says $tree_version: add a changelog entry (dch -v $tree_version)"

mkdir -p "$outdir"
stage=$outdir/nfbox-$version
rm -rf "$stage"
mkdir -p "$stage"
if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
	# Tracked files plus new ones not yet committed (not the ignored).
	git -C "$root" ls-files -z --cached --others --exclude-standard |
		(cd "$root" && xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) |
		tar -C "$root" --null -T - -cf - | tar -C "$stage" -xf -
else
	tar -C "$root" --exclude=./build -cf - . | tar -C "$stage" -xf -
fi
cp -r packaging/debian "$stage/debian"

arch=$(dpkg --print-architecture)
log=$outdir/build.log
jobs=$(nproc 2>/dev/null || echo 1)
case " ${DEB_BUILD_OPTIONS:-} " in
*" parallel="*) ;;
*) DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }parallel=$jobs"; export DEB_BUILD_OPTIONS ;;
esac
if ! (cd "$stage" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL dpkg-buildpackage -b -us -uc) >"$log" 2>&1; then
	grep -E 'Unmet build dependencies|error|Error' "$log" | head -n 20 >&2
	die "dpkg-buildpackage failed; the whole log is $log (missing build dependencies: packaging/install-deps.sh)"
fi
deb=$outdir/nfbox_${version}_$arch.deb
[ -f "$deb" ] || die "dpkg-buildpackage made no $deb; see $log"
rm -rf "$stage"
echo "$deb"
