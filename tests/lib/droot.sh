# Throw-away Debian roots for tests: a minimal root of a release, made once
# with debootstrap and cached, then copied for each use so that every test
# starts from a fresh system. Source after tests/lib/lib.sh.
#
#   droot_new RELEASE DIR [FROM]
#                           a fresh root of RELEASE (bookworm, trixie) at DIR
#                           (a copy of the pristine one, or of the cached root
#                           FROM), with /proc, /sys and /dev mounted, ready
#                           for chroot
#   droot_unmount DIR       unmount what droot_new mounted (before booting it)
#   droot_free DIR          unmount and remove it (install as a trap)
#   in_root DIR CMD...      run CMD in the root (a login-like environment)
#   droot_boot DIR LOG [OPTION...]
#                           boot it with systemd-nspawn until systemd runs (below)
#   droot_halt [PID]        stop what droot_boot booted (or the one of PID)
#   deb_relabel DEB VERSION OUT
#                           DEB as this tree built with another version would be
#   droot_prepare CASE      for a test: sets $rel to this machine's release, or
#                           reports CASE skipped (not root, another release) and exits
#   droot_cgroup2 REL SCRIPT
#                           before booting a root of REL with systemd-nspawn:
#                           the unified cgroup hierarchy its systemd may need
#                           (below); droot_cgroup2_free in the test's trap
#
# Environment:
#   NFBOX_ROOT_CACHE  where the pristine roots and apt's downloads are kept
#                     between runs (default /var/cache/nfbox/roots)
#   NFBOX_MIRROR      the Debian archive (default: the one this system's apt
#                     sources use, packaging/install-deps.sh --print-mirror)

DROOT_CACHE=${NFBOX_ROOT_CACHE:-/var/cache/nfbox/roots}

droot_prepare() {
	[ "$(id -u)" -eq 0 ] || { t_fail "$1" "needs root (chroot, mounts): run the tests as root"; t_done; }
	rel=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	case $rel in
	bookworm | trixie) ;;
	*) t_skip "$1" "machine: no throw-away root for release '$rel' (Debian 12 and 13 are supported)"; t_done ;;
	esac
}

droot_mirror() {
	if [ -n "${NFBOX_MIRROR:-}" ]; then
		echo "$NFBOX_MIRROR"
	else
		"$(dirname "${BASH_SOURCE[0]}")/../../packaging/install-deps.sh" --print-mirror
	fi
}

# The cached pristine root of a release (made under a lock on first use).
droot_base() {
	local rel=$1 base=$DROOT_CACHE/$1 mirror tmp
	mkdir -p "$DROOT_CACHE" || return 1
	(
		flock 9
		[ -f "$base/.nfbox-complete" ] && exit 0
		command -v debootstrap >/dev/null || { echo "debootstrap is not installed (packaging/install-deps.sh)" >&2; exit 1; }
		mirror=$(droot_mirror) || exit 1
		tmp=$base.tmp.$$
		rm -rf "$tmp" "$base"
		if ! debootstrap --variant=minbase "$rel" "$tmp" "$mirror" >"$DROOT_CACHE/$rel.log" 2>&1; then
			echo "debootstrap $rel from $mirror failed; see $DROOT_CACHE/$rel.log" >&2
			tail -n 5 "$DROOT_CACHE/$rel.log" >&2
			rm -rf "$tmp"
			exit 1
		fi
		echo "deb $mirror $rel main" >"$tmp/etc/apt/sources.list"
		rm -rf "$tmp/var/cache/apt/archives/"*.deb
		touch "$tmp/.nfbox-complete"
		mv "$tmp" "$base"
	) 9>"$DROOT_CACHE/.$rel.lock"
}

droot_new() {
	local rel=$1 dir=$2 from=${3:-$DROOT_CACHE/$1}
	[ -n "${3:-}" ] || droot_base "$rel" || return 1
	rm -rf "$dir"
	cp -a "$from" "$dir" || return 1
	# A mount point of its own: `ip netns exec` inside makes / rslave.
	mount --bind "$dir" "$dir" || return 1
	# apt's downloads are kept across runs: the second run fetches nothing.
	mkdir -p "$DROOT_CACHE/$rel-archives/partial"
	mount --bind "$DROOT_CACHE/$rel-archives" "$dir/var/cache/apt/archives" || return 1
	mount -t proc proc "$dir/proc" || return 1
	mount --rbind /sys "$dir/sys" && mount --make-rslave "$dir/sys" || return 1
	# An empty directory of the root's own over the host's bpffs: the
	# package's postrm unpins /sys/fs/bpf/nfbox, which must never be the
	# host's (and, as on a host before systemd mounts it, no bpffs is there:
	# nfbox mounts its own, which tests/netns/test_bpffs.sh expects).
	mount -t tmpfs -o size=64k,mode=0755 nfbox-root-bpf "$dir/sys/fs/bpf" || return 1
	mount --rbind /dev "$dir/dev" && mount --make-rslave "$dir/dev" || return 1
	cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null
	# apt must not keep what it downloads in the shared cache half-written.
	echo 'APT::Keep-Downloaded-Packages "true";' >"$dir/etc/apt/apt.conf.d/90nfbox-keep"
	return 0
}

