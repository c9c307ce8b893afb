#!/bin/bash
# Golden files for the policy tools:
#   golden/valid/X.yaml    `nfbox plan X.yaml` must print X.plan exactly, and
#                          `nfbox plan --json` must be valid JSON; where X.nft
#                          exists, `nfbox plan --nft` must print it exactly
#   golden/invalid/X.yaml  `nfbox validate --strict X.yaml` must exit 3 and
#                          print X.err exactly (messages, lines, columns, carets)
# NFBOX_UPDATE_GOLDEN=1 rewrites the expected files from the current output
# (review the diff before committing it).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
export NO_COLOR=1
tmp=$(mktemp -d /tmp/nfbox-golden.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

compare() { # NAME EXPECTED-FILE ACTUAL-FILE
	if [ -n "${NFBOX_UPDATE_GOLDEN:-}" ]; then
		cp "$3" "$2"
		t_ok "$1 (updated)"
	elif diff -u "$2" "$3" >"$tmp/diff"; then
		t_ok "$1"
	else
		t_fail "$1" "output differs from $2:"
		head -n 40 "$tmp/diff"
	fi
}

for f in tests/unit/golden/valid/*.yaml; do
	n=$(basename "$f" .yaml)
	if "$NFBOX" plan "$f" >"$tmp/out" 2>"$tmp/err"; then
		compare "plan-$n" "${f%.yaml}.plan" "$tmp/out"
	else
		t_fail "plan-$n" "nfbox plan failed: $(cat "$tmp/err")"
	fi
	# X.nft: `nfbox plan --nft` (what nftables gets) must print it exactly;
	# an update writes one for each policy of the nftables backend.
	if [ -e "${f%.yaml}.nft" ] || { [ -n "${NFBOX_UPDATE_GOLDEN:-}" ] && grep -q 'backend: nftables' "$f"; }; then
		# What nftables gets holds which schedules are in force now, so
		# a golden of it may schedule only what is always in force (a
		# weekend rule once passed on Sunday and failed on Monday).
		saw=$(grep -n 'when:' "$f" | grep -v -e 'mon-sun' -e '"00:00-12:00".*"12:00-24:00"')
		[ -z "$saw" ] && t_ok "plan-nft-$n-schedules-always" ||
			t_fail "plan-nft-$n-schedules-always" "$f: a schedule not always in force makes the golden depend on the day: $saw"
		if "$NFBOX" plan --nft "$f" >"$tmp/out" 2>"$tmp/err"; then
			compare "plan-nft-$n" "${f%.yaml}.nft" "$tmp/out"
		else
			t_fail "plan-nft-$n" "nfbox plan --nft failed: $(cat "$tmp/err")"
		fi
	fi
	if [ "$("$NFBOX" plan --json "$f" | jq -s 'length == 1' 2>"$tmp/err")" = true ]; then # one JSON document
		t_ok "plan-json-$n"
	else
		t_fail "plan-json-$n" "not valid JSON: $(head -c 300 "$tmp/err")"
	fi
done

for f in tests/unit/golden/invalid/*.yaml; do
	n=$(basename "$f" .yaml)
	"$NFBOX" validate --strict --offline "$f" >"$tmp/out" 2>&1
	rc=$?
	if [ "$rc" -ne 3 ]; then
		t_fail "reject-$n" "exit status $rc, expected 3"
		continue
	fi
	compare "reject-$n" "${f%.yaml}.err" "$tmp/out"
done

# plan --json carries what each rule matches (as the loader read it), its
# comment, the NAT entries and the captures, not only bit numbers.
jcheck() { # NAME FILE JQ-CONDITION (on the plan)
	if [ "$("$NFBOX" plan --json "$2" 2>/dev/null | jq "$3" 2>"$tmp/err")" = true ]; then
		t_ok "$1"
	else
		t_fail "$1" "$3 does not hold for $2 $(head -c 200 "$tmp/err")"
	fi
}
V=tests/unit/golden/valid
jcheck plan-json-negation $V/negation.yaml \
	'.hooks[0].rules[0].match.from == {"as_written": "!office", "negated": true, "prefixes": ["192.0.2.0/24", "2001:db8:1::/48"]}'
jcheck plan-json-ports $V/port-lists.yaml \
	'.hooks[0].rules[0].match.service.ports == [{"proto": "tcp", "lo": 22, "hi": 22}] and .hooks[0].rules[1].match.proto == 112'
jcheck plan-json-icmp $V/icmp-types.yaml '.hooks[0].rules[0].match.icmp_types == [0, 8, 13]'
jcheck plan-json-nat $V/small-office.yaml '.nat[0].kind == "masquerade" and (.nat[0].out.interfaces | length > 0)'
jcheck plan-json-every-key $V/small-office.yaml \
	'[.hooks[].rules[]] | all((.match | keys) == (["in", "out", "from", "to", "proto", "icmp_types", "service", "source_service", "state"] | sort) and has("comment"))'
cat >"$tmp/cap.yaml" <<'YAML'
version: 1
hooks: { forward: { default: accept } }
rules:
  - { name: r, from: 192.0.2.1, action: drop, comment: "a note for people" }
capture:
  - { name: jumbo, interface: cap0, file: /var/lib/nfbox/capture/j.pcapng, match: { proto: udp, min-length: 1500 } }
YAML
jcheck plan-json-capture-comment "$tmp/cap.yaml" \
	'.captures[0].name == "jumbo" and .captures[0].proto == 17 and .captures[0].min_length == 1500 and .hooks[0].rules[0].comment == "a note for people"'

# nfbox diff OLD NEW: golden/diff/X.old.yaml and X.new.yaml must give X.diff
# exactly, exit 1 when it is not empty; a policy against itself exits 0.
for f in tests/unit/golden/diff/*.old.yaml; do
	n=$(basename "$f" .old.yaml)
	"$NFBOX" diff "$f" "${f%.old.yaml}.new.yaml" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -ne 1 ]; then
		t_fail "diff-$n" "exit status $rc, expected 1: $(head -n 3 "$tmp/err")"
	else
		compare "diff-$n" "${f%.old.yaml}.diff" "$tmp/out"
	fi
	"$NFBOX" diff "$f" "$f" >"$tmp/out" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ] && [ ! -s "$tmp/out" ]; then t_ok "diff-self-$n"; else t_fail "diff-self-$n" "exit $rc: $(head -n 3 "$tmp/out")"; fi
done
# --json: the same changes taken apart (tests/lib/jsoncheck.py; the release
# build: two runs of each of 157 files take ten times as long under ASan),
# and the shape pinned by one golden each (golden/json/)
REL=${NFBOX_BIN_RELEASE:-$NFBOX}
for f in tests/unit/golden/diff/*.old.yaml; do
	/usr/bin/python3 tests/lib/jsoncheck.py diff "$REL" "$f" "${f%.old.yaml}.new.yaml" || T_FAILED=$((T_FAILED + 1))
done
/usr/bin/python3 tests/lib/jsoncheck.py validate "$REL" tests/unit/golden/invalid/*.yaml || T_FAILED=$((T_FAILED + 1))
pretty() { /usr/bin/python3 -m json.tool --indent 1; }
"$NFBOX" diff --json tests/unit/golden/diff/edits.old.yaml tests/unit/golden/diff/edits.new.yaml | pretty >"$tmp/out"
compare diff-json-golden tests/unit/golden/json/diff-edits.json "$tmp/out"
"$NFBOX" validate --json --offline tests/unit/golden/invalid/unknown-refs.yaml | pretty >"$tmp/out"
compare validate-json-golden tests/unit/golden/json/validate-unknown-refs.json "$tmp/out"
"$NFBOX" diff --json tests/unit/golden/valid/ports.yaml tests/unit/golden/invalid/unknown-refs.yaml | pretty >"$tmp/out"
compare diff-json-invalid-golden tests/unit/golden/json/diff-invalid.json "$tmp/out"
"$NFBOX" diff tests/unit/golden/valid/ports.yaml tests/unit/golden/invalid/unknown-refs.yaml >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 3 ] && grep -q "unknown set 'offce'" "$tmp/out"; then t_ok diff-invalid-policy; else t_fail diff-invalid-policy "exit $rc: $(head -n 3 "$tmp/out")"; fi

# The plan is stable under small edits: a comment line changes nothing, one
# rule inserted changes a few lines (its own, the vectors it is in, the
# counts), not every line after it.
mkdir -p "$tmp/s1" "$tmp/s2" "$tmp/s3"
cp tests/unit/golden/valid/small-office.yaml "$tmp/s1/policy.yaml"
sed '0,/^rules:/s//# a comment line\nrules:/' "$tmp/s1/policy.yaml" >"$tmp/s2/policy.yaml"
awk '/^rules:/ { print; print "  - { name: inserted, hook: input, from: 203.0.113.77, action: drop }"; next } { print }' \
	"$tmp/s1/policy.yaml" >"$tmp/s3/policy.yaml"
planned=yes
for d in s1 s2 s3; do
	# (a plan that failed, empty, would read as "nothing changed")
	(cd "$tmp/$d" && "$NFBOX" plan policy.yaml >plan 2>"$tmp/$d.err") && [ -s "$tmp/$d/plan" ] ||
		planned="no: nfbox plan $d: $(head -n 2 "$tmp/$d.err")"
done
changed() { diff "$tmp/s1/plan" "$tmp/$1/plan" | grep -c '^[<>]'; }
n2=$(changed s2)
n3=$(changed s3)
total=$(wc -l <"$tmp/s1/plan")
if [ "$planned" != yes ]; then
	t_fail plan-stable-comment "$planned"
elif [ "$n2" -eq 0 ]; then
	t_ok plan-stable-comment
else
	t_fail plan-stable-comment "a comment line changed $n2 plan lines"
fi
if [ "$planned" != yes ]; then
	t_fail plan-stable-insert "$planned"
elif [ "$n3" -gt 0 ] && [ "$n3" -le 12 ]; then
	t_ok "plan-stable-insert ($n3 of $total lines)"
else
	t_fail plan-stable-insert "one inserted rule changed $n3 of $total plan lines"
fi

# Warnings alone do not fail without --strict.
for n in host-bits shadowed country-db-missing; do
	t_check "warnings-pass-$n" "$NFBOX" validate --quiet --offline tests/unit/golden/invalid/$n.yaml 2>/dev/null
done

# Everything the project ships validates, warnings included (written for
# other machines: their interfaces are not this one's).
for f in config/policy.yaml config/examples/*.yaml; do
	t_check "shipped-valid-$(basename "$f" .yaml)" "$NFBOX" validate --strict --quiet --offline "$f"
done

# Without --offline, a name in in:/out: that is neither a group, nor a
# group's member, nor an interface of this machine is warned of; one that
# is (lo) is not. In a network namespace of its own, where only lo exists.
printf 'version: 1
interfaces:
  lan: [lan0]
hooks:
  forward: { default: drop }
rules:
  - { name: a, in: lan, out: lo, action: accept }
  - { name: b, in: lan, out: wierd0, action: accept }
' >"$tmp/here.yaml"
if unshare -n true 2>/dev/null; then
	unshare -n "$NFBOX" validate --strict "$tmp/here.yaml" >"$tmp/out" 2>&1
	rc=$?
	t_check here-unknown-interface-warned grep -q "here.yaml:8:30: warning: no interface group 'wierd0', and no interface of that name here" "$tmp/out"
	t_check here-existing-interface-not-warned [ "$(grep -c "warning: no interface group" "$tmp/out")" = 1 ]
	t_check here-strict-fails [ "$rc" = 3 ]
	t_check here-offline-passes "$NFBOX" validate --strict --quiet --offline "$tmp/here.yaml"
else
	t_skip here-unknown-interface "machine: cannot make a network namespace (unshare -n needs root)"
fi

# What validate accepts, run loads: 48,000 rules alternating a port and an
# address need more vector memory than the BPF engine has. validate (and
# plan) say so, as run would; the same rules with backend: nftables pass.
big() { # BACKEND-LINE
	printf 'version: 1\n%shooks:\n  forward: { default: drop }\nrules:\n' "$1"
	awk 'BEGIN { for (i = 0; i < 48000; i++)
		if (i % 2) printf "  - { name: r%d, service: tcp/%d, action: accept }\n", i, 1000 + i
		else printf "  - { name: r%d, to: 198.51.%d.%d, action: accept }\n", i, int(i / 256) % 256, i % 256 }'
}
# (the release build: under ASan these take ten times as long)
big "" >"$tmp/big.yaml"
"$REL" validate "$tmp/big.yaml" >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 3 ] && grep -q 'error: the policy does not fit the BPF engine' "$tmp/out"; then
	t_ok validate-runs-the-encoder
else
	t_fail validate-runs-the-encoder "exit $rc: $(tail -n 3 "$tmp/out")"
fi
if "$REL" plan "$tmp/big.yaml" >/dev/null 2>"$tmp/out"; then
	t_fail plan-runs-the-encoder "plan printed a plan that run could not load"
else
	t_check plan-runs-the-encoder grep -q 'does not fit the BPF engine' "$tmp/out"
fi
big "options: { backend: nftables }
" >"$tmp/bign.yaml"
t_check validate-nftables-backend-no-encoder "$REL" validate --quiet "$tmp/bign.yaml"

# Every mistake in one run: two files, each with its own errors.
"$NFBOX" validate tests/unit/golden/invalid/port-range.yaml tests/unit/golden/invalid/unknown-refs.yaml >"$tmp/out" 2>&1
if [ "$(grep -c ': error: ' "$tmp/out")" -eq 6 ]; then t_ok "all-errors-all-files"; else t_fail "all-errors-all-files" "expected 6 errors: $(cat "$tmp/out")"; fi

# Limits are errors, not crashes. (The release build: under ASan these two
# took 5 s of CPU, and unit/test_limits loads, compiles and builds the same
# 65,536 rules and 65,537 under ASan in one process.)
{
	printf 'version: 1\nhooks: { forward: { default: drop } }\nrules:\n'
	awk 'BEGIN { for (i = 0; i <= 65536; i++) printf "  - { name: r%d, service: tcp/%d, action: accept }\n", i, i % 65536 }'
} >"$tmp/many.yaml"
if "$REL" validate "$tmp/many.yaml" >"$tmp/out" 2>&1; then
	t_fail "limit-rules" "65,537 rules were accepted"
elif grep -q "more than 65536 rules on the forward hook" "$tmp/out"; then
	t_ok "limit-rules"
else
	t_fail "limit-rules" "$(head -c 500 "$tmp/out")"
fi
head -n 65539 "$tmp/many.yaml" >"$tmp/max.yaml"
t_check "limit-rules-at-max" "$REL" validate --quiet "$tmp/max.yaml"

awk 'BEGIN { for (i = 0; i < 2000001; i++) printf "2001:db8:%x:%x::/64\n", int(i / 65536), i % 65536 }' >"$tmp/huge.txt"
printf 'version: 1\nhooks: { forward: { default: drop } }\nsets:\n  huge: { file: %s }\nrules:\n  - { name: a, from: huge, action: drop }\n' "$tmp/huge.txt" >"$tmp/huge.yaml"
if "$NFBOX" validate "$tmp/huge.yaml" >"$tmp/out" 2>&1; then
	t_fail "limit-prefixes" "2,000,001 prefixes were accepted"
elif grep -q "more than 2000000 prefixes" "$tmp/out" && grep -q "huge.txt:2000001:1:" "$tmp/out"; then
	t_ok "limit-prefixes"
else
	t_fail "limit-prefixes" "$(head -c 500 "$tmp/out")"
fi

# Above 3,000 rules the shadowed-rule check is skipped, and validate says
# so (a silent skip would read as "nothing shadowed"); at 3,000 it runs.
for n in 2999 3000; do # and one more rule: 3,000 and 3,001
	{
		printf 'version: 1\nhooks:\n  forward: { default: drop }\nrules:\n'
		awk -v n="$n" 'BEGIN { for (i = 1; i <= n; i++) printf "  - { name: r%d, service: [tcp/%d], action: accept }\n", i, i }'
		echo "  - { name: late, service: [tcp/1], action: drop }"
	} >"$tmp/many.yaml"
	"$NFBOX" validate "$tmp/many.yaml" >"$tmp/out" 2>&1
	if [ "$n" = 3000 ]; then
		if grep -q '^note: the shadowed-rule check was skipped: 3001 rules, more than 3000' "$tmp/out"; then
			t_ok shadow-skip-said
		else
			t_fail shadow-skip-said "$(head -c 300 "$tmp/out")"
		fi
	elif grep -q "rule 'late' is never reached" "$tmp/out" && ! grep -q 'check was skipped' "$tmp/out"; then
		t_ok shadow-at-limit
	else
		t_fail shadow-at-limit "$(head -c 300 "$tmp/out")"
	fi
done

t_done
