#!/bin/bash
# make soak: the sanitizer build of the daemon under everything at once for
# NFBOX_SOAK_MINUTES (30):
#   - a reload every 2 s, good and bad policies alternating (a bad one must
#     fail and change nothing, a good one must succeed);
#   - `nfbox set add` of 1,000 prefixes a second with a 5 s timeout, and a
#     `set del` of half of the previous second's;
#   - three `nfbox log` followers, one of them never reading (slow);
#   - a metrics scrape every second;
#   - a capture of the policy (mirror of wan0's UDP into a rotating file);
#   - 50,000 packets a second (bench_txgen: UDP to an allowed and to a
#     denied port, 25,000 each), and a probe of each verdict every 10 s.
# Targets: the daemon's RSS, open descriptors and BPF memory within 5% of
# their values after the warm-up (5 minutes) at the end; no ASan or UBSan
# report; no probe with another verdict than the policy's; every good
# reload accepted and every bad one refused. Prints the samples and the
# figures; exits 1 when a target is missed. A run too short to sample after
# its warm-up (1 minute, CI's short form) judges the rest and says the
# memory targets are not judged ("n/a"). Needs root; traffic stays in
# the namespaces it makes (tests/lib/netns.sh), on documentation prefixes.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
CTL=$PWD/tests/lib/ctl.py
MIN=${NFBOX_SOAK_MINUTES:-30}
WARM_S=$((MIN >= 10 ? 300 : 60))
NFBOX=${NFBOX_BIN:-$PWD/build/asan/nfbox}
TXGEN=${NFBOX_TXGEN:-$PWD/build/bench_txgen}
PORT=9470
[ -x "$NFBOX" ] || { echo "soak: $NFBOX is not built (make unit)" >&2; exit 1; }
[ -x "$TXGEN" ] || { echo "soak: $TXGEN is not built (make build/bench_txgen)" >&2; exit 1; }

ns_setup || { echo "soak: cannot build the namespaces" >&2; exit 1; }
policy() { # FILE WEB-PORT
	cat >"$1" <<YAML
version: 1
interfaces:
  lan: [lan0]
sets:
  banned: { dynamic: true }
hooks:
  forward: { default: drop }
rules:
  - { name: banned, from: banned, action: drop }
  - { name: flood-ok, in: lan, service: [udp/7000, udp/7002], action: accept }
  - { name: flood-no, in: lan, service: [udp/7001, udp/7003], action: drop, log: true }
  - { name: web, service: tcp/$2, action: accept }
capture:
  - { name: wan, interface: mon0, mirror-from: wan0, match: { proto: udp }, file: $NS_TMP/wan.pcapng, snaplen: 128, rotate: { size: 8MiB, keep: 2 } }
YAML
}
policy "$NS_TMP/a.yaml" 80
policy "$NS_TMP/b.yaml" 81
printf 'version: 1\nhooks: { forward: { default: accept } }\nrules:\n  - { name: x, sevice: [tcp/80], action: drop }\n' >"$NS_TMP/bad.yaml"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
nfbox_start "$NS_TMP/a.yaml" --metrics-listen "127.0.0.1:$PORT" --log "$NS_TMP/events.jsonl" ||
	{ echo "soak: the daemon did not start: $(cat "$NS_TMP/nfbox.err")" >&2; exit 1; }
END=$(($(date +%s) + MIN * 60))
running() { [ "$(date +%s)" -lt "$END" ]; }
echo "# soak: $MIN minutes, warm-up ${WARM_S}s, daemon $NFBOX (pid $NFBOX_PID)"

reloads() {
	local i=0 ok=0 bad=0 wrong=0
	while running; do
		i=$((i + 1))
		if [ $((i % 2)) -eq 1 ]; then
			nfbox_ctl reload --policy "$NS_TMP/bad.yaml" >/dev/null 2>&1 && wrong=$((wrong + 1)) || bad=$((bad + 1))
		else
			f=$NS_TMP/a.yaml
			[ $((i % 4)) -eq 0 ] && f=$NS_TMP/b.yaml
			nfbox_ctl reload --policy "$f" >/dev/null 2>&1 && ok=$((ok + 1)) || wrong=$((wrong + 1))
		fi
		sleep 2
	done
	echo "reloads good $ok bad $bad wrong $wrong"
}
sets() {
	local n=0 fail=0 prev=
	while running; do
		/usr/bin/python3 -c '
import sys
n = int(sys.argv[1])
for i in range(n * 1000, n * 1000 + 1000):
    print("2001:db8:%x:%x::/64" % (0x100 + (i >> 16 & 0xff), i & 0xffff))' "$n" >"$NS_TMP/set.$n"
		nfbox_ctl set add banned --file "$NS_TMP/set.$n" --timeout 5s >/dev/null 2>&1 || fail=$((fail + 1))
		if [ -n "$prev" ]; then
			head -n 500 "$NS_TMP/set.$prev" >"$NS_TMP/del"
			# (some may have expired already: a delete of those is refused, by design)
			nfbox_ctl set del banned --file "$NS_TMP/del" >/dev/null 2>&1
			rm -f "$NS_TMP/set.$prev"
		fi
		prev=$n
		n=$((n + 1))
		sleep 1
	done
	echo "sets batches $n failed $fail"
}
scrapes() {
	local n=0 fail=0
	while running; do
		in_a /usr/bin/python3 -c 'import sys, urllib.request; urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read()' "$PORT" 2>/dev/null ||
			fail=$((fail + 1))
		n=$((n + 1))
		sleep 1
	done
	echo "scrapes $n failed $fail"
}
# probe PORT: "pass" or "drop" for one datagram from the client to the server
probe() {
	: >"$NS_TMP/pc.$1"
	in_s timeout 5 "$NET" udp-count 1.5 "$1" >"$NS_TMP/pc.$1" 2>&1 &
	local w=$!
	wait_until 5 grep -q listening "$NS_TMP/pc.$1" || { wait $w; echo none; return; }
	in_c "$NET" udp-blast "$S4" "$1" 1 >/dev/null 2>&1
	wait $w
	awk '/^got/ {print ($3 > 0) ? "pass" : "drop"}' "$NS_TMP/pc.$1"
}
probes() {
	local n=0 wrong=0
	while running; do
		[ "$(probe 7002)" = pass ] || wrong=$((wrong + 1))
		[ "$(probe 7003)" = drop ] || wrong=$((wrong + 1))
		n=$((n + 2))
		sleep 10
	done
	echo "probes $n wrong $wrong"
}
sample() { # elapsed-seconds: "T RSS-KIB FDS BPF-BYTES"
	local rss fds bpf
	rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$NFBOX_PID/status" 2>/dev/null)
	fds=$(ls "/proc/$NFBOX_PID/fd" 2>/dev/null | wc -l)
	bpf=$(nfbox_ctl status --json 2>/dev/null | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["bpf_memory_bytes"])' 2>/dev/null)
	echo "$1 ${rss:-0} $fds ${bpf:-0}"
}

