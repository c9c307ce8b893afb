#!/bin/bash
# A long reload (a set of 400,000 prefixes) runs in a thread of its own:
# while it reads and compiles, the daemon answers status, stats and set
# changes at once, refuses a second reload and a confirm with a clear
# message, and keeps enforcing the old policy; a SIGHUP during it makes one
# more reload after it; a client that goes away during its reload gets no
# answer and the next client gets its own; a stop during it ends the daemon
# cleanly, the reload unenforced and its client told so.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
awk 'BEGIN { for (i = 0; i < 400000; i++) printf "%d.%d.%d.0/24\n", 11 + int(i / 32768), int(i / 128) % 256, (i % 128) * 2 }' >"$NS_TMP/big.txt"
cat >"$NS_TMP/small.yaml" <<'YAML'
version: 1
sets:
  banned: { dynamic: true }
hooks:
  forward: { default: drop }
rules:
  - { name: web, service: tcp/80, action: accept }
YAML
cat >"$NS_TMP/big.yaml" <<'YAML'
version: 1
sets:
  banned: { dynamic: true }
  big: { file: big.txt }
hooks:
  forward: { default: drop }
rules:
  - { name: drop-big, from: big, action: drop }
  - { name: web, service: tcp/81, action: accept }
YAML
cp "$NS_TMP/small.yaml" "$NS_TMP/policy.yaml"
# A stand-in for systemd's notify socket: the daemon says RELOADING=1 as a
# reload begins (its thread started), which is what the cases wait for.
notify_standin || { t_fail setup "the notify stand-in did not bind"; t_done; }
trap 'kill "$NOTIFY_PID" 2>/dev/null; ns_cleanup' EXIT
NOTIFY_SOCKET=$NS_TMP/notify.sock nfbox_start "$NS_TMP/policy.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
gen() { nfbox_ctl status --json | jq -r .generation; }
ms_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", (b - a) * 1000 }'; }
can() { listen in_s "$1" 3; in_c "$NET" tcp-connect $S4 "$1" 1 >/dev/null 2>&1; }
g0=$(gen)
timed() { # CMD...: its output, and how long it took to $NS_TMP/took
	local t0=$EPOCHREALTIME
	"$@"
	local r=$?
	echo "$(ms_since "$t0") ms for $1 $2 during the reload" >"$NS_TMP/took"
	return $r
}

reloads_begun() { grep -c '^RELOADING=1' "$NS_TMP/notify.log"; }
reloading() { [ "$(reloads_begun)" -gt "$1" ]; } # BEGUN-BEFORE
# reload_big: start a reload of the big policy (its client's pid in $rl)
# and wait until the daemon has begun it.
reload_big() {
	local n0
	n0=$(reloads_begun)
	nfbox_ctl reload --policy "$NS_TMP/big.yaml" &
	rl=$!
	wait_until 5 reloading "$n0"
}

# during(NAME CMD...): CMD runs once a reload of the big policy has begun,
# and the reload must still run once CMD is done; CMD's output in
# $NS_TMP/NAME.out, its exit status in $rc_during.
during() {
	local name=$1 running
	shift
	rc_during=255
	if ! reload_big >"$NS_TMP/rl.out" 2>&1; then
		wait $rl
		t_fail "$name" "the daemon did not begin the reload within 5 s: $(cat "$NS_TMP/rl.out")"
		return 1
	fi
	"$@" >"$NS_TMP/$name.out" 2>&1
	rc_during=$?
	running=no
	kill -0 $rl 2>/dev/null && running=yes
	wait $rl || t_fail "$name-reload" "$(cat "$NS_TMP/rl.out")"
	[ "$running" = yes ] || t_fail "$name" "the reload was done before the check was (it did not run beside the daemon's loop, or this machine is too fast for the test's policy)"
	[ "$running" = yes ]
}
back() { nfbox_ctl reload --policy "$NS_TMP/small.yaml" >/dev/null; }

during status timed nfbox_ctl status --json
if [ "$rc_during" -eq 0 ] && [ "$(jq -r .generation "$NS_TMP/status.out")" -eq "$g0" ]; then
	t_ok status-during-reload-shows-the-policy-in-force
