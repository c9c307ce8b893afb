#!/bin/bash
# nfbox as systemd runs it: the sd_notify protocol (READY, RELOADING,
# STATUS, STOPPING), journal priorities, the exit status of a bad policy,
# and the restart path of nfbox.service: ExecStop= (packaging/systemd/
# nfbox-stop, asking a stand-in systemctl whether the stop is part of a
# restart) then a new daemon, while a denied and an allowed UDP port are
# probed every millisecond. A restart must let no denied datagram through
# and lose no allowed one; an explicit stop must detach (the probe sees the
# gap then: the test of the test); ExecStop= after a crash must leave the
# dead daemon's pinned policy enforcing.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
RELEASE=${NFBOX_BIN_RELEASE:-$PWD/build/nfbox}
[ -x "$RELEASE" ] || RELEASE=$NFBOX

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
cat >"$NS_TMP/p.yaml" <<'YAML'
version: 1
hooks:
  forward: { default: drop }
rules:
  - { name: allowed, service: [udp/7001], action: accept }
YAML
printf 'version: 1\nhooks: { forward: { default: drop } }\nrules:\n  - { name: x, sevice: [udp/1], action: accept }\n' >"$NS_TMP/bad.yaml"

# --- sd_notify ----------------------------------------------------------------
# A datagram socket standing in for systemd's; one line per message.
notify_standin || { t_fail setup "the notify stand-in did not bind"; t_done; }
trap 'kill "$NOTIFY_PID" 2>/dev/null; ns_cleanup' EXIT
NOTIFY_SOCKET=$NS_TMP/notify.sock nfbox_start "$NS_TMP/p.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
# What STATUS= says is enforced, by backend.
ENFORCING='enforcing (generation [0-9]+: 1 rules|1 rules \(nftables backend, table inet nfbox\))'
if wait_until 5 grep -Eq "^READY=1\|STATUS=$ENFORCING\$" "$NS_TMP/notify.log"; then
	t_ok notify-ready
else
	t_fail notify-ready "$(cat "$NS_TMP/notify.log")"
fi
n0=$(wc -l <"$NS_TMP/notify.log")
nfbox_ctl reload >/dev/null 2>&1
nfbox_ctl reload --policy "$NS_TMP/bad.yaml" >/dev/null 2>&1
notified() { [ "$(wc -l <"$NS_TMP/notify.log")" -ge "$1" ]; } # LINES
wait_until 5 notified $((n0 + 4)) # (notify-reload below says if they do not come)
if /usr/bin/python3 - "$NS_TMP/notify.log" "$n0" "$ENFORCING" <<'PY'; then
import re, sys
lines = open(sys.argv[1]).read().split("\n")[int(sys.argv[2]):]
enf = sys.argv[3]
want = [r"RELOADING=1\|MONOTONIC_USEC=\d+\|STATUS=reloading$",
        r"READY=1\|STATUS=" + enf + "$",
        r"RELOADING=1\|MONOTONIC_USEC=\d+\|STATUS=reloading$",
        r"READY=1\|STATUS=reload failed, unchanged: " + enf + "$"]
sys.exit(0 if len(lines) >= 4 and all(re.match(w, l) for w, l in zip(want, lines)) else 1)
PY
	t_ok notify-reload
else
	t_fail notify-reload "$(tail -n +$((n0 + 1)) "$NS_TMP/notify.log" | tr '\n' ' ')"
fi

# --- journal priorities, and the exit status of a bad policy -----------------------
# stderr is "the journal" when $JOURNAL_STREAM names its device and inode.
# In a mount namespace with an empty /run: no journald socket, whether or
# not the host runs journald, so every line comes to stderr (and nothing of
# the test's goes into the host's journal).
: >"$NS_TMP/j.err"
in_a unshare -m /bin/sh -c 'mount -t tmpfs tmpfs /run || exit 99
	JOURNAL_STREAM=$(stat -c %d:%i "$1/j.err") "$2" run --policy "$1/bad.yaml" --state-dir "$1/state" --socket "$1/j.sock" --no-pin >/dev/null 2>>"$1/j.err"' \
	sh "$NS_TMP" "$NFBOX"
rc=$?
t_check bad-policy-exit-78 test "$rc" -eq 78
if grep -q '^<3>.*bad.yaml:4:16: error: unknown key' "$NS_TMP/j.err" && ! grep -qv '^<[0-7]>' "$NS_TMP/j.err"; then
	t_ok journal-priorities
