#!/bin/bash
# The layout keeps the data flow: each folder is a room with one job, and
# rooms include each other only downstream. Checked from the sources:
#   - base/ (diagnostics, cleanup, JSON, log) includes only base/;
#   - policy/ (the language) includes nothing of appliance/ or bpf/;
#   - bpf/ includes only bpf/ (and the checked-in vmlinux.h);
#   - a backend (appliance/backend/) includes nothing of the daemon: it
#     gets what it needs through struct backend_env; the nftables backend
#     includes nothing of the BPF backend (which puts its conntrack and NAT
#     table in place through nftables/table.h);
#   - includes are folder-qualified ("backend/bpf/engine/engine.h", not "engine.h");
#   - the include graph between rooms has no cycle.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh

# room FILE: the folder a source file belongs to, named as includes name it.
room() {
	local d=${1%/*}
	case $d in
	appliance/*) echo "${d#appliance/}" ;;
	*) echo "$d" ;;
	esac
}

edges=$(mktemp)
bad_base= bad_policy= bad_bpf= bad_backend= unqualified=
trap 'rm -f "$edges"' EXIT
# (no file read would read as no bad include)
sources=$(find base policy appliance bpf -name '*.[ch]' | sort) && [ -n "$sources" ] ||
	{ t_fail sources "no sources found under base/, policy/, appliance/ and bpf/"; t_done; }
while IFS= read -r f; do
	from=$(room "$f")
	while IFS= read -r inc; do
		case $inc in
		*/*) ;;
		vmlinux.h) continue ;;
		*)
			# bpf programs include their own headers by name
			case $f in bpf/*) [ -f "bpf/$inc" ] && continue ;; esac
			unqualified="$unqualified $f:$inc"
			continue
			;;
		esac
		case $inc in tests/*) continue ;; esac
		to=${inc%/*}
		case $f in base/*) [ "$to" = base ] || bad_base="$bad_base $f:$inc" ;; esac
		case $f in policy/*) case $to in base | policy | policy/*) ;; *) bad_policy="$bad_policy $f:$inc" ;; esac ;; esac
		case $f in bpf/*) [ "$to" = bpf ] || bad_bpf="$bad_bpf $f:$inc" ;; esac
		case $f in appliance/backend/*) case $to in daemon | daemon/* | cli | control) bad_backend="$bad_backend $f:$inc" ;; esac ;; esac
		case $f in appliance/backend/nftables/*) case $to in backend/bpf | backend/bpf/*) bad_backend="$bad_backend $f:$inc" ;; esac ;; esac
		[ "$from" != "$to" ] && echo "$from $to" >>"$edges"
	done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$f")
done <<<"$sources"

[ -z "$bad_base" ] && t_ok base-includes-base-only || t_fail base-includes-base-only "$bad_base"
[ -z "$bad_policy" ] && t_ok policy-is-backend-neutral || t_fail policy-is-backend-neutral "$bad_policy"
[ -z "$bad_bpf" ] && t_ok bpf-includes-bpf-only || t_fail bpf-includes-bpf-only "$bad_bpf"
[ -z "$bad_backend" ] && t_ok backends-below-daemon-and-apart || t_fail backends-below-daemon-and-apart "$bad_backend"
[ -z "$unqualified" ] && t_ok includes-folder-qualified || t_fail includes-folder-qualified "$unqualified"
if cycle=$(sort -u "$edges" | tsort 2>&1 >/dev/null) && [ -z "$cycle" ]; then
	t_ok rooms-no-include-cycle
else
	t_fail rooms-no-include-cycle "$(echo "$cycle" | tr '\n' ' ')"
fi
# Every room has a job: no source file directly in appliance/.
loose=$(find appliance -maxdepth 1 -name '*.[ch]' 2>&1) && [ -z "$loose" ] && t_ok appliance-rooms-only || t_fail appliance-rooms-only "$loose"
t_done
