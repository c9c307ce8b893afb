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
