#!/bin/bash
# Which rules are used (nfbox stats --unused [--since], each rule's last hit
# kept in the state directory, nfbox diff naming a removed rule's last hit):
# - a rule that traffic hits is not listed by --unused, one that nothing
#   hits is, with when it came into force; --since lists a rule whose last
#   hit is older than the window;
# - the last hits survive a stop and a start (SIGTERM detaches everything:
#   the backend's own counters start from zero) and a reload that keeps
#   the rule; a rule added by the reload comes into force then;
# - nfbox diff against a policy without the hit rule warns with its age,
#   and says nothing of a removed rule never hit;
# - a careless operator: a record that is not one, or that another user
#   owns, is set aside (or not trusted) with a warning, and the daemon runs;
#   --since without --unused is refused.
# A planted bug (the record ignored) makes the restart checks fail.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
policy() { # FILE RULES...: a forward policy with the named rules (used, idle, gone, fresh)
	local f=$1 r
	shift
	cat >"$f" <<YAML
version: 1
interfaces:
  lan: [lan0]
hooks:
  forward: { default: drop }
rules:
YAML
	for r in "$@"; do
		case $r in
		used) echo "  - { name: used, in: lan, service: udp/7001, action: accept }" ;;
		idle) echo "  - { name: idle, in: lan, service: udp/7002, action: accept }" ;;
		gone) echo "  - { name: gone, in: lan, service: udp/7003, action: accept }" ;;
		fresh) echo "  - { name: fresh, in: lan, service: udp/7004, action: accept }" ;;
		esac >>"$f"
	done
}
send() { in_c "$NET" udp-send $S4 "$1" 64 3 >/dev/null 2>&1; }
field() { # RULE KEY: from stats --json (null as such, absent: no such rule or key)
	nfbox_ctl stats --json |
		jq -r --arg r "$1" --arg k "$2" 'first((.rules[] | select(.rule == $r) | if has($k) then .[$k] else "absent" end), "absent")'
}
unused() { # [ARGS]: the rules --unused lists, one per line
	nfbox_ctl stats --unused --json "$@" | jq -r '.unused[].rule'
}
hit_now() { [ "$(field "$1" last_hit)" != null ]; }

policy "$NS_TMP/p.yaml" used idle gone
nfbox_start "$NS_TMP/p.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
send 7001
send 7003
# (nftables backend: the daemon reads the counters once a second)
t_check hit-seen wait_until 3 hit_now used
t_check hit-seen-gone wait_until 3 hit_now gone
u=$(unused)
t_check unused-lists-idle grep -qx idle <<<"$u"
t_check unused-not-used sh -c '! grep -qx used' <<<"$u"
t_check unused-default grep -qx '(default)' <<<"$u"
t_check unused-text grep -Eq '^forward +idle +accept +([0-9]+s ago|now) +never$' <(nfbox_ctl stats --unused)
t_check unused-text-total grep -q '^2 of 4 rules and defaults never hit' <(nfbox_ctl stats --unused)
t_check unused-in-force-since [ "$(field idle in_force_since)" != null ]
sleep 2.2
# a window shorter than what passed since the hit: listed, and not flagged
# as in force for less than the window; a window longer than the rules are
# in force: the never-hit rule flagged so
u=$(unused --since 2s)
t_check since-lists-used grep -qx used <<<"$u"
t_check since-text grep -Eq '^forward +used .* [0-9]+s ago$' <(nfbox_ctl stats --unused --since 2s)
t_check since-window-longer grep -Eq '^forward +idle .* never +\(in force for less than the window\)$' \
	<(nfbox_ctl stats --unused --since 1h)
t_check since-window-hit-not-listed sh -c '! grep -q " used "' < <(nfbox_ctl stats --unused --since 1h)
send 7001
t_check since-not-after-hit wait_until 3 sh -c "! '$NFBOX' stats --socket '$NFBOX_SOCK' --unused --since 2s | grep -q ' used '"
t_check since-needs-unused sh -c "'$NFBOX' stats --socket '$NFBOX_SOCK' --since 2s; [ \$? = 2 ]"

# ---- kept over a stop and a start ----
before=$(field used last_hit)
nfbox_stop
t_check record-saved grep -q ' forward:used$' "$NS_TMP/state/last-hits"
nfbox_start "$NS_TMP/p.yaml" || { t_fail restart "$(cat "$NS_TMP/nfbox.err")"; t_done; }
t_check restart-keeps-last-hit [ "$(field used last_hit)" = "$before" ]
t_check restart-keeps-never [ "$(field idle last_hit)" = null ]

# ---- nfbox diff names what a change would stop matching ----
policy "$NS_TMP/q.yaml" used fresh
backend_policy "$NS_TMP/q.yaml"
d=$(nfbox_ctl diff "$NS_TMP/q.yaml" 2>&1)
t_check diff-warns-hit grep -Eq '^warning: rule forward gone, which this change removes, was hit [0-9]+[smh] ago$' <<<"$d"
t_check diff-quiet-never sh -c '! grep -q "rule forward idle, which" ' <<<"$d"
t_check diff-still-lists grep -q 'rule forward idle: removed' <<<"$d"
# --json: the same, taken apart: the change by rule name, the warning with its last hit
nfbox_ctl diff --json "$NS_TMP/q.yaml" >"$NS_TMP/diff.json" 2>&1
rc=$?
t_check diff-json /usr/bin/python3 -c '
import json, sys, time
doc = json.load(open(sys.argv[1]))
gone = [c for c in doc["changes"] if c["name"] == "gone"]
w = doc["warnings"]
assert sys.argv[2] == "1" and doc["valid"] and len(gone) == 1, (sys.argv[2], doc)
assert gone[0]["kind"] == "rule" and gone[0]["hook"] == "forward" and gone[0]["change"] == "removed", gone
assert len(w) == 1 and w[0]["rule"] == "gone" and w[0]["hook"] == "forward", w
assert abs(time.time() - w[0]["last_hit"]) < 600 and w[0]["text"].startswith("warning: rule forward gone"), w
' "$NS_TMP/diff.json" "$rc"

# ---- a reload that keeps the rule keeps its last hit; a new rule starts now ----
nfbox_ctl reload --policy "$NS_TMP/q.yaml" >/dev/null
t_check reload-keeps-last-hit [ "$(field used last_hit)" = "$before" ]
since=$(field fresh in_force_since)
t_check reload-new-rule-now fholds "$since > $EPOCHREALTIME - 5 && $since < $EPOCHREALTIME + 5"
t_check reload-drops-gone sh -c "! grep -q 'forward:gone' '$NS_TMP/state/last-hits'"

# ---- a record that is not one ----
nfbox_stop
echo "this is not a record" >"$NS_TMP/state/last-hits"
nfbox_start "$NS_TMP/q.yaml" || { t_fail start-bad-record "$(cat "$NS_TMP/nfbox.err")"; t_done; }
t_check bad-record-warned grep -q 'last-hits: not a record of last hits; the rules.* last hits start anew' "$NS_TMP/nfbox.err"
t_check bad-record-kept compgen -G "$NS_TMP/state/last-hits.bad-*"
t_check bad-record-runs [ "$(field used last_hit)" = null ]
# ---- a record another user owns is not trusted ----
nfbox_stop
chown nobody "$NS_TMP/state/last-hits"
nfbox_start "$NS_TMP/q.yaml" || { t_fail start-foreign-record "$(cat "$NS_TMP/nfbox.err")"; t_done; }
t_check foreign-record-warned grep -q "last hits start anew" "$NS_TMP/nfbox.err"
nfbox_stop
t_done
