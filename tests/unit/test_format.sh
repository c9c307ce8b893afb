#!/bin/bash
# The tree is formatted as .clang-format says, by one pinned clang-format
# (23.1.0, built to WebAssembly and run by node, fetched by
# packaging/install-deps.sh: Debian 12 and 13 ship different ones, which
# format differently). `make format` fixes what this finds. Positive
# control: a file formatted wrongly on purpose is caught.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh

FMT=${NFBOX_CLANG_FORMAT:-/var/cache/nfbox/tools/clang-format-23.1.0/package/clang-format-cli.cjs}
NODE=$(command -v node || command -v nodejs)
[ -n "$NODE" ] && [ -f "$FMT" ] ||
	{ t_fail formatter "node and $FMT are needed (packaging/install-deps.sh fetches them)"; t_done; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the control: wrong on purpose, and caught
cp .clang-format "$tmp/"
printf 'int  main( void ){return 0 ;}\n' >"$tmp/bad.c"
if (cd "$tmp" && "$NODE" "$FMT" --dry-run -Werror bad.c) >/dev/null 2>&1; then
	t_fail control-caught "a misformatted file passed the check"
else
	t_ok control-caught
fi

# every C source and header of the project (the kernel's types excepted)
files=$(find appliance bpf policy tests -name '*.[ch]' -not -path 'bpf/vmlinux/*' | sort)
n=$(printf '%s\n' "$files" | grep -c .)
[ "$n" -gt 100 ] || { t_fail sources "only $n C files found"; t_done; }
# shellcheck disable=SC2086
if "$NODE" "$FMT" --dry-run -Werror --color=false $files >"$tmp/out" 2>&1; then
	t_ok "tree-formatted ($n files)"
else
	t_fail tree-formatted "$(grep -c 'warning:\|error:' "$tmp/out") places differ; run make format. The first: $(grep -m 3 'warning:\|error:' "$tmp/out" | tr '\n' ' ')"
fi
# Every shell script parses under the shell its first line names, and a
# library that a /bin/sh script sources parses under dash (Debian's sh):
# a bash array in tests/lib/deb.sh once broke test_packaging only in CI.
# Positive control: a bash array in an sh file is caught.
printf '#!/bin/sh\nx=(a b)\n' >"$tmp/bad.sh"
if dash -n "$tmp/bad.sh" 2>/dev/null; then
	t_fail shells-control "dash parsed a bash array"
else
	t_ok shells-control
fi
bad=""
scripts=$(grep -rlE '^#!/bin/(ba)?sh' --include='*.sh' appliance packaging tests .ci 2>/dev/null;
	grep -rlE '^#!/bin/(ba)?sh' packaging/debian packaging/systemd packaging/crowdsec packaging/fleet .ci 2>/dev/null)
for f in $(printf '%s\n' $scripts | sort -u); do
	case $(head -n 1 "$f") in
	'#!/bin/sh'*) sh=dash ;;
	*) sh=bash ;;
	esac
	$sh -n "$f" 2>>"$tmp/sh.err" || bad="$bad $f"
	[ "$sh" = dash ] || continue
	for lib in $(sed -n 's|^[.] \(tests/lib/[a-z0-9_]*[.]sh\).*|\1|p' "$f"); do
		dash -n "$lib" 2>>"$tmp/sh.err" || bad="$bad $lib(sourced by $f)"
	done
done
if [ -z "$bad" ]; then
	t_ok "shells-parse ($(printf '%s\n' $scripts | sort -u | grep -c .) scripts)"
else
	t_fail shells-parse "$bad: $(head -n 2 "$tmp/sh.err" | tr '\n' ' ')"
fi
t_done
