#!/bin/bash
# Early drop at XDP (early: true): a deny-list whose sources are dropped on
# wan0 before the stack, from a static set and from a dynamic set, IPv4
# and IPv6, to the appliance (input) and through it (forward). Checked:
# the frames are dropped by XDP (the veth's XDP drop counter grows, the
# stack never sees them), counted under the rule's name on the hook each
# would have taken, logged as the hook's rules are; other sources pass; a
# `nfbox set add` is dropped at XDP at once; the program survives SIGKILL
# (it keeps dropping) and is adopted; a reload that removes `early` takes
# it off; a stop removes it. Runs with either backend (NFBOX_BACKEND): with
# nftables, "XDP" reads the ingress chain early_wan0 of table inet nfbox.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
BAD4=203.0.113.66 BAD6=2001:db8:2::66 BAN4=203.0.113.130 OK4=203.0.113.200

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
for a in $BAD4/24 $BAN4/24 $OK4/24; do ip -n "$NS_S" addr add $a dev s0; done
ip -n "$NS_S" addr add $BAD6/64 dev s0 nodad
cat >"$NS_TMP/policy.yaml" <<YAML
version: 1
interfaces:
  wan: [wan0]
sets:
  bad: [203.0.113.64/28, $BAD6]
  one: [$BAD4]
  banned: { dynamic: true }
hooks:
  forward: { default: accept }
  input: { default: accept }
rules:
  - name: drop-bad
    hook: [input, forward]
    in: wan
    from: bad
    action: drop
    log: true
    early: true
  - name: drop-banned
    hook: [input, forward]
    in: wan
    from: banned
    action: drop
    early: true
  # shadowed by drop-bad: its longer prefix must not take drop-bad's frames
  - name: drop-one
    hook: [input, forward]
    in: wan
    from: one
    action: drop
    early: true
YAML
sed 's/^    early: true$//' "$NS_TMP/policy.yaml" >"$NS_TMP/late.yaml"
nfbox_start "$NS_TMP/policy.yaml" --log "$NS_TMP/events.log" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }

# xdp_drops: frames dropped early on wan0: by XDP (the veth's own counter),
# or with the nftables backend by its ingress chain (its rules' anonymous
# counters)
if bpf_backend; then
	xdp_drops() { in_a ethtool -S wan0 2>/dev/null | awk '/xdp_drops/ {n += $2} END {print n + 0}'; }
	xdp_on_wan() { in_a ip link show wan0 | grep -q ' xdp'; }
else
	xdp_drops() {
		in_a nft list chain inet nfbox early_wan0 2>/dev/null |
			awk '{for (i = 1; i < NF; i++) if ($i == "counter" && $(i + 1) == "packets") n += $(i + 2)} END {print n + 0}'
	}
	xdp_on_wan() { in_a nft list chain inet nfbox early_wan0 >/dev/null 2>&1; }
fi
# blast SRC DST PORT N: N datagrams from the server side
blast() { in_s "$NET" udp-blast "$2" "$3" "$4" "$1" >/dev/null 2>&1; }
# got PORT SECONDS in NSFUNC: datagrams a listener counted
COUNT_PID=
count_at() { # NSFUNC PORT SECONDS -> "got N" into $NS_TMP/count.$2
	$1 timeout 6 "$NET" udp-count "$3" "$2" >"$NS_TMP/count.$2" 2>&1 &
	COUNT_PID=$!
}
got() { awk '/^got/ {print $3}' "$NS_TMP/count.$1"; }
no_xdp_on_wan() { ! xdp_on_wan; }

t_check xdp-attached xdp_on_wan
bpf_backend && t_check status-shows-early sh -c "'$NFBOX' status --socket '$NFBOX_SOCK' | grep -q 'early drop at XDP on: wan0'"

# A banned source to the client (forward) and to the appliance (input).
d0=$(xdp_drops)
count_at in_c 7000 2
wait_until 5 grep -q listening "$NS_TMP/count.7000"
blast $BAD4 $C4 7000 50
blast $OK4 $C4 7000 10
wait $COUNT_PID
t_check static-forward-dropped [ "$(got 7000)" = 10 ]
t_check dropped-at-xdp [ "$(xdp_drops)" -ge $((d0 + 50)) ]
t_check counted-forward [ "$(nfbox_count forward drop-bad)" -ge 50 ]
t_check first-match-not-longest [ "$(nfbox_count forward drop-one)" = 0 ]
count_at in_a 7001 2
wait_until 5 grep -q listening "$NS_TMP/count.7001"
blast $BAD4 $A4W 7001 20
blast $OK4 $A4W 7001 5
wait $COUNT_PID
t_check static-input-dropped [ "$(got 7001)" = 5 ]
t_check counted-input [ "$(nfbox_count input drop-bad)" -ge 20 ]
t_check logged-under-rule wait_until 3 grep -q '"rule":"drop-bad"' "$NS_TMP/events.log"
# The gateway's address known first, asked from S6: a neighbour
# solicitation from BAD6 would be dropped too (as the input hook would).
in_s ping -6 -c1 -W2 -I $S6 $A6W >/dev/null 2>&1
d1=$(xdp_drops)
blast $BAD6 $C6 7002 30
drops_ge() { [ "$(xdp_drops)" -ge "$1" ]; }
t_check static-v6-dropped-at-xdp wait_until 2 drops_ge $((d1 + 30))

# A dynamic set: enforced at XDP as soon as it is added.
d2=$(xdp_drops)
blast $BAN4 $C4 7003 20
t_check not-banned-yet-passes [ "$(xdp_drops)" -lt $((d2 + 20)) ]
nfbox_ctl set add banned $BAN4 >/dev/null
d3=$(xdp_drops)
blast $BAN4 $C4 7003 40
t_check dynamic-dropped-at-xdp [ "$(xdp_drops)" -ge $((d3 + 40)) ]
t_check dynamic-counted [ "$(nfbox_count forward drop-banned)" -ge 40 ]

# SIGKILL: the program stays and drops; the next daemon adopts it.
kill -9 "$NFBOX_PID"
wait "$NFBOX_PID" 2>/dev/null
NFBOX_PID=
d4=$(xdp_drops)
blast $BAD4 $C4 7004 30
t_check drops-while-dead [ "$(xdp_drops)" -ge $((d4 + 30)) ]
nfbox_start "$NS_TMP/policy.yaml" || t_fail restart "$(cat "$NS_TMP/nfbox.err")"
bpf_backend && t_check adopted grep -q 'adopted the XDP early drop' "$NS_TMP/nfbox.err"
d5=$(xdp_drops)
blast $BAN4 $C4 7005 30
t_check adopted-drops-banned [ "$(xdp_drops)" -ge $((d5 + 30)) ]

# A reload without early: the program goes; the hook still drops.
nfbox_ctl reload --policy "$NS_TMP/late.yaml" >/dev/null
t_check reload-detaches no_xdp_on_wan
count_at in_c 7006 2
wait_until 5 grep -q listening "$NS_TMP/count.7006"
blast $BAD4 $C4 7006 20
blast $OK4 $C4 7006 5
wait $COUNT_PID
t_check hook-still-drops [ "$(got 7006)" = 5 ]
nfbox_ctl reload --policy "$NS_TMP/policy.yaml" >/dev/null
t_check reload-attaches xdp_on_wan
nfbox_stop
t_check stop-detaches no_xdp_on_wan
t_done