else
	t_fail journal-priorities "$(head -c 600 "$NS_TMP/j.err")"
fi
# Without the journal: the same error as validate prints it, no prefixes.
in_a "$NFBOX" run --policy "$NS_TMP/bad.yaml" --state-dir "$NS_TMP/state" --socket "$NS_TMP/j.sock" --no-pin >/dev/null 2>"$NS_TMP/plain.err"
if grep -q '^.*bad.yaml:4:16: error: unknown key' "$NS_TMP/plain.err" && ! grep -q '^<[0-7]>' "$NS_TMP/plain.err"; then
	t_ok plain-stderr
else
	t_fail plain-stderr "$(head -c 400 "$NS_TMP/plain.err")"
fi
t_check missing-policy-exit-78 sh -c "ip netns exec $NS_A $NFBOX run --policy $NS_TMP/none.yaml --socket $NS_TMP/j.sock --no-pin 2>/dev/null; test \$? -eq 78"
# A message of several lines (the error, its source line, the caret) is one
# journal entry: through journald's socket, here a stand-in in a mount
# namespace of the test's own.
in_a unshare -m /bin/sh -c '
	mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/journal || exit 1
	/usr/bin/python3 -c "
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(\"/run/systemd/journal/socket\")
s.settimeout(10)
print(\"listening\", flush=True)
while True:
    d = s.recv(65536)
    f = {}
    while d:
        nl = d.index(b\"\n\")
        name, d = d[:nl], d[nl + 1:]
        if b\"=\" in name:
            k, v = name.split(b\"=\", 1)
        else:
            n = struct.unpack(\"<Q\", d[:8])[0]
            k, v, d = name, d[8:8 + n], d[9 + n:]
        f[k.decode()] = v.decode()
    if \"bad.yaml\" in f.get(\"MESSAGE\", \"\"):
        print(\"PRIORITY=%s IDENT=%s LINES=%d\" % (f.get(\"PRIORITY\"), f.get(\"SYSLOG_IDENTIFIER\"), f[\"MESSAGE\"].count(chr(10)) + 1), flush=True)
        break
" >"$1/native.out" &
	for i in $(seq 50); do [ -S /run/systemd/journal/socket ] && break; sleep 0.1; done
	[ -S /run/systemd/journal/socket ] || { echo "the journald stand-in did not bind its socket" >>"$1/native.out"; exit 1; }
	: >"$1/n.err"
	JOURNAL_STREAM=$(stat -c %d:%i "$1/n.err") "$2" run --policy "$1/bad.yaml" --state-dir "$1/state" --socket "$1/n.sock" --no-pin >/dev/null 2>>"$1/n.err"
	wait
' sh "$NS_TMP" "$NFBOX"
if grep -Eq '^PRIORITY=3 IDENT=nfbox LINES=3$' "$NS_TMP/native.out"; then
	t_ok journal-one-entry
else
	t_fail journal-one-entry "journald stand-in got: $(cat "$NS_TMP/native.out") stderr: $(head -c 300 "$NS_TMP/n.err")"
fi

# --- restart and stop through ExecStop= ------------------------------------------
# systemctl stand-in: `list-jobs` prints what $JOBS holds.
mkdir -p "$NS_TMP/bin"
printf '#!/bin/sh\n[ "$1" = list-jobs ] && cat "$JOBS"\n' >"$NS_TMP/bin/systemctl"
chmod +x "$NS_TMP/bin/systemctl"
exec_stop() { # JOB-TYPE: what nfbox.service's ExecStop= does during that job
	echo "77 nfbox.service $1 running" >"$NS_TMP/jobs"
	PATH=$NS_TMP/bin:$PATH JOBS=$NS_TMP/jobs NFBOX=$NFBOX \
		packaging/systemd/nfbox-stop nfbox.service --socket "$NFBOX_SOCK" >"$NS_TMP/stop.out" 2>&1
}

# cycle JOB-TYPE: probe 7001 (allowed) and 7002 (denied) every millisecond
# while the daemon is stopped as in JOB-TYPE and a new one (the release
# build: another binary, as after an upgrade) is started; sets
# SENT (to 7001), GOT (on 7001) and LEAKED (on 7002).
cycle() {
	SENT= GOT= LEAKED=
	wait_free in_s 7001 || { t_fail "$1-probe" "udp/7001 still taken"; return; }
	# Counts until 1.5 s after the last tick.
	: >"$NS_TMP/count" # here, not in the child: no "listening" of the last cycle's
	in_s "$NET" udp-count 6.5 7001 7002 >"$NS_TMP/count" 2>&1 &
	local cpid=$!
	if ! wait_until 5 grep -q listening "$NS_TMP/count"; then
		t_fail "$1-probe" "udp-count never listened"
		wait "$cpid"
		return
	fi
	local c0
	c0=$(nfbox_count forward allowed)
	in_c "$NET" udp-ticks $S4 5 7001 7002 >"$NS_TMP/ticks" 2>&1 &
	local tpid=$!
	# The stop must come while the ticks flow (their 5 s go on after it).
	ticks_flow() { [ "$(nfbox_count forward allowed)" -ge $((c0 + 50)) ]; }
	wait_until 3 ticks_flow || t_fail "$1-probe" "no ticks counted by the rule within 3 s"
	local old=$NFBOX_PID
	# ExecStop= must return only once the daemon is gone (else systemd's
	# SIGTERM would follow and detach).
	if exec_stop "$1" && ! kill -0 "$old" 2>/dev/null; then
		t_ok "$1-exec-stop-waits"
	else
		t_fail "$1-exec-stop-waits" "ExecStop returned $? with the daemon still running: $(cat "$NS_TMP/stop.out")"
	fi
	wait "$old" 2>/dev/null
	NFBOX_PID=
	NFBOX=$RELEASE nfbox_start "$NS_TMP/p.yaml" >/dev/null 2>&1 || t_fail "$1-next-daemon" "$(tail -n 3 "$NS_TMP/nfbox.err")"
	wait "$tpid" "$cpid"
	SENT=$(awk '$1 == "sent" && $2 == 7001 { print $3 }' "$NS_TMP/ticks")
	GOT=$(awk '$1 == "got" && $2 == 7001 { print $3 }' "$NS_TMP/count")
	LEAKED=$(awk '$1 == "got" && $2 == 7002 { print $3 }' "$NS_TMP/count")
}

cycle restart
if [ "${SENT:-0}" -gt 4000 ] && [ "${LEAKED:-x}" = 0 ] && [ "${GOT:-0}" = "$SENT" ]; then
	t_ok restart-no-gap
else
	t_fail restart-no-gap "allowed: sent ${SENT:-?}, got ${GOT:-?}; denied: got ${LEAKED:-?} (want 0); $(cat "$NS_TMP/stop.out")"
fi
# BPF: the pins adopted; nftables: the kept table taken over (owned again).
adopted_key=adopted
bpf_backend || adopted_key=nft_table_owned
if nfbox_ctl status --json | json_true '.[$k]' --arg k "$adopted_key"; then
	t_ok restart-adopted
else
	t_fail restart-adopted "the new daemon did not adopt: $(nfbox_ctl status 2>&1 | head -n 5)"
fi
t_check notify-stopping grep -q '^STOPPING=1|STATUS=stopping: the policy stays enforced for the next daemon$' "$NS_TMP/notify.log"

# An explicit stop detaches: a new daemon then starts from nothing, and
# the probe must see the gap (else it could not have seen one above).
cycle stop
if [ "${LEAKED:-0}" -gt 0 ]; then
	t_ok stop-detaches
else
	t_fail stop-detaches "no denied datagram passed while no daemon ran (allowed: sent ${SENT:-?}, got ${GOT:-?}): the probe cannot see a gap"
fi

# A crash, then ExecStop= (as systemd runs it after the main process
# died): nothing answers, nothing is touched, the pinned policy enforces.
kill -9 "$NFBOX_PID"
wait "$NFBOX_PID" 2>/dev/null
NFBOX_PID=
if exec_stop stop && grep -q 'nothing to stop' "$NS_TMP/stop.out"; then
	t_ok stop-after-crash-quiet
else
	t_fail stop-after-crash-quiet "$(cat "$NS_TMP/stop.out")"
fi
listen in_s 7003 3
in_c "$NET" udp-probe $S4 7002 1 >"$NS_TMP/probe" 2>&1
t_check crash-still-enforcing grep -q '^timeout' "$NS_TMP/probe"
kill "$NOTIFY_PID" 2>/dev/null
t_done