lan_mac=$(ip -n "$NS_A" link show lan0 | awk '/ether/ { print $2 }')
secs=$((MIN * 60))
txgens=
for p in 7000 7001; do
	ip netns exec "$NS_C" "$TXGEN" -q -i c0 -d "$lan_mac" -s 100 -n $((25000 * secs)) -r 25000 \
		--src $C4 --dst $S4 --dport $p >"$NS_TMP/tx.$p" 2>&1 &
	txgens="$txgens $!"
done
reloads >"$NS_TMP/r.out" &
sets >"$NS_TMP/s.out" &
scrapes >"$NS_TMP/m.out" &
probes >"$NS_TMP/p.out" &
nfbox_ctl log >/dev/null 2>&1 &
nfbox_ctl log >/dev/null 2>&1 &
/usr/bin/python3 "$CTL" follow-slow "$NFBOX_SOCK" "$secs" 1 >"$NS_TMP/slow.out" 2>&1 &

: >"$NS_TMP/samples"
t0=$(date +%s)
while running; do
	sample $(($(date +%s) - t0)) | tee -a "$NS_TMP/samples"
	sleep 30
done
# (no sample after the load stops: the dynamic sets' entries then expire
# and BPF memory falls, which says nothing about a leak)
wait_until 30 sh -c "[ -s '$NS_TMP/r.out' ] && [ -s '$NS_TMP/s.out' ] && [ -s '$NS_TMP/m.out' ] && [ -s '$NS_TMP/p.out' ]"
cat "$NS_TMP/r.out" "$NS_TMP/s.out" "$NS_TMP/m.out" "$NS_TMP/p.out" | sed 's/^/# /'
stats=$(nfbox_ctl stats --json 2>/dev/null)
for p in $txgens; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
nfbox_stop

missed=0
target() { # NAME OK-COMMAND... : prints the target's line (status 2: not judged)
	"${@:2}"
	case $? in
	0) echo "ok      $1" ;;
	2) echo "n/a     $1: no sample after the ${WARM_S} s warm-up (a run of $MIN min: CI's short form)" ;;
	*) echo "MISSED  $1"; missed=$((missed + 1)) ;;
	esac
}
within5() { # COLUMN: the last sample within 5% of the first after the warm-up
	awk -v c="$1" -v w="$WARM_S" '$1 >= w && !b { b = $c } { l = $c } END {
		if (!b) exit 2
		d = (l - b) / b * 100; printf "    %s after the warm-up, %s at the end of the load (%+.1f%%)\n", b, l, d > "/dev/stderr"
		exit (d > 5 || d < -5) }' "$NS_TMP/samples"
}
echo "# targets"
target "rss-within-5%" within5 2
target "fds-within-5%" within5 3
target "bpf-memory-within-5%" within5 4
target "no-sanitizer-report" sh -c "! grep -Eq 'ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:' '$NS_TMP/nfbox.err'"
target "verdicts-kept" grep -q " wrong 0$" "$NS_TMP/p.out"
target "reloads-as-expected" grep -q " wrong 0$" "$NS_TMP/r.out"
target "no-set-change-failed" grep -q " failed 0$" "$NS_TMP/s.out"
target "no-scrape-failed" grep -q " failed 0$" "$NS_TMP/m.out"
echo "# the forward hook's rules (the flood: flood-ok and flood-no, over $secs s): $(/usr/bin/python3 -c '
import json, sys
d, secs = json.loads(sys.argv[1]), int(sys.argv[2])
rows = [r for r in d["rules"] if r["hook"] == "forward"]
flood = sum(r["packets"] for r in rows if r["rule"].startswith("flood"))
print(", ".join("%s %d" % (r["rule"], r["packets"]) for r in rows) + "; %d packets/s" % (flood // secs))' "$stats" "$secs" 2>/dev/null)"
grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$NS_TMP/nfbox.err" | head -5
[ "$missed" -eq 0 ]
