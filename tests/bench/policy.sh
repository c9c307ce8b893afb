#!/bin/bash
# Policy tooling at scale (no root needed): `nfbox validate` loads, checks,
# compiles and encodes a policy exactly as `nfbox run` does, so its wall time
# is the cost of getting a policy ready. Generated policies:
#   65,536 rules       one port each (BPF backend: encoded as run loads it),
#                      and alternating port and address rules (nftables
#                      backend: too many distinct vectors for the BPF engine)
#   1,000,000 prefixes one set from a file, one rule using it
#   50,000 named sets  one rule per set, each naming its set
# and `nfbox plan` of 1,024 and 65,536 alternating rules, whose output should
# grow with the policy (bytes per rule about the same). Targets from issue
# 12; "before" is what the same measurement gave before the loader's name
# index, the hashed YAML key check and the plan's once-per-table wildcards
# (2026-12-03, this machine kind), "-" where it was not measured.
#
# Usage: tests/bench/policy.sh [NFBOX]   (default build/nfbox)
set -u
cd "$(dirname "$0")/../.."
NFBOX=${1:-build/nfbox}
tmp=$(mktemp -d /tmp/nfbox-bench-policy.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

gen_ports() { # N (<= 65536): rule i accepts tcp port i
	printf 'version: 1\nhooks:\n  forward: { default: drop }\nrules:\n'
	awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "  - { name: r%d, service: tcp/%d, action: accept }\n", i, i }'
}
gen_rules() { # N
	printf 'version: 1\noptions: { backend: nftables }\nhooks:\n  forward: { default: drop }\nrules:\n'
	awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++)
		if (i % 2) printf "  - { name: r%d, service: tcp/%d, action: accept }\n", i, 1 + i % 65535
		else printf "  - { name: r%d, to: 10.%d.%d.%d, action: accept }\n", i, int(i / 65536) % 256, int(i / 256) % 256, i % 256 }'
}
gen_prefixes() {
	awk 'BEGIN { for (i = 0; i < 1000000; i++) printf "%d.%d.%d.0/24\n", 11 + int(i / 65536), int(i / 256) % 256, i % 256 }' >"$tmp/prefixes.txt"
	printf 'version: 1\nsets:\n  big: { file: prefixes.txt }\nhooks:\n  forward: { default: accept }\nrules:\n  - { name: drop-big, from: big, action: drop }\n'
}
gen_sets() {
	printf 'version: 1\nsets:\n'
	awk 'BEGIN { for (i = 0; i < 50000; i++) printf "  s%d: [10.%d.%d.0/24]\n", i, int(i / 256) % 256, i % 256 }'
	printf 'hooks:\n  forward: { default: drop }\nrules:\n'
	awk 'BEGIN { for (i = 0; i < 50000; i++) printf "  - { name: r%d, from: s%d, action: accept }\n", i, i }'
}

secs() { # FILE: wall seconds of nfbox validate
	local t0=$EPOCHREALTIME
	"$NFBOX" validate --quiet "$1" >/dev/null 2>"$tmp/err" || { echo "n/a"; return; }
	awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }'
}
verdict() { awk -v v="$1" -v t="$2" 'BEGIN { if (v == "n/a") print "FAILED"; else if (v + 0 < t + 0) print "MET"; else print "MISSED" }'; }

echo "== policy tooling: validate + compile + encode (nfbox validate), wall seconds"
gen_ports 65536 >"$tmp/ports.yaml"
gen_rules 65536 >"$tmp/rules.yaml"
gen_prefixes >"$tmp/prefixes.yaml"
gen_sets >"$tmp/sets.yaml"
printf '%-32s %8s %8s %8s  %s\n' policy seconds target before verdict
row() { # NAME FILE TARGET BEFORE
	local s
	s=$(secs "$2")
	printf '%-32s %8s %8s %8s  %s\n' "$1" "$s" "< $3" "$4" "$(verdict "$s" "$3")"
	[ "$s" = n/a ] && echo "bench: FAILED: $1: $(tail -n 2 "$tmp/err")" >&2
}
row "65,536 rules, BPF backend" "$tmp/ports.yaml" 2 -
row "65,536 rules, nftables backend" "$tmp/rules.yaml" 2 -
row "1,000,000 prefixes" "$tmp/prefixes.yaml" 1 -
row "50,000 named sets" "$tmp/sets.yaml" 1 21.8

gen_rules 1024 >"$tmp/small.yaml"
small=$("$NFBOX" plan "$tmp/small.yaml" 2>/dev/null | wc -c)
big=$("$NFBOX" plan "$tmp/rules.yaml" 2>/dev/null | wc -c)
growth=$(awk -v a="$small" -v b="$big" 'BEGIN { printf "%.1f", (b / 65536) / (a / 1024) }')
echo "nfbox plan: $((small / 1024)) bytes per rule at 1,024 rules, $((big / 65536)) at 65,536:" \
	"${growth}x per rule (target: linear, within 2x; before: 286,733 bytes per rule at 65,536)" \
	"$(awk -v g="$growth" 'BEGIN { print (g + 0 <= 2 ? "MET" : "MISSED") }')"
