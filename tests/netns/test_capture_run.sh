#!/bin/bash
# Captures in `nfbox run` (the policy's capture: section), MTU 9000:
#
#  1. mirror-from wan0: nfbox makes the veth pair mon0/mon0-tx and clones
#     wan0's traffic into it; UDP datagrams the appliance forwards (up to
#     8,000 bytes, so 1-, 2- and 3-buffer frames) reach the server intact
#     AND are in the file, byte for byte; what the match leaves out (ping)
#     is forwarded and not captured; mon0 itself never transmits.
#  2. nfbox status / stats (text and JSON) show the captures, their XDP
#     mode and counters that agree with the file.
#  3. Reload: an unchanged capture keeps running (same file, counters go
#     on); a changed one restarts; one that cannot start is reported and
#     enforcement goes on; a removed one is stopped with its file complete
#     and its veth pair deleted.
#  4. An interface of the operator's named like a mirror capture interface
#     is refused, never deleted; after SIGKILL the next nfbox recreates its
#     own left-over pair; SIGTERM closes files completely and deletes pairs.
#  5. A full disk (a 512 KiB tmpfs): forwarding goes on, the loss is logged
#     and counted (written + drops = received), the file stays readable.
#  6. nfbox capture --mirror-from: the same mirror without a policy.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
PORT=9000

ns_setup 9000 || { t_fail setup "cannot build the namespaces"; t_done; }
trap 'umount "$NS_TMP/small" 2>/dev/null; ns_cleanup' EXIT
command -v tshark >/dev/null || { t_fail setup "tshark is not installed (packaging/install-deps.sh)"; t_done; }

