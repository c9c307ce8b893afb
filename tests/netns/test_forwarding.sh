#!/bin/bash
# A policy that forwards or translates, on an appliance whose kernel does
# not forward (net.ipv4.ip_forward, net.ipv6.conf.all.forwarding off in its
# namespace): nothing passes, and nfbox says so with the fix:
#  - the daemon's log at the load, per family;
#  - status (text and JSON), read afresh for every status: the warning
#    holds while the switch is off and goes once it is on, without a reload;
#  - validate on the machine (not --offline, which does not look);
# and the control: with both on, traffic passes and nothing is said.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
cat >"$NS_TMP/p.yaml" <<'YAML'
version: 1
interfaces: { lan: [lan0], wan: [wan0] }
hooks: { forward: { default: drop } }
rules:
  - { name: out, in: lan, out: wan, action: accept }
YAML
fwd() { in_a sysctl -qw net.ipv4.ip_forward="$1" net.ipv6.conf.all.forwarding="$2"; }
pings() { in_c ping -c 1 -W 1 "$1" >/dev/null 2>&1; }
not() { ! "$@"; }
says() { grep -q -- "$2" <<<"$($1 2>&1)"; } # COMMAND-LINE PATTERN
status_text() { nfbox_ctl status; }
validate_here() { in_a "$NFBOX" validate "$@" "$NS_TMP/p.yaml"; }
status_json() { nfbox_ctl status --json | json_true ".forwarding | $1"; } # FILTER on status' forwarding: true
SAYS4="IPv4 is not forwarded here (net.ipv4.ip_forward is 0)"
SAYS6="IPv6 is not forwarded here (net.ipv6.conf.all.forwarding is 0)"

fwd 0 0
nfbox_start "$NS_TMP/p.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
# what the warning says is so: nothing passes
t_check off-nothing-passes not pings "$S4"
t_check log-at-load grep -q "warning: $SAYS4.*sysctl -w net.ipv4.ip_forward=1" "$NS_TMP/nfbox.err"
t_check log-at-load-v6 grep -q "warning: $SAYS6" "$NS_TMP/nfbox.err"
out=$(nfbox_ctl status)
t_check status-warns grep -q "^warning: *$SAYS4: what rule 'out' accepts on the forward hook never passes; turn it on: sysctl -w net.ipv4.ip_forward=1" <<<"$out"
t_check status-warns-v6 grep -q "^warning: *$SAYS6" <<<"$out"
t_check status-json-warns status_json '(.ipv4 | not) and (.ipv6 | not) and .needed == ["ipv4", "ipv6"] and [.warnings[].family] == ["ipv4", "ipv6"] and (.warnings[0].fix | contains("/etc/sysctl.d/"))'
out=$(in_a "$NFBOX" validate "$NS_TMP/p.yaml" 2>&1)
t_check validate-warns grep -q "p.yaml:5:13: warning: $SAYS4" <<<"$out"
t_check validate-offline-quiet not says "validate_here --offline" "not forwarded"

# IPv4 on: its warning goes at the next status (no reload), IPv6's stays
fwd 1 0
t_check v4-on-passes wait_until 3 pings "$S4"
out=$(nfbox_ctl status)
t_check status-v4-quiet not grep -q "IPv4 is not forwarded" <<<"$out"
t_check status-v6-still grep -q "^warning: *$SAYS6" <<<"$out"
t_check status-json-v6-only status_json '.ipv4 and [.warnings[].family] == ["ipv6"]'

# both on: nothing said, anywhere
fwd 1 1
t_check v6-on-passes wait_until 3 pings "$S6"
t_check status-quiet not says status_text "not forwarded"
t_check status-json-quiet status_json '.ipv4 and .ipv6 and .warnings == []'
t_check validate-quiet validate_here --strict --quiet
nfbox_stop
: >"$NS_TMP/nfbox.err"
nfbox_start "$NS_TMP/p.yaml" || { t_fail restart "$(cat "$NS_TMP/nfbox.err")"; t_done; }
t_check log-quiet-when-on not grep -q "not forwarded" "$NS_TMP/nfbox.err"
nfbox_stop
t_done
