#!/bin/bash
# Upgrades keep enforcing, with this build alone (tests/distro/test_upgrade.sh
# installs packages of older commits over each other under `make
# check-long`). Under traffic (a banned source's datagrams every
# millisecond, counted where they would arrive: none may), with a dynamic-set
# ban that the XDP early drop enforces too, each daemon stops as an
# upgrade's restart stops it (nfbox stop --keep) and the next starts over
# what it left:
#   - another build's programs: a daemon of the test build with the
#     classifier's planted mapped-passes (its IPv4-mapped sources pass)
#     stands for an older build; this build adopts the state and runs its
#     own programs in place of the old (the mapped source is dropped), on
#     the same maps: the ban, the counters and a last hit go on; the maps
#     of this build that the old state lacks (nfb_sched_conns,
#     nfb_sched_full) are made;
#   - an older layout (the pinned control map's version rewritten to 12):
#     set aside, still enforcing, while a fresh classifier is loaded
#     beside it; a policy file that does not load fails the start (78) and
#     leaves it enforcing; the next start removes it once its classifier
#     enforces; the ban comes back from the state file, the counters start
#     from 0, the last hit is kept, the new program runs;
#   - a newer layout (99, a downgrade): the start is refused, saying so,
#     and the state goes on enforcing, untouched;
#   - nfbox run --fresh, and a state that cannot be read (no layout
#     version): replaced as an older layout is.
# Planted bugs (NFBOX_TEST_PLANT): adopt-keeps-program (an adoption that
# keeps the old programs) fails programs-replaced and mapped-dropped;
# replace-detaches-first (the state set aside detached before the new
# classifier is attached) fails the no-gap cases.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
. tests/lib/upgrade.sh
NET=$PWD/tests/lib/net.py

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
trap 'up_traffic_stop; ns_cleanup' EXIT
up_nfbox() { nfbox_ctl "$@"; }
UP_TMP=$NS_TMP
up_policy >"$NS_TMP/policy.yaml"

