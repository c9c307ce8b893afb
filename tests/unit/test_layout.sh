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
#   - the include graph between rooms has no cycle;
#   - the daemon is a core and parts (daemon/part.h): the core
#     (appliance/daemon/) includes no part's header, only its own,
#     backend/backend.h and the rooms below; daemon_int.h (struct daemon)
#     is the core's alone; each PART(NAME) of daemon/parts.def is defined
#     once, outside the core, in a folder of its own; no daemon/X.c stands
#     beside a folder X/;
#   - backend/backend.h includes no backend's header, and nothing outside
#     appliance/backend/ does (the CLI's plan and validate too).
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
# The daemon: a core that knows its parts only through the table.
core_bad=$(grep -H '^#include "' appliance/daemon/*.[ch] appliance/daemon/parts.def |
	sed 's/^\([^:]*\):#include "\([^"]*\)".*/\1 \2/' |
	while read -r f inc; do
		case $inc in
		daemon/* | backend/backend.h | base/* | policy/* | control/* | system/* | netlink/* | lib/* | report/*) ;;
		*) echo "$f:$inc" ;;
		esac
	done)
[ -z "$core_bad" ] && t_ok daemon-core-knows-parts-by-table-only || t_fail daemon-core-knows-parts-by-table-only "$core_bad"
int_users=$(grep -rl --include='*.[ch]' '"daemon/daemon_int.h"' appliance base policy | grep -v '^appliance/daemon/')
[ -z "$int_users" ] && t_ok daemon-int-core-only || t_fail daemon-int-core-only "struct daemon read outside the core: $int_users"
parts=$(sed -n 's/^PART(\([a-z_]*\))$/\1/p' appliance/daemon/parts.def)
part_bad=
[ -n "$parts" ] || part_bad="no PART() lines in appliance/daemon/parts.def"
for p in $parts; do
	defs=$(grep -rl --include='*.c' "^const struct part part_$p = {" appliance)
	case $(echo "$defs" | grep -c .) in
	1) case $defs in appliance/daemon/*) part_bad="$part_bad $p:in-the-core($defs)" ;; esac ;;
	*) part_bad="$part_bad $p:defined-${defs:-nowhere}" ;;
	esac
done
[ -z "$part_bad" ] && t_ok parts-each-in-own-folder || t_fail parts-each-in-own-folder "$part_bad"
beside=
for f in appliance/daemon/*.c; do
	b=${f##*/}
	b=${b%.c}
	[ "$b" != daemon ] && [ -d "appliance/$b" ] &&
		grep -rqs --include='*.c' '^const struct part part_' "appliance/$b" && beside="$beside $f"
done
[ -z "$beside" ] && t_ok no-daemon-file-beside-its-folder || t_fail no-daemon-file-beside-its-folder "$beside"
be_inc=$(sed -n 's/^#include "\(backend\/[^"]*\)".*/\1/p' appliance/backend/backend.h | grep -Ev '^backend/[a-z_]*\.(h|def)$')
[ -z "$be_inc" ] && t_ok backend-interface-neutral || t_fail backend-interface-neutral "backend/backend.h includes $be_inc"
# The rest reach a backend only through backend/backend.h: no file outside
# appliance/backend/ includes a backend's own header (backend/NAME/...).
be_outside=$(grep -rH --include='*.[ch]' '^#include "backend/[a-z_]*/' appliance base policy | grep -v '^appliance/backend/')
[ -z "$be_outside" ] && t_ok backends-through-interface-only || t_fail backends-through-interface-only "$be_outside"
# Every room has a job: no source file directly in appliance/.
loose=$(find appliance -maxdepth 1 -name '*.[ch]' 2>&1) && [ -z "$loose" ] && t_ok appliance-rooms-only || t_fail appliance-rooms-only "$loose"
t_done
