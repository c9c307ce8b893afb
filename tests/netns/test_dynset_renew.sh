#!/bin/bash
# Dynamic sets: the kernel holds what the daemon's store holds, checked with
# the kernel's own tools (bpftool, nft: tests/lib/kset.py) and with traffic,
# not only with `nfbox set list`; on either backend (NFBOX_BACKEND).
# - Renewals that land at the moment an entry expires, from every source
#   that fills a set: `nfbox set add` (what fail2ban and CrowdSec call)
#   just before, just after and a second after the store's expiry (the
#   nftables backend keeps an element a second past it: a renewal there was
#   lost); a Suricata alert (eve.json) and a limit's overload: again at the
#   expiry of the ban they made; host names with `grace: 0` (each answer
#   renews the address before it expires: it never leaves the kernel);
#   a country database replaced (the kernel's set is the store's).
# - The daemon's own check of the kernel against the store: nothing to
#   repair while all went well; with the BPF backend, an entry taken out of
#   the tries and one put in by hand (bpftool) are repaired within the
#   check's interval (table inet nfbox is the daemon's own: nothing else
#   can change it); repairs are counted in status, stats and the metrics,
#   and logged.
# - Positive control: a build whose changes skip the kernel (renewals,
#   adds, deletes: NFBOX_TEST_PLANT=dyn-skips-kernel) is caught by the
#   kernel checks at once, and then repaired by the daemon's own check.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
X1=198.51.100.11 X2=198.51.100.12 X3=198.51.100.13 X4=198.51.100.14 X5=198.51.100.15 GEO=198.51.100.70

command -v dnsmasq >/dev/null || { t_fail dnsmasq "dnsmasq is missing (packaging/install-deps.sh installs dnsmasq-base)"; t_done; }
ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
for a in $X1 $X2 $X3 $X4 $X5 $GEO; do in_c ip addr add $a/24 dev c0; done
HOSTS=$NS_TMP/dns-hosts
printf '%s srv.example.test\n' $S4 >"$HOSTS"
in_s dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --addn-hosts="$HOSTS" \
	--local-ttl=2 --listen-address=$S4 --bind-interfaces --user=root --group=root \
	--pid-file="$NS_TMP/dnsmasq.pid" --log-facility="$NS_TMP/dnsmasq.log" &
t_check dnsmasq-up wait_until 5 sh -c "ip netns exec '$NS_S' ss -lun | grep -q '$S4:53 '"
ns_etc "$NS_A" resolv.conf "nameserver $S4"
DB=$NS_TMP/country.mmdb
mmdb() { /usr/bin/python3 tests/lib/mmdbwrite.py "$DB" "$@"; }
mmdb 198.51.100.64/26=DE 2001:db8:1::/48=FR
EVE=$NS_TMP/eve.json
: >"$EVE"
cat >"$NS_TMP/p.yaml" <<YAML
version: 1
interfaces: { lan: [lan0] }
sets:
  banned: { dynamic: true }
  over: { dynamic: true }
  ids: { eve: $EVE, severity: 2, timeout: 3s }
  svc: { hosts: [srv.example.test], min-ttl: 1s, grace: 0 }
  geo: { country: [de], database: $DB }
hooks:
  forward: { default: drop }
rules:
  - { name: drop-banned, from: banned, action: drop }
  - { name: drop-ids, from: ids, action: drop }
  - { name: drop-geo, from: geo, action: drop }
  - { name: drop-over, from: over, service: udp/7001, action: drop }
  - { name: flood, in: lan, service: udp/7002, limit: { rate: 1/second, burst: 2, per: source, overload: over, timeout: 3s }, action: accept }
  - { name: to-svc, to: svc, service: udp/7003, action: accept }
  - { name: open, service: udp/7001, action: accept }
YAML
nfbox_start "$NS_TMP/p.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }

# expires SET ADDRESS: when the store lets it go (s since the epoch), or 0
expires() {
	nfbox_ctl set list "$1" --json |
		jq -r --arg a "$2" 'first((.elements[] | select((.prefix | split("/")[0]) == $a) | .expires // 0), 0)'
}
at() { sleep "$(awk "BEGIN { d = $1 - $EPOCHREALTIME; printf \"%.6f\", (d > 0 ? d : 0) }")"; } # EPOCH: sleep until then
left_more() { fholds "$(expires "$1" "$2") > ${4:-$EPOCHREALTIME} + $3"; } # SET ADDRESS S [FROM: now]
# renewed NAME SET ADDRESS MIN-LEFT SINCE: after a renewal made at SINCE
# (s since the epoch), the kernel holds the address for MIN-LEFT s more
# from then, and its traffic is dropped (counted from the renewal, not
# from the check: a check made late on a loaded machine finds less left,
# though the renewal reached the kernel; an old timeout kept is still seen)
renewed() {
	local held min
	held=$(kernel_set "$2") # read first: the time left is the kernel's then
	min=$(awk "BEGIN { printf \"%.3f\", $4 - ($EPOCHREALTIME - $5) }")
	if held_for "$3/32" "$min" <<<"$held"; then
		t_ok "$1-kernel"
	else
		t_fail "$1-kernel" "want $min s left: $(tr '\n' ' ' <<<"$held")"
	fi
	t_check "$1-dropped" [ "$(probe_from "$3" $S4 7001)" = drop ]
}

listed() { nfbox_ctl set list "$1" | grep -q "^$2[[:space:]]"; } # SET ADDRESS
unlisted() { ! listed "$@"; }
# gone SET ADDRESS: wait until the store has let it go (asking wakes the
# daemon, whose round expires entries), then return at once: the nftables
# backend's element lives a second longer
gone() { wait_until 5 unlisted "$1" "$2"; }

# ---- nfbox set add (fail2ban, CrowdSec): before, at and after the expiry ----
for when in before at after; do
	nfbox_ctl set add banned $X1 --timeout 2 >/dev/null
	case $when in
	before) at "$(expires banned $X1) - 0.3" ;;
	at) gone banned $X1 ;;
	after) at "$(expires banned $X1) + 1.5" ;;
	esac
	t=$EPOCHREALTIME
	nfbox_ctl set add banned $X1 --timeout 4 >/dev/null
	renewed "set-add-renew-$when-expiry" banned $X1 3 "$t"
	nfbox_ctl set del banned $X1 >/dev/null
done

# ---- Suricata and a limit's overload: the source banned again as its ban expires ----
# ban_renewed NAME SET ADDRESS BAN-COMMAND...: banned, let go by the store,
# banned again at once: the kernel holds it with the new timeout
ban_renewed() {
	local name=$1 set=$2 a=$3
	shift 3
	"$@" "$a"
	t_check "$name-banned" wait_until 3 listed "$set" "$a"
	gone "$set" "$a"
	t=$EPOCHREALTIME
	"$@" "$a"
	t_check "$name-renewed" wait_until 2 left_more "$set" "$a" 2 "$t"
	renewed "$name-renew-at-expiry" "$set" "$a" 1.5 "$t"
}
alert() { printf '{"event_type":"alert","src_ip":"%s","dest_ip":"%s","alert":{"severity":1,"signature_id":1000001,"signature":"NFBOX-TEST renew"}}\n' "$1" $S4 >>"$EVE"; }
flood() { in_c "$NET" udp-blast $S4 7002 10 "$1" >/dev/null 2>&1; }
ban_renewed ids ids $X2 alert
ban_renewed over over $X3 flood

# ---- host names, TTL 2 s, grace 0: the address never leaves the kernel ----
gaps=0 missing=0
for i in $(seq 24); do
	listed svc $S4 || gaps=$((gaps + 1))
	kernel_holds svc $S4/32 || missing=$((missing + 1))
	sleep 0.25
done
t_check hosts-no-gap-in-store [ $gaps -eq 0 ]
t_check hosts-never-out-of-kernel [ $missing -eq 0 ]
t_check hosts-passes [ "$(probe_from $C4 $S4 7003)" = pass ]

# ---- a country database replaced: the kernel's set is the store's ----
t_check geo-dropped [ "$(probe_from $GEO $S4 7001)" = drop ]
mmdb 198.51.100.0/30=DE 198.51.100.64/26=FR 2001:db8:1::/48=DE
t_check geo-reloaded wait_until 3 listed geo 2001:db8:1::/48
store_geo() { nfbox_ctl set list geo | grep -v '^set ' | cut -f1 | sort; }
kernel_geo() { kernel_set geo | cut -d' ' -f1 | sort; }
t_check geo-kernel-is-store [ "$(kernel_geo)" = "$(store_geo)" ]
t_check geo-old-passes [ "$(probe_from $GEO $S4 7001)" = pass ]
t_check geo-new-dropped [ "$(probe_from $C4 $S4 7001)" = drop ]