droot_unmount() {
	local dir=$1
	umount -R "$dir/sys" "$dir/dev" "$dir/proc" "$dir/var/cache/apt/archives" 2>/dev/null
	return 0
}

# Everything mounted in or on it, the root's own bind included.
droot_unmount_all() {
	local dir=$1
	droot_unmount "$dir"
	awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r |
		xargs -r -n 1 umount -l 2>/dev/null
	return 0
}

droot_free() {
	local dir=$1
	[ -n "$dir" ] && [ -d "$dir" ] || return 0
	droot_unmount_all "$dir"
	rm -rf --one-file-system "$dir"
}

# A command in the root. apt in roots made at the same time shares the
# cache of downloads (droot_new), and apt locks it: one apt at a time, the
# others wait (the runner runs suites in parallel).
in_root() {
	local dir=$1 lock=()
	shift
	case " $* " in
	*apt-get*) mkdir -p "$DROOT_CACHE" && lock=(flock "$DROOT_CACHE/.apt.lock") ;;
	esac
	"${lock[@]}" chroot "$dir" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"
}

# systemd 256 and later (Debian 13's 257) boot only on the unified cgroup
# hierarchy. On a host with v1 cgroup mounts the calling test (SCRIPT, run
# again) gets a private mount namespace with cgroup2 on /sys/fs/cgroup, and
# a cgroup of its own below the test's (DROOT_CG) for the container,
# removed by droot_cgroup2_free; the host's mounts are not touched. Status 1
# if that cannot be made.
DROOT_CG= DROOT_CG_HOME=
droot_cgroup2() {
	[ "$1" != bookworm ] && [ "$(stat -fc %T /sys/fs/cgroup)" != cgroup2fs ] || return 0
	if [ -z "${NFBOX_UNIT_CGROUP2:-}" ]; then
		exec env NFBOX_UNIT_CGROUP2=1 unshare --mount --propagation private "$2"
	fi
	mount -t cgroup2 nfbox-unit /sys/fs/cgroup || return 1
	DROOT_CG_HOME=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
	DROOT_CG=${DROOT_CG_HOME%/}/nfbox-unit.$$
	mkdir "$DROOT_CG" && echo $$ >"$DROOT_CG/cgroup.procs"
}

droot_cgroup2_free() {
	[ -n "$DROOT_CG" ] || return 0
	echo $$ >"$DROOT_CG_HOME/cgroup.procs"
	find "$DROOT_CG" -depth -type d -exec rmdir {} + 2>/dev/null
	return 0
}

# Boot DIR with systemd-nspawn (its output to LOG; OPTIONs are nspawn's:
# the network, binds), keeping the capabilities and calls nfbox needs, which
# nspawn leaves out otherwise; wait until its systemd runs (30 s at most).
# Sets DROOT_NSPAWN (nspawn's pid) and DROOT_LEADER (the container's pid 1,
# for nsenter -t); status 1 if it did not boot.
droot_boot() {
	local dir=$1 log=$2
	shift 2
	systemd-nspawn -D "$dir" --boot --register=no --keep-unit --console=passive \
		--capability=CAP_BPF,CAP_PERFMON,CAP_NET_ADMIN,CAP_SYS_ADMIN,CAP_IPC_LOCK,CAP_NET_RAW \
		--system-call-filter='bpf perf_event_open' "$@" >"$log" 2>&1 &
	DROOT_NSPAWN=$!
	DROOT_LEADER=
	for _ in $(seq 150); do
		DROOT_LEADER=$(pgrep -P "$DROOT_NSPAWN" | head -n 1)
		[ -n "$DROOT_LEADER" ] && nsenter -t "$DROOT_LEADER" -a systemctl is-system-running 2>/dev/null |
			grep -Eq 'running|degraded' && return 0
		sleep 0.2
	done
	return 1
}

droot_halt() { # [PID]: another of droot_boot's, saved before it booted the next
	local pid=${1:-${DROOT_NSPAWN:-}}
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	[ -n "${1:-}" ] || DROOT_NSPAWN= DROOT_LEADER=
}

# The package DEB as this tree would build it at VERSION (the control's
# Version and the version the maintainer scripts compare with theirs), at
# OUT: an older package to downgrade to without building one.
deb_relabel() {
	local deb=$1 v=$2 out=$3 d old
	d=$(mktemp -d /tmp/nfbox-relabel.XXXXXX) || return 1
	dpkg-deb -R "$deb" "$d/p" || { rm -rf "$d"; return 1; }
	old=$(sed -n 's/^Version: //p' "$d/p/DEBIAN/control")
	sed -i "s/^Version: .*/Version: $v/" "$d/p/DEBIAN/control"
	local r=1 pre=$d/p/DEBIAN/preinst
	# (a package without the preinst that compares has nothing more to change)
	if [ -f "$pre" ] && grep -q "^this='" "$pre"; then
		sed -i "s/^this='$old'\$/this='$v'/" "$pre"
		grep -qx "this='$v'" "$pre" || { rm -rf "$d"; return 1; }
	fi
	dpkg-deb --root-owner-group -b "$d/p" "$out" >/dev/null && r=0
	rm -rf "$d"
	return $r
}
