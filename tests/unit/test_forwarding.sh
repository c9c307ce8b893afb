#!/bin/bash
# validate on the machine warns of each family the policy forwards or
# translates that the kernel does not forward, with the fix, at the place
# that needs it (the forward hook's default accept, the first rule that
# accepts the family on forward, the first masquerade, snat or
# forward-port); a redirect (to the appliance itself), a policy that
# forwards nothing, --offline and a kernel that forwards say nothing. Each
# case in a network namespace of its own, with the switches set there.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
export NO_COLOR=1
NFBOX=${NFBOX_BIN_RELEASE:-$NFBOX}
tmp=$(mktemp -d /tmp/nfbox-fwd.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
unshare -n true 2>/dev/null || { t_skip forwarding "machine: cannot make a network namespace (unshare -n needs root)"; t_done; }

# here IPV4 IPV6 FILE [validate options]: validate FILE where the switches
# are so; its output in $tmp/out, its exit status in rc
here() {
	unshare -n sh -c 'sysctl -qw net.ipv4.ip_forward=$1 net.ipv6.conf.all.forwarding=$2 && n=$3 && shift 3 &&
		exec "$n" validate "$@"' sh "$1" "$2" "$NFBOX" "${@:4}" "$3" >"$tmp/out" 2>&1
	rc=$?
}
count() { grep -c "is not forwarded here" "$tmp/out"; }
V4="IPv4 is not forwarded here (net.ipv4.ip_forward is 0)"
V6="IPv6 is not forwarded here (net.ipv6.conf.all.forwarding is 0)"

printf 'version: 1\nhooks: { forward: { default: drop } }\nrules:\n  - { name: v4-only, from: 192.0.2.0/24, action: accept }\n  - { name: both, action: accept }\n' >"$tmp/rule.yaml"
here 0 0 "$tmp/rule.yaml"
t_check rule-v4 grep -q "rule.yaml:4:13: warning: $V4: what rule 'v4-only' accepts on the forward hook never passes; turn it on: sysctl -w net.ipv4.ip_forward=1, and keep it: 'net.ipv4.ip_forward = 1' in a file of /etc/sysctl.d/$" "$tmp/out"
t_check rule-v6-first-of-its-family grep -q "rule.yaml:5:13: warning: $V6: what rule 'both' accepts" "$tmp/out"
t_check rule-two [ "$(count)" = 2 ]
here 1 0 "$tmp/rule.yaml"
t_check v4-on-v6-off eval '[ "$(count)" = 1 ] && grep -q "$V6" "$tmp/out"'
here 1 1 "$tmp/rule.yaml" --strict
t_check both-on-quiet eval '[ $rc = 0 ] && [ "$(count)" = 0 ]'
here 0 0 "$tmp/rule.yaml" --offline --strict
t_check offline-quiet eval '[ $rc = 0 ] && [ "$(count)" = 0 ]'
here 0 0 "$tmp/rule.yaml" --strict
t_check strict-fails eval '[ $rc = 3 ]'
here 0 0 "$tmp/rule.yaml" --json
t_check json-message-and-fix json_true '.files[0].diagnostics | [.[].message | split(" ")[0]] == ["IPv4", "IPv6"] and
	.[0].fix == "turn it on: sysctl -w net.ipv4.ip_forward=1, and keep it: '"'"'net.ipv4.ip_forward = 1'"'"' in a file of /etc/sysctl.d/" and
	(.[0].message | endswith("never passes")) and .[0].severity == "warning"' <"$tmp/out"

printf 'version: 1\nhooks: { forward: { default: accept } }\n' >"$tmp/default.yaml"
here 0 0 "$tmp/default.yaml"
t_check default-accept eval '[ "$(count)" = 2 ] && grep -q "default.yaml:2:.*what the forward hook accepts by default never passes" "$tmp/out"'

printf 'version: 1\ninterfaces: { wan: [wan0] }\nnat:\n  - masquerade: { out: wan }\n' >"$tmp/nat.yaml"
here 0 0 "$tmp/nat.yaml"
# a masquerade translates IPv4 unless it says otherwise: IPv6 is routed
t_check nat-without-forward-hook eval '[ "$(count)" = 1 ] && grep -q "nat.yaml:4:5: warning: $V4: what this masquerade translates never passes" "$tmp/out"'
sed -i 's/out: wan }/out: wan, family: [ipv4, ipv6] }/' "$tmp/nat.yaml"
here 0 0 "$tmp/nat.yaml"
t_check nat-both-families eval '[ "$(count)" = 2 ] && grep -q "nat.yaml:4:5: warning: $V6: what this masquerade translates never passes" "$tmp/out"'

printf 'version: 1\ninterfaces: { lan: [lan0] }\nhooks: { input: { default: drop } }\nrules:\n  - { name: proxy, hook: input, service: [tcp/3128], action: accept }\nnat:\n  - redirect: { in: lan, service: tcp/80, to: 3128 }\n' >"$tmp/redirect.yaml"
here 0 0 "$tmp/redirect.yaml"
t_check redirect-is-local eval '[ "$(count)" = 0 ] && grep -q "valid" "$tmp/out"'

printf 'version: 1\nhooks: { forward: { default: drop } }\nrules:\n  - { name: nothing, action: drop }\n' >"$tmp/drops.yaml"
here 0 0 "$tmp/drops.yaml"
t_check forwards-nothing-quiet [ "$(count)" = 0 ]
here 0 0 config/host/policy.yaml --strict
t_check shipped-host-policy-quiet eval '[ $rc = 0 ] && [ "$(count)" = 0 ]'
t_done