# ---- the daemon's own check of the kernel against the store ----
repaired() { nfbox_ctl status --json | jq -r '.dynamic_sets_check.repaired'; }
not_held() { ! kernel_holds "$@"; }
# nothing to repair while the backend did all it was asked
r0=$(repaired)
if [ "$r0" -eq 0 ]; then t_ok no-repair-while-healthy; else
	t_fail no-repair-while-healthy "$r0 repairs: $(grep 'dynamic sets: set' "$NS_TMP/nfbox.err" | head -5)"
fi
nfbox_ctl set add banned $X1 --timeout 60 >/dev/null
nfbox_ctl set add banned $X5 >/dev/null
t_check added-in-kernel kernel_holds banned $X5/32
# The classifier's tries can be changed by hand (table inet nfbox cannot:
# the daemon owns it): an entry taken out and one put in are repaired.
# (The waits for a repair, up to the check's 10 s, ask the kernel every
# 0.25 s: each kernel_holds is a python and three bpftools.)
if bpf_backend; then
	nfbox_ctl set add banned $X4 >/dev/null
	/usr/bin/python3 tests/lib/kset.py bpf-del "$NFBOX_PINS" banned $X4/32
	/usr/bin/python3 tests/lib/kset.py bpf-add "$NFBOX_PINS" banned $X3/32
	t_check by-hand-missing-repaired wait_every 0.25 12 kernel_holds banned $X4/32
	t_check by-hand-extra-repaired wait_until 2 not_held banned $X3/32
	t_check by-hand-missing-dropped [ "$(probe_from $X4 $S4 7001)" = drop ]
	t_check by-hand-extra-passes [ "$(probe_from $X3 $S4 7001)" = pass ]
	t_check by-hand-logged grep -q "set banned: $X4: the kernel lacked it .*: put again" "$NS_TMP/nfbox.err"
	nfbox_ctl set del banned $X4 >/dev/null
fi

# ---- positive control: changes that skip the kernel ----
# A build whose changes (adds, renewals, deletes) do not reach the kernel:
# the checks above see it at once, and the daemon's own check repairs it.
nfbox_stop
NFBOX_TEST_PLANT=dyn-skips-kernel nfbox_start "$NS_TMP/p.yaml" || { t_fail restart "$(cat "$NS_TMP/nfbox.err")"; t_done; }
r0=$(repaired)
nfbox_ctl set add banned $X1 --timeout 600 >/dev/null # a renewal
nfbox_ctl set add banned $X2 >/dev/null                 # an add
nfbox_ctl set del banned $X5 >/dev/null                 # a delete
t_check plant-renewal-seen not_held banned $X1/32 300
t_check plant-add-seen not_held banned $X2/32
t_check plant-delete-seen kernel_holds banned $X5/32
t_check plant-renewal-repaired wait_every 0.25 12 kernel_holds banned $X1/32 300
t_check plant-add-repaired wait_until 2 kernel_holds banned $X2/32
t_check plant-delete-repaired wait_until 2 not_held banned $X5/32
t_check plant-traffic-now-right [ "$(probe_from $X2 $S4 7001)/$(probe_from $X5 $S4 7001)" = drop/pass ]
t_check repairs-counted [ "$(repaired)" -ge $((r0 + 3)) ]
t_check repairs-in-status grep -q "the kernel checked against them .* entries repaired (last: set [a-z-]*: " <(nfbox_ctl status)
t_check repairs-in-stats json_true '.drops.dynset_repaired >= 3' < <(nfbox_ctl stats --json)
t_check repairs-in-metrics awk '/^nfbox_drops_total\{reason="dynset_repaired"\} / { f = $2 >= 3 } END { exit !f }' <(nfbox_ctl metrics)
t_check repair-missing-logged grep -q "set banned: $X2: the kernel lacked it .*: put again" "$NS_TMP/nfbox.err"
t_check repair-expiry-logged grep -q "set banned: $X1: the kernel held it with another expiry .*: put again" "$NS_TMP/nfbox.err"
t_check repair-extra-logged grep -q "set banned: $X5: the kernel held it, the store does not .*: deleted" "$NS_TMP/nfbox.err"
nfbox_stop
kill "$(cat "$NS_TMP/dnsmasq.pid")" 2>/dev/null
t_done
