#!/bin/bash
# Addresses that are never banned, on either backend (NFBOX_BACKEND):
# - Suricata alerts (eve.json) whose source is unspecified (0.0.0.0, ::),
#   loopback, the limited broadcast, multicast, IPv4-mapped, one of the
#   appliance's own addresses, or in the policy's never-ban (of the set, or
#   options' for every set) ban nobody: neither `nfbox set list` nor the
#   kernel (bpftool / nft) holds them; each refusal is counted (status,
#   stats, metrics) and logged; an alert for an ordinary source bans it;
# - a limit's overload of a source in never-ban bans nobody, another
#   source is banned;
# - `nfbox set add` of such an address is refused, with the reason and the
#   fix, a whole --file with one among others too; --force bans it;
# - such entries put there by an automatic source before (a saved state of
#   an older nfbox) are deleted at the next start, --fresh or not, while
#   what an operator forced stays.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
TRUSTED=198.51.100.50 NEVER=198.51.100.51 C4B=198.51.100.3

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
for a in $TRUSTED $NEVER $C4B; do in_c ip addr add $a/24 dev c0; done
EVE=$NS_TMP/eve.json
: >"$EVE"
cat >"$NS_TMP/p.yaml" <<YAML
version: 1
interfaces: { lan: [lan0] }
sets:
  trusted: [$TRUSTED]
  ids: { eve: $EVE, severity: 2, timeout: 1h, never-ban: [trusted, "2001:db8:1::50"] }
  over: { dynamic: true }
  banned: { dynamic: true }
hooks:
  forward: { default: accept }
options: { never-ban: [$NEVER] }
rules:
  - { name: drop-ids, from: ids, action: drop }
  - { name: drop-over, from: over, action: drop }
  - { name: drop-banned, from: banned, action: drop }
  - { name: flood, in: lan, service: udp/7002, limit: { rate: 1/second, burst: 2, per: source, overload: over, timeout: 1h }, action: accept }
YAML
nfbox_start "$NS_TMP/p.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
listed() { nfbox_ctl set list "$1" | grep -q "^$2[[:space:]]"; } # SET ADDRESS
count() { # KEY of status --json's dynamic_sets_check
	nfbox_ctl status --json | jq -r --arg k "$1" '.dynamic_sets_check[$k]'
}

# ---- Suricata: forged sources ----
NEVERS="0.0.0.0 :: 255.255.255.255 127.0.0.1 ::1 224.0.0.1 ff02::1 ::ffff:192.0.2.9 $A4L $A4W $A6W $TRUSTED 2001:db8:1::50 $NEVER"
alert() { printf '{"event_type":"alert","src_ip":"%s","dest_ip":"%s","alert":{"severity":1,"signature_id":1000001,"signature":"NFBOX-TEST forged"}}\n' "$1" $S4 >>"$EVE"; }
for a in $NEVERS $C4; do alert "$a"; done
t_check ordinary-source-banned wait_until 3 listed ids $C4
t_check ordinary-source-dropped [ "$(probe_from $C4 $S4 7001)" = drop ]
held=
for a in $NEVERS; do
	listed ids "$a" && held="$held $a"
done
if [ -z "$held" ]; then t_ok never-banned-in-store; else t_fail never-banned-in-store "set list holds:$held"; fi
kernel_set ids >"$NS_TMP/kernel"
t_check kernel-holds-only-the-ordinary [ "$(cut -d' ' -f1 "$NS_TMP/kernel")" = "$C4/32" ]
n=$(echo $NEVERS | wc -w)
t_check refusals-counted [ "$(count bans_refused)" = "$n" ]
t_check refusals-in-status grep -q "$n automatic bans refused" <(nfbox_ctl status)
t_check refusals-in-stats json_true ".drops.ban_refused == $n" < <(nfbox_ctl stats --json)
t_check refusals-in-metrics grep -qx "nfbox_drops_total{reason=\"ban_refused\"} $n" <(nfbox_ctl metrics)
t_check refusal-says-loopback grep -q "set ids: 127.0.0.1 not banned (asked by Suricata alert 1000001 (NFBOX-TEST forged)): it is loopback, which is never banned" "$NS_TMP/nfbox.err"
t_check refusal-says-own grep -q "set ids: $A4W not banned .*: it is this appliance's own address $A4W" "$NS_TMP/nfbox.err"
t_check refusal-says-set-list grep -q "set ids: $TRUSTED not banned .*: it is in the set's never-ban (\[trusted, " "$NS_TMP/nfbox.err"
t_check refusal-says-options grep -q "set ids: $NEVER not banned .*: it is in options.never-ban" "$NS_TMP/nfbox.err"
t_check trusted-passes [ "$(probe_from $TRUSTED $S4 7001)" = pass ]

# ---- a limit's overload ----
flood() { in_c "$NET" udp-blast $S4 7002 10 "$1" >/dev/null 2>&1; }
flood $C4B
t_check overload-bans wait_until 3 listed over $C4B
flood $NEVER
t_check overload-counted wait_until 3 sh -c "[ \"\$('$NFBOX' status --json --socket '$NFBOX_SOCK' | jq -r .dynamic_sets_check.bans_refused)\" -gt $n ]"
t_check overload-never-banned sh -c "! '$NFBOX' set list over --socket '$NFBOX_SOCK' | grep -q '^$NEVER'"
t_check overload-never-passes [ "$(probe_from $NEVER $S4 7001)" = pass ]

# ---- nfbox set add by hand ----
out=$(nfbox_ctl set add banned 127.0.0.1 2>&1)
t_check by-hand-refused [ $? -ne 0 ]
t_check by-hand-says grep -q "127.0.0.1 is loopback, which is never banned (add --force to ban it anyway)" <<<"$out"
printf '192.0.2.77\n%s\n' $NEVER >"$NS_TMP/list"
out=$(nfbox_ctl set add banned --file "$NS_TMP/list" 2>&1)
t_check file-refused-whole [ $? -ne 0 ]
t_check file-says-line grep -q "$NS_TMP/list:2: $NEVER is in options.never-ban" <<<"$out"
t_check file-nothing-added sh -c "! '$NFBOX' set list banned --socket '$NFBOX_SOCK' | grep -q 192.0.2.77"
out=$(nfbox_ctl set add banned $A4L --force 2>&1)
t_check forced-added listed banned $A4L
t_check forced-in-kernel kernel_holds banned $A4L/32

# ---- bans of such addresses from before: gone at the next start ----
nfbox_stop
STATE=$NS_TMP/state/dynsets
printf 'e ids 127.0.0.1 0 0 suricata:1000001:old\ne over %s 0 0 rule:flood\ne over 192.0.2.99 0 0 rule:flood\n' $NEVER >>"$STATE"
nfbox_start "$NS_TMP/p.yaml" --fresh || { t_fail restart "$(cat "$NS_TMP/nfbox.err")"; t_done; }
t_check purged-loopback sh -c "! '$NFBOX' set list ids --socket '$NFBOX_SOCK' | grep -q '^127.0.0.1'"
t_check purged-never sh -c "! '$NFBOX' set list over --socket '$NFBOX_SOCK' | grep -q '^$NEVER'"
t_check purge-said grep -q "set ids: 127.0.0.1, put there by Suricata alert 1000001 (old), is loopback, which is never banned: deleted" "$NS_TMP/nfbox.err"
t_check ordinary-kept listed over 192.0.2.99
t_check forced-kept listed banned $A4L
t_check ordinary-ban-kept listed ids $C4
nfbox_stop
t_done
