# The .deb of this source tree, built once (packaging/build-deb.sh, as
# `make deb` builds it) and shared by the suites that install or check it:
# the runner runs them at the same time, and each building its own took
# the two cores for minutes. Source after tests/lib/lib.sh.
#
#   deb_of_tree   prints the path of the .deb of the tree as it is now
#                 (tracked files and new ones not ignored), building it
#                 under a lock if no suite has yet; the build's log is
#                 build.log beside it. Status 1 (the build's errors on
#                 stderr) if it does not build.
#
# Environment: NFBOX_DEB_CACHE, where the packages are kept (default
# build/deb-tree; `make clean` removes it).

DEB_CACHE=${NFBOX_DEB_CACHE:-$PWD/build/deb-tree}

# What the package is built from: every file of the tree as it is now.
deb_tree_key() {
	if git rev-parse --git-dir >/dev/null 2>&1; then
		git ls-files -z --cached --others --exclude-standard
	else
		find . -path ./build -prune -o -type f -print0
	fi | xargs -0 -r sh -c 'for f; do [ -f "$f" ] && printf "%s\0" "$f"; done' sh | sort -z |
		xargs -0 -r sha256sum | sha256sum | cut -c1-16
}

deb_of_tree() {
	local key dir
	key=$(deb_tree_key) || return 1
	dir=$DEB_CACHE/$key
	mkdir -p "$DEB_CACHE" || return 1
	(
		flock 9
		[ -s "$dir/.built" ] && exit 0
		rm -rf "$dir"
		# what it prints is the .deb's path (kept: test_packaging checks it)
		env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL packaging/build-deb.sh --outdir "$dir" >"$DEB_CACHE/.out" || exit 1
		mv "$DEB_CACHE/.out" "$dir/.built"
	) 9>"$DEB_CACHE/.lock" || return 1
	cat "$dir/.built"
}

# unit_root REL ROOT TMP [OPTION...] [PACKAGE...]: a root of release REL at
# ROOT with the package under test (NFBOX_UNIT_DEB, or the tree's .deb)
# and systemd, dbus, nftables, logrotate and PACKAGEs installed from Debian (on
# bookworm from bookworm-backports too; NAME/bookworm takes bookworm's own
# NAME instead of backports'), unmounted, ready to boot; the test failed
# and ended (t_done) otherwise. Sets deb. TMP holds the build's, the root's
# and the install's output. OPTIONs, before the PACKAGEs:
#   --beside NAME  the package NAME of the same build as the package under
#                  test (cockpit-nfbox), its .deb taken from beside it
#   --then FN      FN ROOT runs once the packages are in, before the root is
#                  unmounted (users, say); it fails the test itself
unit_root() {
	local rel=$1 root=$2 tmp=$3 beside="" then="" beside_debs="" b f
	shift 3
	while [ $# -gt 0 ]; do
		case $1 in
		--beside) beside="$beside $2" ;;
		--then) then=$2 ;;
		*) break ;;
		esac
		shift 2
	done
	if [ -n "${NFBOX_UNIT_DEB:-}" ]; then
		deb=$NFBOX_UNIT_DEB
	elif ! deb=$(deb_of_tree 2>"$tmp/build.err"); then
		t_fail deb-build "$(grep -m 1 -iE 'error|unmet' "$tmp/build.err")"
		t_done
	fi
	local debs="/var/tmp/$(basename "$deb")"
	for b in $beside; do
		f=$(ls "$(dirname "$deb")/${b}"_*.deb 2>/dev/null | head -n 1)
		[ -n "$f" ] || { t_fail deb-build "no $b .deb beside $deb"; t_done; }
		debs="$debs /var/tmp/$(basename "$f")"
		beside_debs="$beside_debs $f"
	done
	# The root with everything but the packages under test comes from a
	# cache (unit_layer): dpkg installs only them, from the files, offline.
	local layer
	layer=$(unit_layer "$rel" "$tmp" "$deb $beside_debs" "$@") || { t_fail root "$(tail -n 3 "$tmp/root.err")"; t_done; }
	droot_new "$rel" "$root" "$layer" 2>"$tmp/root.err" || { t_fail root "$(cat "$tmp/root.err")"; t_done; }
	# /var/tmp: the booted system has a tmpfs on /tmp.
	cp "$deb" $beside_debs "$root/var/tmp/"
	if ! in_root "$root" dpkg -i $debs >"$tmp/install.out" 2>&1; then
		t_fail install "$(grep -m 3 -E 'E:|error|depend' "$tmp/install.out" | tr '\n' ' ')"
		t_done
	fi
	[ -z "$then" ] || "$then" "$root"
	droot_unmount "$root"
}

# unit_layer REL TMP "DEB..." [PACKAGE...]: the path of a cached root of REL
# with systemd, dbus, nftables, logrotate (as a Debian server has), the PACKAGEs and every dependency of the
# DEBs installed (on bookworm from bookworm-backports too), but not the
# DEBs themselves; made once under a lock and kept beside the pristine
# roots, named by what it holds. Its errors go to TMP/root.err.
unit_layer() {
	local rel=$1 tmp=$2 debs=$3 names="" deps="" key dir d n from=""
	shift 3
	# not the packages under test, nor one the caller names itself (it may
	# pin it: cockpit/bookworm)
	for d in $debs; do names="$names $(dpkg-deb -f "$d" Package)"; done
	for n in "$@"; do names="$names ${n%%[/=]*}"; done
	for d in $debs; do
		# the first of each alternative, without its version
		for n in $(dpkg-deb -f "$d" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*)//; s/ //g'); do
			case " $names " in *" $n "*) ;; *) deps="$deps $n" ;; esac
		done
	done
	key=$(echo "$rel systemd dbus nftables logrotate $* $deps" | sha256sum | cut -c1-16)
	dir=$DROOT_CACHE/$rel-unit-$key
	# The lock's directory: on a fresh machine the first suite here may
	# come before any pristine root was made (the lock failed to open).
	mkdir -p "$DROOT_CACHE" || return 1
	(
		flock 9
		[ -f "$dir/.nfbox-complete" ] && exit 0
		rm -rf "$dir" "$dir.tmp"
		droot_new "$rel" "$dir.tmp" || exit 1
		if [ "$rel" = bookworm ]; then
			echo "deb $(droot_mirror) bookworm-backports main" >"$dir.tmp/etc/apt/sources.list.d/bookworm-backports.list"
			from="-t bookworm-backports"
		fi
		if ! in_root "$dir.tmp" sh -c "apt-get -qq update && apt-get install -y --no-install-recommends $from systemd dbus nftables logrotate $* $deps" \
			>"$tmp/layer.out" 2>&1; then
			grep -m 3 -E 'E:|Depends' "$tmp/layer.out"
			droot_free "$dir.tmp"
			exit 1
		fi
		droot_unmount_all "$dir.tmp"
		touch "$dir.tmp/.nfbox-complete"
		mv "$dir.tmp" "$dir"
	) 9>"$DROOT_CACHE/.$rel-unit.lock" >>"$tmp/root.err" 2>&1 || return 1
	echo "$dir"
}