else
	t_fail status-during-reload-shows-the-policy-in-force "rc $rc_during: $(head -c 300 "$NS_TMP/status.out")"
fi
echo "# $(cat "$NS_TMP/took")"
t_check status-answered-at-once [ "$(cut -d' ' -f1 "$NS_TMP/took")" -lt 500 ]
t_check one-generation-more [ "$(gen)" -eq $((g0 + 1)) ]
back
during stats nfbox_ctl stats && t_check stats-during-reload [ "$rc_during" -eq 0 ]
back
during setadd nfbox_ctl set add banned 192.0.2.99 && t_check set-add-during-reload [ "$rc_during" -eq 0 ]
t_check set-entry-kept grep -q 192.0.2.99 <(nfbox_ctl set list banned)
back
if during second nfbox_ctl reload --policy "$NS_TMP/small.yaml"; then
	t_check second-reload-refused [ "$rc_during" -ne 0 ]
	t_check second-reload-says-why grep -q "another reload is in progress" "$NS_TMP/second.out"
fi
t_check new-policy-enforced can 81
back
if during confirm nfbox_ctl confirm; then
	t_check confirm-refused grep -q "a reload is in progress" "$NS_TMP/confirm.out"
fi

# The reload's client goes away mid-reload (killed): the reload completes,
# and the next client, which may get the same descriptor number in the
# daemon, gets its own answer, not the gone client's.
g2=$(gen)
reload_big >/dev/null 2>&1 || t_fail gone-client-reload-began "the daemon did not begin the reload within 5 s"
kill -KILL $rl 2>/dev/null
wait $rl 2>/dev/null
# A silent client holds the socket until after the reload ends: the
# descriptor the gone client had is the lowest free one, so likely its.
# It may be told its own request timed out (2 s after its connect), and
# nothing else.
/usr/bin/python3 tests/lib/ctl.py silent "$NFBOX_SOCK" 3 >"$NS_TMP/silent.out" 2>&1
if [ "$(cut -d' ' -f2 "$NS_TMP/silent.out")" = 0 ] ||
	grep -qx "got [0-9]* b'error.nrequest timed out: send one line within 2 seconds of the connect.n'" "$NS_TMP/silent.out"; then
	t_ok gone-client-answer-not-misdelivered
else
	t_fail gone-client-answer-not-misdelivered "a client that asked nothing got: $(cat "$NS_TMP/silent.out")"
fi
gen_at_least() { [ "$(gen)" -ge "$1" ]; }
wait_until 10 gen_at_least $((g2 + 1))
t_check gone-client-reload-completes [ "$(gen)" -eq $((g2 + 1)) ]
t_check gone-client-daemon-alive kill -0 "$NFBOX_PID"
back

# SIGHUP while a client's reload runs: one more reload after it
g1=$(gen)
reload_big >/dev/null 2>&1 || t_fail sighup-during-reload-began "the daemon did not begin the reload within 5 s"
kill -HUP "$NFBOX_PID"
wait $rl
wait_until 10 gen_at_least $((g1 + 2))
t_check sighup-during-reload-reloads-after [ "$(gen)" -eq $((g1 + 2)) ]

# stop while a reload runs: the daemon ends, the reload's client is told
reload_big >"$NS_TMP/rl3.out" 2>&1 || t_fail stop-during-reload-began "the daemon did not begin the reload within 5 s"
nfbox_ctl stop >/dev/null 2>&1
wait $rl
rc=$?
gone() { ! kill -0 "$NFBOX_PID" 2>/dev/null; }
wait_until 10 gone
t_check stop-during-reload-ends [ ! -d /proc/"$NFBOX_PID" ]
if [ "$rc" -ne 0 ] && grep -q "stopped before the policy was loaded" "$NS_TMP/rl3.out"; then
	t_ok stop-during-reload-told
else
	t_fail stop-during-reload-told "rc $rc: $(cat "$NS_TMP/rl3.out")"
fi
t_done