policy() { # FILE CAPTURE-ENTRIES...
	local f=$1
	shift
	{
		cat <<YAML
version: 1
hooks:
  forward: { default: drop }
rules:
  - { name: udp, service: [udp/$PORT], action: accept }
  - { name: ping, proto: icmp, icmp-type: echo-request, action: accept }
YAML
		[ $# -gt 0 ] && echo "capture:"
		for c in "$@"; do printf '%s\n' "$c"; done
	} >"$f"
}
MIR="  - { name: wan, interface: mon0, mirror-from: wan0, match: { proto: udp }, file: $NS_TMP/wan.pcapng }"
MIR2="  - { name: wan, interface: mon0, mirror-from: wan0, match: { proto: udp, min-length: 1000 }, file: $NS_TMP/wan.pcapng }"
LAN="  - { name: lan, interface: mon1, mirror-from: lan0, match: { proto: icmp }, file: $NS_TMP/lan.pcapng }"
MISSING="  - { name: gone, interface: nosuch0, file: $NS_TMP/gone.pcapng }"
policy "$NS_TMP/p1.yaml" "$MIR"
policy "$NS_TMP/p2.yaml" "$MIR" "$LAN"
policy "$NS_TMP/p3.yaml" "$MIR2" "$LAN" "$MISSING"
policy "$NS_TMP/p4.yaml" "$LAN"

# The UDP payloads in FILE to PORT, one "LEN SHA256" per line (tshark).
payloads() {
	tshark -r "$1" -Y "udp.dstport == $PORT" -T fields -e data.data 2>"$NS_TMP/tshark.err" |
		/usr/bin/python3 -c '
import hashlib, sys
for line in sys.stdin:
    b = bytes.fromhex(line.strip())
    print(len(b), hashlib.sha256(b).hexdigest())'
}
# What net.py udp-send sends: "LEN SHA256" for each size.
expected() {
	/usr/bin/python3 -c '
import hashlib, sys
pat = bytes(range(256))
for s in sys.argv[1:]:
    b = (pat * (int(s) // 256 + 1))[:int(s)]
    print(len(b), hashlib.sha256(b).hexdigest())' "$@"
}
tshark_clean() { # FILE: reads whole, nothing on stderr
	tshark -r "$1" >/dev/null 2>"$NS_TMP/tshark.err" && ! grep -qiv 'running as user "root"' "$NS_TMP/tshark.err"
}
# stats_json, status_json FILTER: a jq filter on stats (status) --json, with
# $c the captures by name
stats_json() { nfbox_ctl stats --json | jq -r "(.captures | INDEX(.name)) as \$c | $1"; }
status_json() { nfbox_ctl status --json | jq -r "(.captures | INDEX(.name)) as \$c | $1"; }
# send SIZES...: each size once from the client to the server's PORT; sets RECV
send_udp() {
	ip netns exec "$NS_S" "$NET" udp-recv $PORT 10 $# >"$NS_TMP/recv" 2>&1 &
	local rp=$!
	wait_listen in_s $PORT || echo "    send_udp: the server's udp-recv never listened on udp/$PORT"
	for s in "$@"; do in_c "$NET" udp-send $S4 $PORT "$s" >/dev/null; done
	wait $rp
	RECV=$(grep -c ' intact' "$NS_TMP/recv")
}
# send_udp_n SIZE COUNT: as send_udp, COUNT datagrams of SIZE from one sender
# (100 senders, one a datagram, outlasted the receiver on a loaded machine)
send_udp_n() {
	ip netns exec "$NS_S" "$NET" udp-recv $PORT 10 "$2" >"$NS_TMP/recv" 2>&1 &
	local rp=$!
	wait_listen in_s $PORT || echo "    send_udp_n: the server's udp-recv never listened on udp/$PORT"
	in_c "$NET" udp-send $S4 $PORT "$1" "$2" >/dev/null
	wait $rp
	RECV=$(grep -c ' intact' "$NS_TMP/recv")
}
written_at_least() { [ "$(stats_json "\$c.$1.written")" -ge "$2" ]; } # NAME COUNT
wait_written() { wait_until 3 written_at_least "$@"; } # the writer flushes within ~200 ms
# link_gone IF: `ip link` answers in the appliance and IF is not among its links
link_gone() {
	local l
	l=$(in_a ip -o link show 2>&1) || { echo "ip link: $l" >&2; return 1; }
	! grep -q "^[0-9]*: $1[@:]" <<<"$l"
}

# ---- 1. mirror of forwarded traffic ----
: >"$NS_TMP/wan.pcapng" # an earlier file: kept as wan.pcapng.1, then shifted to .2
SIZES="1 100 1472 1473 3000 3812 3813 4000 7000 7653 7654 8000 8972"
NSIZES=$(echo $SIZES | wc -w)
if nfbox_start "$NS_TMP/p1.yaml"; then
	t_check "mirror-pair-created" in_a ip link show mon0-tx
	in_a ip -d link show mon0 | grep -q "addrgenmode none" && t_ok "mirror-pair-no-ipv6-address" ||
		t_fail "mirror-pair-no-ipv6-address" "$(in_a ip -d link show mon0)"
	in_c ping -c 2 -i 0.2 -W 1 $S4 >/dev/null 2>&1 && t_ok "ping-forwarded" || t_fail "ping-forwarded" "no reply through the appliance"
	send_udp $SIZES
	[ "$RECV" -eq "$NSIZES" ] && t_ok "forwarding-unchanged" || t_fail "forwarding-unchanged" "server got $RECV of $NSIZES datagrams intact"
	wait_written wan "$NSIZES"
	st=$(stats_json '"\($c.wan.written), \($c.wan.multibuf), \($c.wan.mirrored >= $c.wan.packets)"')
	echo "    stats: written, multibuf, mirrored>=packets: $st"
	[ "$(stats_json '$c.wan.written')" -eq "$NSIZES" ] && t_ok "written-count" || t_fail "written-count" "stats (3 s after): $st, want $NSIZES"
	[ "$(stats_json '$c.wan.multibuf > 0 and $c.wan.mirrored >= $c.wan.packets')" = true ] &&
		t_ok "stats-multibuf-mirrored" || t_fail "stats-multibuf-mirrored" "$st"
	[ "$(status_json '$c.wan | .running and (.xdp_mode == "native" or .xdp_mode == "skb") and .mirror_from == "wan0" and .mirror_peer == "mon0-tx" and .xdp_features > 0 and (.zerocopy | not)')" = true ] &&
		t_ok "status-json" || t_fail "status-json" "$(nfbox_ctl status --json)"
	nfbox_ctl status | grep -q "wan .*mon0 (mirror of wan0) -> $NS_TMP/wan.pcapng: 1 rx queue, native XDP" &&
		t_ok "status-text" || t_fail "status-text" "$(nfbox_ctl status | tail -3)"
	nfbox_ctl stats | grep -q "mirrored from wan0" && t_ok "stats-text" || t_fail "stats-text" "$(nfbox_ctl stats | tail -4)"
	tx=$(in_a cat /sys/class/net/mon0/statistics/tx_packets)
	[ "$tx" -eq 0 ] && t_ok "mirror-port-silent" || t_fail "mirror-port-silent" "mon0 sent $tx packets"
else
	t_fail "start-mirror" "$(tail -n 5 "$NS_TMP/nfbox.err")"
fi

# ---- 3. reloads ----
ino() { stat -c %i "$1" 2>/dev/null; }
ino1=$(ino "$NS_TMP/wan.pcapng")
out=$(nfbox_ctl reload --policy "$NS_TMP/p2.yaml" 2>&1)
echo "$out" | grep -q "captures: 2 running (1 kept, 1 started), 0 failed" && t_ok "reload-keeps-unchanged" ||
	t_fail "reload-keeps-unchanged" "$out"
[ "$(ino "$NS_TMP/wan.pcapng")" = "$ino1" ] && [ "$(stats_json '$c.wan.written')" -eq "$NSIZES" ] &&
	t_ok "kept-capture-same-file" || t_fail "kept-capture-same-file" "file or counters were reset"
in_c ping -c 3 -i 0.2 -W 1 -s 5000 $S4 >/dev/null 2>&1 && t_ok "ping-with-lan-mirror" || t_fail "ping-with-lan-mirror" "no reply"
wait_written lan 3 && t_ok "lan-mirror-captures" || t_fail "lan-mirror-captures" "$(stats_json '$c.lan')"

out=$(nfbox_ctl reload --policy "$NS_TMP/p3.yaml" 2>&1)
rc=$?
[ $rc -eq 0 ] && echo "$out" | grep -q "warning: capture gone on nosuch0 not started" &&
	echo "$out" | grep -q "captures: 2 running (1 kept, 1 started), 1 failed" && t_ok "reload-bad-capture-warns" ||
	t_fail "reload-bad-capture-warns" "rc $rc: $out"
# The restarted capture keeps the earlier file as wan.pcapng.1.
tshark_clean "$NS_TMP/wan.pcapng.1" && [ "$(tshark -r "$NS_TMP/wan.pcapng.1" 2>/dev/null | wc -l)" -eq "$NSIZES" ] &&
	t_ok "changed-capture-closed-complete" || t_fail "changed-capture-closed-complete" "$(cat "$NS_TMP/tshark.err")"
[ -f "$NS_TMP/wan.pcapng.2" ] && [ ! -s "$NS_TMP/wan.pcapng.2" ] && t_ok "earlier-file-kept" || t_fail "earlier-file-kept" "$(ls -l "$NS_TMP")"
nfbox_ctl status | grep -q "gone .*not running: cannot start" && t_ok "status-shows-failed" || t_fail "status-shows-failed" "$(nfbox_ctl status | tail -4)"
send_udp 500 2000 5000
[ "$RECV" -eq 3 ] && t_ok "enforcing-with-failed-capture" || t_fail "enforcing-with-failed-capture" "server got $RECV of 3"
wait_written wan 2
[ "$(stats_json '$c.wan.written')" -eq 2 ] && t_ok "restarted-with-new-match" ||
	t_fail "restarted-with-new-match" "(3 s after) $(stats_json '$c.wan')"

out=$(nfbox_ctl reload --policy "$NS_TMP/p4.yaml" 2>&1) || t_fail "reload-removes-capture" "$out"
link_gone mon0 && t_ok "removed-capture-pair-deleted" || t_fail "removed-capture-pair-deleted" "mon0 still exists (or ip cannot say)"
[ "$(payloads "$NS_TMP/wan.pcapng")" = "$(expected 2000 5000)" ] && t_ok "removed-capture-file-exact" ||
	t_fail "removed-capture-file-exact" "$(payloads "$NS_TMP/wan.pcapng" | head -3)"
[ "$(payloads "$NS_TMP/wan.pcapng.1")" = "$(expected $SIZES)" ] && t_ok "mirror-bytes-identical" ||
	t_fail "mirror-bytes-identical" "$(diff <(payloads "$NS_TMP/wan.pcapng.1") <(expected $SIZES) | head -5)"
icmp=$(tshark -r "$NS_TMP/wan.pcapng.1" -Y icmp 2>/dev/null) && [ -z "$icmp" ] && t_ok "match-left-out-ping" ||
	t_fail "match-left-out-ping" "icmp in the udp capture, or tshark cannot read it: $(head -n 2 <<<"$icmp")"

# ---- 4. someone else's interface, SIGKILL, SIGTERM ----
in_a ip link add mon0 type veth peer name other0
out=$(nfbox_ctl reload --policy "$NS_TMP/p2.yaml" 2>&1)
echo "$out" | grep -q "warning: capture wan on mon0 not started: interface mon0 already exists" && in_a ip link show other0 >/dev/null 2>&1 &&
	t_ok "foreign-interface-refused" || t_fail "foreign-interface-refused" "$out"
grep -q "interface mon0 already exists; with mirror-from nfbox creates it" "$NS_TMP/nfbox.err" && t_ok "foreign-interface-message" ||
	t_fail "foreign-interface-message" "$(tail -3 "$NS_TMP/nfbox.err")"
in_a ip link del mon0
kill -9 "$NFBOX_PID"
wait "$NFBOX_PID" 2>/dev/null
NFBOX_PID=
in_a ip link show mon1 >/dev/null 2>&1 && t_ok "sigkill-leaves-pair" || t_fail "sigkill-leaves-pair" "mon1 gone"
if nfbox_start "$NS_TMP/p4.yaml"; then
	grep -q "removing the mirror pair mon1/mon1-tx left by an earlier nfbox" "$NS_TMP/nfbox.err" &&
		[ "$(status_json '$c.lan.running')" = true ] && t_ok "restart-recreates-pair" ||
		t_fail "restart-recreates-pair" "$(tail -3 "$NS_TMP/nfbox.err")"
	in_c ping -c 2 -i 0.2 -W 1 $S4 >/dev/null 2>&1
	wait_written lan 2 || t_fail "sigterm-file-complete" "the two pings were not written within 3 s: $(stats_json '$c.lan')"
	nfbox_stop
	tshark_clean "$NS_TMP/lan.pcapng" && [ "$(tshark -r "$NS_TMP/lan.pcapng" -Y icmp 2>/dev/null | wc -l)" -ge 2 ] &&
		t_ok "sigterm-file-complete" || t_fail "sigterm-file-complete" "$(cat "$NS_TMP/tshark.err")"
	link_gone mon1 && t_ok "sigterm-deletes-pair" || t_fail "sigterm-deletes-pair" "mon1 still there (or ip cannot say)"
else
	t_fail "restart-recreates-pair" "$(tail -n 5 "$NS_TMP/nfbox.err")"
	cat "$NS_TMP/nfbox.err" "$NS_TMP/nfbox.out"
fi
# ---- 5. a full disk is reported, and enforcement goes on ----
mkdir -p "$NS_TMP/small"
if mount -t tmpfs -o size=512k nfbox-test "$NS_TMP/small"; then
	policy "$NS_TMP/p5.yaml" "  - { name: full, interface: mon0, mirror-from: wan0, match: { proto: udp }, file: $NS_TMP/small/full.pcapng }"
	if nfbox_start "$NS_TMP/p5.yaml"; then
		cp "$NS_TMP/nfbox.err" "$NS_TMP/nfbox-run1.err"
		send_udp_n 8000 100
		[ "$RECV" -eq 100 ] && t_ok "full-disk-forwarding-goes-on" || t_fail "full-disk-forwarding-goes-on" "server got $RECV of 100"
		wait_until 6 grep -q "capture full: [0-9]* frames lost since the last report.*write [1-9][0-9]*: No space left on device" "$NS_TMP/nfbox.err" &&
			t_ok "full-disk-logged" || t_fail "full-disk-logged" "(6 s after) $(tail -n 3 "$NS_TMP/nfbox.err")"
		# The last packets wait in the queue for the writer's next attempt.
		all_accounted() { [ "$(stats_json '$c.full | .written + .writer_write_drops + .writer_queue_drops')" -ge 100 ]; }
		wait_until 6 all_accounted # (full-disk-counted says if not)
		[ "$(stats_json '$c.full | .writer_write_drops > 0 and .writer_error == "No space left on device" and .written + .writer_write_drops + .writer_queue_drops == .packets and .packets == 100')" = true ] &&
			t_ok "full-disk-counted" || t_fail "full-disk-counted" "$(stats_json '$c.full')"
		nfbox_stop
		tshark_clean "$NS_TMP/small/full.pcapng" && t_ok "full-disk-file-readable" || t_fail "full-disk-file-readable" "$(cat "$NS_TMP/tshark.err")"
		cat "$NS_TMP/nfbox-run1.err" >>"$NS_TMP/nfbox.err"
	else
		t_fail "full-disk-start" "$(tail -n 5 "$NS_TMP/nfbox.err")"
	fi
	umount "$NS_TMP/small"
else
	t_fail "full-disk" "cannot mount a tmpfs"
fi

# ---- 6. the same mirror ad hoc: nfbox capture --mirror-from ----
in_a "$NFBOX" capture --interface wmon --mirror-from wan0 --file "$NS_TMP/adhoc.pcapng" --match '{proto: icmp}' \
	--count 4 --duration 10 >"$NS_TMP/adhoc.out" 2>"$NS_TMP/adhoc.err" &
apid=$!
# "capturing on" comes once the mirror is attached too.
wait_until 5 grep -q '^capturing on wmon' "$NS_TMP/adhoc.out" || t_fail "adhoc-mirror-capture" "no 'capturing on wmon' within 5 s: $(cat "$NS_TMP/adhoc.err")"
in_c ping -c 2 -i 0.2 -W 1 -s 6000 $S4 >/dev/null 2>&1 && t_ok "adhoc-mirror-forwarding" || t_fail "adhoc-mirror-forwarding" "ping failed"
wait $apid
arc=$?
cat "$NS_TMP/adhoc.err" >>"$NS_TMP/nfbox.err"
[ $arc -eq 0 ] && grep -q "mirroring wan0 into wmon (veth pair wmon/wmon-tx)" "$NS_TMP/adhoc.out" &&
	[ "$(tshark -r "$NS_TMP/adhoc.pcapng" -Y 'icmp && frame.len == 6042' 2>/dev/null | wc -l)" -eq 4 ] &&
	link_gone wmon && t_ok "adhoc-mirror-capture" ||
	t_fail "adhoc-mirror-capture" "rc $arc: $(cat "$NS_TMP/adhoc.out" "$NS_TMP/adhoc.err" | head -n 8)"
out=$(in_a "$NFBOX" capture --interface lan0 --mirror-from wan0 --file "$NS_TMP/never.pcapng" 2>&1)
[ $? -eq 2 ] && echo "$out" | grep -q "exists already; with --mirror-from nfbox creates it" && [ ! -e "$NS_TMP/never.pcapng" ] &&
	t_ok "adhoc-mirror-existing-refused" || t_fail "adhoc-mirror-existing-refused" "$out"

if grep -q "BUG: frame accounting" "$NS_TMP/nfbox.err"; then
	t_fail "frames-accounted" "$(grep -m2 "BUG: frame accounting" "$NS_TMP/nfbox.err")"
else
	t_ok "frames-accounted"
fi
if grep -q "ERROR: AddressSanitizer\|runtime error:" "$NS_TMP/nfbox.err"; then
	t_fail "sanitizers" "$(grep -m3 "ERROR: AddressSanitizer\|runtime error:" "$NS_TMP/nfbox.err")"
else
	t_ok "sanitizers"
fi
t_done