# The daemon standing for another build: the test build with the
# classifier's mapped-passes (and any bug the run plants).
plants=${NFBOX_TEST_PLANT:-}
old_start() { NFBOX_TEST_PLANT=mapped-passes${plants:+,$plants} nfbox_start "$@"; }
new_start() { NFBOX_TEST_PLANT=$plants nfbox_start "$@" || t_fail start "$(cat "$NS_TMP/nfbox.err")"; }
# As an upgrade's restart stops it: the policy stays for the next.
keep_stop() { nfbox_ctl stop --keep >/dev/null 2>&1; wait "$NFBOX_PID" 2>/dev/null; NFBOX_PID=; }
malformed() { nfbox_ctl stats --json | jq -r .drops.malformed; }
# The pinned control map's layout version rewritten (the rest kept).
# This build's layout version (NFB_ABI_VERSION), as the messages name it.
ABI=$(sed -n 's/^#define NFB_ABI_VERSION \([0-9]*\)$/\1/p' appliance/backend/bpf/engine/engine_int.h)
set_abi() {
	local m=$NFBOX_PINS/maps/nfb_ctl v
	v=$(bpftool -j map lookup pinned "$m" key 0 0 0 0 | /usr/bin/python3 -c '
import json, struct, sys
v = bytes(int(x, 16) for x in json.load(sys.stdin)["value"])
v = v[:4] + struct.pack("<I", int(sys.argv[1])) + v[8:]
print(" ".join(str(b) for b in v))' "$1") && bpftool map update pinned "$m" key 0 0 0 0 value $v
}
# restart_under_traffic NAME COMMAND...: COMMAND (the restart) under the
# traffic, which must have had no gap.
restart_under_traffic() {
	local name=$1
	shift
	up_traffic_start
	sleep 1
	"$@"
	sleep 1
	up_no_gap "$name"
}
restart_new() { keep_stop; new_start "$NS_TMP/policy.yaml"; }

# --- another build's programs, the same layout ---------------------------------
old_start "$NS_TMP/policy.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
up_ban || t_fail ban "nfbox set add failed"
in_c "$NET" udp-say $S6 7009 once >/dev/null
wait_until 5 test "$(up_rule once packets)" = 1 || t_fail once "the rule 'once' counted $(up_rule once packets)"
once_hit=$(up_rule once last_hit)
in_c "$NET" udp-blast $S4 7001 50 >/dev/null
wait_until 5 test "$(up_rule banned packets)" -ge 50 || t_fail ban-enforced "the banned rule counted $(up_rule banned packets) of 50"
if [ "$(up_mapped 43001)" = arrived ]; then
	t_ok mapped-passes-before # the control: the old program lets it through
else
	t_fail mapped-passes-before "the planted old classifier dropped the mapped source: the case below cannot tell"
fi
banned_before=$(up_rule banned packets)
# The old state also lacks nfb_sched_conns and nfb_sched_full (the first
# builds of layout 14 had no such maps): the adopting daemon makes them.
restart_unscheduled() {
	keep_stop
	rm -f "$NFBOX_PINS/maps/nfb_sched_conns" "$NFBOX_PINS/maps/nfb_sched_full"
	new_start "$NS_TMP/policy.yaml"
}
restart_under_traffic program-swap-no-gap restart_unscheduled
t_check sched-conns-made test -e "$NFBOX_PINS/maps/nfb_sched_conns"
t_check sched-full-made test -e "$NFBOX_PINS/maps/nfb_sched_full"
if [ "$(up_status adopted)" = true ] && [ "$(up_status programs_replaced)" = true ]; then
	t_ok programs-replaced
else
	t_fail programs-replaced "adopted $(up_status adopted), programs_replaced $(up_status programs_replaced): $(grep -i 'build' "$NS_TMP/nfbox.err")"
fi
m0=$(malformed)
if [ "$(up_mapped 43002)" = dropped ] && [ "$(malformed)" -gt "$m0" ]; then
	t_ok mapped-dropped-after # this build's program runs
else
	t_fail mapped-dropped-after "the mapped source still passes: the adopted old program runs ($(malformed) malformed, $m0 before)"
fi
t_check ban-kept up_listed
banned_after=$(up_rule banned packets)
if [ "$banned_after" -gt "$banned_before" ] && [ "$banned_before" -gt 0 ]; then
	t_ok counters-kept
else
	t_fail counters-kept "the banned rule counted $banned_before before, $banned_after after"
fi
if [ "$(up_rule once packets)" = 1 ] && [ "$(up_rule once last_hit)" = "$once_hit" ]; then
	t_ok last-hit-kept
else
	t_fail last-hit-kept "once: $(up_rule once packets) packets, last hit $(up_rule once last_hit), was 1 at $once_hit"
fi
t_check early-xdp-follows test "$(up_status early_xdp)" = lan0

# --- an older layout -------------------------------------------------------------
# First with a policy file that does not load: the start fails (exit 78)
# and the state set aside goes on enforcing; the next start replaces it.
older_bad() {
	keep_stop
	set_abi 12
	printf 'version: 1\nrules:\n  - { name: x, sevice: [tcp/1], action: accept }\n' >"$NS_TMP/bad.yaml"
	ip netns exec "$NS_A" "$NFBOX" run --policy "$NS_TMP/bad.yaml" --state-dir "$NS_TMP/state" --socket "$NFBOX_SOCK" \
		--pin-dir "$NFBOX_PINS" >"$NS_TMP/nfbox.out" 2>"$NS_TMP/nfbox.err"
	echo $? >"$NS_TMP/bad.rc"
}
restart_under_traffic older-layout-bad-policy-no-gap older_bad
if [ "$(cat "$NS_TMP/bad.rc")" = 78 ] && [ -e "$NFBOX_PINS/old-abi12/prog" ] && [ ! -e "$NFBOX_PINS/prog" ] &&
	grep -q "is of layout 12, older than this nfbox's $ABI: set aside in $NFBOX_PINS/old-abi12" "$NS_TMP/nfbox.err"; then
	t_ok older-layout-bad-policy-keeps-it
else
	t_fail older-layout-bad-policy-keeps-it "exit $(cat "$NS_TMP/bad.rc"): $(ls -R "$NFBOX_PINS" | head -n 5 | tr '\n' ' ')"
fi
restart_under_traffic older-layout-no-gap new_start "$NS_TMP/policy.yaml"
replaced=$(up_status replaced)
if [ "$replaced" = "was set aside by a start before this one" ] && [ "$(up_status adopted)" = false ] &&
	[ "$(up_status set_aside)" = 0 ] && ! ls -d "$NFBOX_PINS"/old-* >/dev/null 2>&1; then
	t_ok older-layout-replaced
else
	t_fail older-layout-replaced "replaced '$replaced', set aside $(up_status set_aside): $(ls "$NFBOX_PINS")"
fi
t_check older-layout-logged grep -q "the state set aside in $NFBOX_PINS/old-abi12 is removed" "$NS_TMP/nfbox.err"
t_check older-layout-ban-kept up_listed
banned_before=$(up_rule banned packets)
in_c "$NET" udp-blast $S4 7001 50 >/dev/null
wait_until 5 test "$(up_rule banned packets)" -ge $((banned_before + 50)) ||
	t_fail older-layout-ban-enforced "the banned rule counted $(up_rule banned packets) after 50 more than $banned_before"
# documented: the counters are not carried over (they start from 0), the last hit is
if [ "$(up_rule once packets)" = 0 ] && [ "$(up_rule once last_hit)" = "$once_hit" ]; then
	t_ok older-layout-counters-restart-last-hit-kept
else
	t_fail older-layout-counters-restart-last-hit-kept "once: $(up_rule once packets) packets, last hit $(up_rule once last_hit), was 1 at $once_hit"
fi
t_check older-layout-early-xdp test "$(up_status early_xdp)" = lan0
if [ "$(up_mapped 43003)" = dropped ]; then t_ok older-layout-mapped-dropped; else t_fail older-layout-mapped-dropped "arrived"; fi

# --- a newer layout: refused, left enforcing -------------------------------------
newer() {
	keep_stop
	set_abi 99
	: >"$NS_TMP/nfbox.out"
	ip netns exec "$NS_A" "$NFBOX" run --policy "$NS_TMP/policy.yaml" --state-dir "$NS_TMP/state" --socket "$NFBOX_SOCK" \
		--pin-dir "$NFBOX_PINS" >"$NS_TMP/nfbox.out" 2>"$NS_TMP/nfbox.err"
	echo $? >"$NS_TMP/newer.rc"
}
restart_under_traffic newer-layout-keeps-enforcing newer
if [ "$(cat "$NS_TMP/newer.rc")" != 0 ] &&
	grep -q "is of layout 99, newer than this nfbox's ($ABI): a newer nfbox made it (a downgrade?).* It stays enforcing, untouched" "$NS_TMP/nfbox.err" &&
	[ -e "$NFBOX_PINS/prog" ] && ! ls -d "$NFBOX_PINS"/old-* >/dev/null 2>&1; then
	t_ok newer-layout-refused
else
	t_fail newer-layout-refused "exit $(cat "$NS_TMP/newer.rc"): $(tail -n 2 "$NS_TMP/nfbox.err")"
fi

# --- --fresh: replaced without a gap ---------------------------------------------
restart_under_traffic fresh-no-gap new_start "$NS_TMP/policy.yaml" --fresh
if [ "$(up_status replaced)" = "is replaced (--fresh)" ] && [ "$(up_status set_aside)" = 0 ] &&
	! ls -d "$NFBOX_PINS"/old-* >/dev/null 2>&1; then
	t_ok fresh-replaced
else
	t_fail fresh-replaced "replaced '$(up_status replaced)': $(ls "$NFBOX_PINS")"
fi
t_check fresh-ban-kept up_listed

# --- a state that cannot be read (no layout version): replaced ------------------
unreadable() { keep_stop; set_abi 0 && new_start "$NS_TMP/policy.yaml"; }
restart_under_traffic unreadable-no-gap unreadable
if [ "$(up_status replaced)" = "has no layout version" ] && [ "$(up_status set_aside)" = 0 ] &&
	! ls -d "$NFBOX_PINS"/old-* >/dev/null 2>&1 && grep -q "set aside in $NFBOX_PINS/old-unknown" "$NS_TMP/nfbox.err"; then
	t_ok unreadable-replaced
else
	t_fail unreadable-replaced "replaced '$(up_status replaced)': $(ls "$NFBOX_PINS")"
fi
t_done
