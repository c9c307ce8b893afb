#!/bin/bash
# The control socket holds against hostile clients and careless operators:
#  - 63 root clients with half a request, beside an idle log follower, do
#    not lock the CLI out: a new client is told "busy" at once, the half
#    requests are closed 2 s after their connect (ctl-no-request-deadline,
#    planted, fails it) and status answers then; the follower goes on; and
#    SIGTERM still works;
#  - a client that never reads a 1.5 MB stats reply stalls nobody;
#  - who may ask what: root anything, the socket group (nogroup here) status,
#    stats and log only, anyone else nothing (SO_PEERCRED);
#  - a socket directory someone else could write to is trusted by neither
#    the daemon nor the CLI (no stand-in daemon answering root's reload);
#  - reload --policy passes the open file (SCM_RIGHTS): the daemon reads
#    what the caller opened, even a path it cannot see itself;
#  - policy and set files owned by another user, or writable by others, are
#    refused at start and on reload unless --allow-unsafe-files;
#  - a log follower that falls behind is told how many events it missed,
#    and `nfbox log` then exits 1.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
export NFBOX_CLI_LEAKS=1 # every verb of the client under LeakSanitizer (cli_run)
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
# A socket directory others may traverse (for the socket group), owned by
# root and writable by root alone; the binary and the clients beside it,
# for nobody to run: the checkout may be one that only root may enter (a
# clone in /root), and no test may depend on its permissions.
PUB=$(mktemp -d /tmp/nfbox-ctl.XXXXXX)
chmod 755 "$PUB"
cp "$NFBOX" "$PUB/nfbox"
cp tests/lib/ctl.py "$PUB/ctl.py"
chmod 755 "$PUB/nfbox" "$PUB/ctl.py"
CTL=$PUB/ctl.py
trap 'ns_cleanup; rm -rf "$PUB"' EXIT
SOCK=$PUB/nfbox.sock

{
	printf 'version: 1\nhooks: { forward: { default: drop } }\noptions: { log-rate: 100000/second, log-burst: 100000 }\n'
	printf 'sets: { x: { dynamic: true } }\nrules:\n'
	printf '  - { name: from-x, from: x, action: drop }\n'
	printf '  - { name: logged, service: [udp/7000], action: accept, log: true }\n'
	for i in $(seq 1 20000); do printf '  - { name: rule-number-%d, service: [tcp/%d], action: accept }\n' $i $((20000 + i)); done
} >"$NS_TMP/big.yaml"
start() { # extra run options...
	ip netns exec "$NS_A" "$NFBOX" run --policy "$NS_TMP/big.yaml" --state-dir "$NS_TMP/state" --socket "$SOCK" --pin-dir "$NFBOX_PINS" "$@" \
		>"$NS_TMP/nfbox.out" 2>"$NS_TMP/nfbox.err" &
	NFBOX_PID=$!
	for _ in $(seq 200); do
		grep -q '^ready$' "$NS_TMP/nfbox.out" && return 0
		kill -0 $NFBOX_PID 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
ctl() { "$NFBOX" "$1" --socket "$SOCK" "${@:2}"; }
# as_user SETPRIV-OPTIONS... COMMAND...: run as another user, from /, and
# only what that user may read whatever the checkout's mode: a path into
# the checkout is refused (the case fails in every checkout, not only in
# one under /root).
CHECKOUT=$PWD
as_user() {
	local a
	for a in "$@"; do
		case $a in "$CHECKOUT"/*)
			t_fail runs-nothing-of-the-checkout-as-another-user "$a: copy it to \$PUB"
			return 126
			;;
		esac
	done
	(cd / && exec setpriv "$@")
}
as_nobody() { as_user --reuid=nobody --regid=nogroup --init-groups "$@"; }
as_stranger() { as_user --reuid=65533 --regid=65533 --clear-groups "$@"; }
# queued PID BYTES: a unix socket of process PID (here, in the test's own
# namespace) holds more than BYTES unread (ss: Recv-Q)
queued() { ss -xnp | awk -v p="pid=$1," -v n="$2" 'index($0, p) && $3 > n { f = 1 } END { exit !f }'; }

start --socket-group nogroup || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }

# ---- hostile clients ----
# A root follower first (nfbox log), idle through what follows: once its
# request is in, no request deadline applies to it. (Following once it
# has an event: a logged datagram, sent until then.)
"$NFBOX" log --socket "$SOCK" >"$NS_TMP/follower.out" 2>&1 &
follower=$!
logged_one() { in_c "$NET" udp-blast $S4 7000 1 >/dev/null 2>&1; [ -s "$NS_TMP/follower.out" ]; }
wait_until 5 logged_one || t_fail follower-unaffected "nfbox log got no event within 5 s: $(cat "$NS_TMP/follower.out")"
# 63 root clients with half a request fill the rest (the 64th is told busy).
/usr/bin/python3 "$CTL" hold "$SOCK" 64 "sta" 7 >"$NS_TMP/hold" 2>&1 &
hold=$!
# Connected: the daemon accepts in order, so the next client is the 65th.
# (the 64th is told busy and closed: its send may fail, or not)
wait_until 5 grep -Eq '^holding 6[34]$' "$NS_TMP/hold" || t_fail full-says-busy "the clients did not connect: $(cat "$NS_TMP/hold")"
t_full=$(date +%s%N)
out=$(ctl status 2>&1)
rc=$?
ms=$((($(date +%s%N) - t_full) / 1000000))
[ $rc = 1 ] && echo "$out" | grep -q "busy" && [ $ms -lt 2000 ] && t_ok full-says-busy ||
	t_fail full-says-busy "rc $rc after ${ms} ms: $out"
# A request line is due 2 s after the connect: then the half requests are
# told so and closed, and status answers, long before the holder would
# let go (7 s).
wait_until 3.5 ctl status
ms=$((($(date +%s%N) - t_full) / 1000000))
if ctl status >/dev/null 2>&1 && [ $ms -lt 3500 ] && kill -0 $hold 2>/dev/null; then
	t_ok "status-answers-after-the-deadline (${ms} ms)"
else
	t_fail status-answers-after-the-deadline "no answer within 3.5 s of the 64 connects (${ms} ms): $(ctl status 2>&1 | head -n 2)"
fi
wait $hold
grep -q "timed-out 63" "$NS_TMP/hold" && t_ok half-requests-told-timed-out || t_fail half-requests-told-timed-out "$(cat "$NS_TMP/hold")"
# ... and closed at the deadline, not before it and not long after
last=$(sed -n 's/^timed-out-closed 63 last \([0-9.]*\)$/\1/p' "$NS_TMP/hold")
if [ -n "$last" ] && awk -v s="$last" 'BEGIN { exit !(s >= 1.8 && s < 3) }'; then
	t_ok "half-requests-closed-at-the-deadline (${last} s)"
else
	t_fail half-requests-closed-at-the-deadline "$(cat "$NS_TMP/hold")"
fi
: >"$NS_TMP/follower.out"
if kill -0 $follower 2>/dev/null && wait_until 5 logged_one; then
	t_ok follower-unaffected
else
	t_fail follower-unaffected "the idle follower was dropped or gets no event: $(cat "$NS_TMP/follower.out")"
fi
kill -INT $follower 2>/dev/null
wait $follower 2>/dev/null

/usr/bin/python3 "$CTL" stuck "$SOCK" stats 20 >/dev/null 2>&1 &
stuck=$!
# The daemon has begun its reply to the client that never reads.
wait_until 5 queued $stuck 0 || t_fail slow-reader-stalls-nobody "no reply began for the stuck client"
t0=$(date +%s%N)
ctl status >/dev/null 2>&1
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc = 0 ] && [ $ms -lt 2000 ] && t_ok slow-reader-stalls-nobody || t_fail slow-reader-stalls-nobody "rc $rc after ${ms} ms"
long=$(head -c 5000 /dev/zero | tr '\0' a)
out=$(/usr/bin/python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode()); print(s.recv(100).decode())' "$SOCK" "$long" 2>&1)
echo "$out" | grep -q "request too long" && t_ok request-too-long || t_fail request-too-long "$out"

# ---- who may ask what ----
as_nobody "$PUB/nfbox" status --socket "$SOCK" >/dev/null 2>&1 && t_ok group-may-read || t_fail group-may-read "$(as_nobody "$PUB/nfbox" status --socket "$SOCK" 2>&1)"
out=$(as_nobody "$PUB/nfbox" reload --socket "$SOCK" 2>&1)
[ $? = 1 ] && echo "$out" | grep -q "permission denied" && t_ok group-may-not-reload || t_fail group-may-not-reload "$out"
out=$(as_nobody "$PUB/nfbox" stop --keep --socket "$SOCK" 2>&1)
[ $? = 1 ] && echo "$out" | grep -q "permission denied" && kill -0 "$NFBOX_PID" 2>/dev/null &&
	t_ok group-may-not-stop || t_fail group-may-not-stop "$out"
as_nobody "$PUB/nfbox" set list --socket "$SOCK" >/dev/null 2>&1 && t_ok group-may-list-sets ||
	t_fail group-may-list-sets "$(as_nobody "$PUB/nfbox" set list --socket "$SOCK" 2>&1)"
out=$(as_nobody "$PUB/nfbox" set add banned 192.0.2.1 --socket "$SOCK" 2>&1)
[ $? = 1 ] && echo "$out" | grep -q "permission denied" && t_ok group-may-not-change-sets || t_fail group-may-not-change-sets "$out"
# set-add reads its prefixes from a regular file sent with it: none, or a
# pipe the client could hold open forever, is refused at once.
out=$(/usr/bin/python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"set-add set=x\n"); print(s.recv(200).decode())' "$SOCK" 2>&1)
echo "$out" | grep -q "no prefixes were sent" && t_ok set-add-without-file || t_fail set-add-without-file "$out"
out=$(/usr/bin/python3 -c '
import os, socket, sys, time
r, w = os.pipe()
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
socket.send_fds(s, [b"set-add set=x\n"], [r])
s.settimeout(3)
print(s.recv(200).decode())' "$SOCK" 2>&1)
echo "$out" | grep -q "must come as a regular file" && t_ok set-add-pipe-refused || t_fail set-add-pipe-refused "$out"
out=$(as_stranger "$PUB/nfbox" status --socket "$SOCK" 2>&1)
[ $? = 1 ] && echo "$out" | grep -qi "permission denied" && t_ok stranger-refused || t_fail stranger-refused "$out"
as_user --reuid=65533 --regid=65533 --groups=65534 "$PUB/nfbox" status --socket "$SOCK" >/dev/null 2>&1 &&
	t_ok supplementary-group-may-read || t_fail supplementary-group-may-read "a member through its supplementary groups was refused"

# ---- one client class cannot lock out another ----
# A member of the socket group opens 64 log followers and 64 half-requests
# at once (and so does a runaway script of root's, 64 followers): root's
# status, set add and reload still answer within a second each. The
# member gets its share (16 connections, 8 of them followers), root
# keeps the last 16 slots, and each extra is told why.
as_nobody /usr/bin/python3 "$CTL" hold "$SOCK" 64 $'log\n' 8 >"$NS_TMP/hold-f" 2>&1 &
hf=$!
as_nobody /usr/bin/python3 "$CTL" hold "$SOCK" 64 "sta" 8 >"$NS_TMP/hold-h" 2>&1 &
hh=$!
/usr/bin/python3 "$CTL" hold "$SOCK" 64 $'log\n' 8 >"$NS_TMP/hold-r" 2>&1 &
hr=$!
wait_until 5 grep -q '^holding' "$NS_TMP/hold-f" && wait_until 5 grep -q '^holding' "$NS_TMP/hold-h" &&
	wait_until 5 grep -q '^holding' "$NS_TMP/hold-r" || t_fail lockout-setup "the holders did not connect"
timed() { # NAME COMMAND...: ok if it succeeds within 1 s
	local t0 rc ms out
	t0=$(date +%s%N)
	out=$("${@:2}" 2>&1)
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ $rc = 0 ] && [ $ms -lt 1000 ] && t_ok "$1 (${ms} ms)" || t_fail "$1" "rc $rc after ${ms} ms: $out"
}
# (the reload is of a small policy: the time is the socket's, not the
# compiler's 20,000 rules)
printf 'version: 1\nsets: { x: { dynamic: true } }\nhooks: { forward: { default: drop } }\nrules:\n  - { name: a, from: x, action: drop }\n' >"$NS_TMP/small.yaml"
timed root-status-while-locked-out ctl status
timed root-set-add-while-locked-out ctl set add x 192.0.2.77
timed root-set-del-while-locked-out ctl set del x 192.0.2.77
timed root-reload-while-locked-out ctl reload --policy "$NS_TMP/small.yaml"
wait $hf $hh $hr
held() { awk '/^busy/ { print $2 }' "$1"; }
t_check member-extra-followers-told-busy [ "$(held "$NS_TMP/hold-f")" -ge 56 ]
t_check root-extra-followers-told-busy [ "$(held "$NS_TMP/hold-r")" -ge 56 ]
out=$(/usr/bin/python3 "$CTL" last "$SOCK" 9 $'log\n' 2>&1)
t_check follower-limit-says-why grep -q "busy: uid 0 already follows the log 8 times" <<<"$out"
# (the holders' connections gone: the member gets in again)
wait_until 3 as_nobody "$PUB/nfbox" status --socket "$SOCK" || t_fail member-back "$(as_nobody "$PUB/nfbox" status --socket "$SOCK" 2>&1)"
out=$(as_nobody /usr/bin/python3 "$CTL" last "$SOCK" 20 "sta" 2>&1)
grep -q "busy: uid 65534 holds 16 control connections, its share" <<<"$out" && t_ok member-share-says-why ||
	t_fail member-share-says-why "the 20th connection of the member got: $out"
# Even if the socket file let anyone connect, the daemon asks who it is.
chmod 666 "$SOCK"
out=$(as_stranger "$PUB/nfbox" status --socket "$SOCK" 2>&1)
[ $? = 1 ] && echo "$out" | grep -q "only root and the socket group may use the control socket" && t_ok peercred-checked ||
	t_fail peercred-checked "$out"
chmod 660 "$SOCK"

# ---- SIGTERM with a stuck client ----
t0=$(date +%s%N)
kill -TERM $NFBOX_PID
wait $NFBOX_PID
ms=$((($(date +%s%N) - t0) / 1000000))
[ $ms -lt 3000 ] && t_ok sigterm-with-stuck-client || t_fail sigterm-with-stuck-client "took ${ms} ms"
kill $stuck 2>/dev/null
wait $stuck 2>/dev/null
NFBOX_PID=

# ---- a directory someone else controls ----
EVIL=$(mktemp -d /tmp/nfbox-evil.XXXXXX)
chown nobody:nogroup "$EVIL"
ip netns exec "$NS_A" "$NFBOX" run --policy "$NS_TMP/big.yaml" --state-dir "$NS_TMP/state" --socket "$EVIL/nfbox.sock" --pin-dir "$NFBOX_PINS" \
	>/dev/null 2>"$NS_TMP/evil.err"
rc=$?
[ $rc = 1 ] && grep -q "belongs to uid 65534" "$NS_TMP/evil.err" && t_ok daemon-refuses-foreign-dir ||
	t_fail daemon-refuses-foreign-dir "rc $rc: $(cat "$NS_TMP/evil.err")"
as_nobody /usr/bin/python3 "$CTL" fake "$EVIL/nfbox.sock" 4 >"$NS_TMP/fake" 2>&1 &
fake=$!
# A stand-in that would answer: only then is the refusal the CLI's own.
listening_at() { ss -xln | grep -qF " $1 "; } # PATH
wait_until 5 listening_at "$EVIL/nfbox.sock" || t_fail cli-refuses-foreign-dir "the stand-in did not listen"
out=$("$NFBOX" reload --socket "$EVIL/nfbox.sock" 2>&1)
rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "not trusting the control socket" && ! echo "$out" | grep -q "generation 99" &&
	t_ok cli-refuses-foreign-dir || t_fail cli-refuses-foreign-dir "rc $rc: $out"
kill $fake 2>/dev/null
wait $fake 2>/dev/null
rm -rf "$EVIL"

# ---- files ----
# An untrusted policy file is the policy's fault: exit status 78, no restart.
cp "$NS_TMP/big.yaml" "$NS_TMP/loose.yaml"
chmod 666 "$NS_TMP/loose.yaml"
ip netns exec "$NS_A" "$NFBOX" run --policy "$NS_TMP/loose.yaml" --state-dir "$NS_TMP/state" --socket "$SOCK" --pin-dir "$NFBOX_PINS" \
	>/dev/null 2>"$NS_TMP/loose.err"
rc=$?
[ $rc = 78 ] && grep -q "is writable by everyone: chmod go-w" "$NS_TMP/loose.err" && t_ok start-refuses-writable-policy ||
	t_fail start-refuses-writable-policy "rc $rc: $(cat "$NS_TMP/loose.err")"
start || { t_fail restart "$(cat "$NS_TMP/nfbox.err")"; t_done; }
out=$(ctl reload --policy "$NS_TMP/loose.yaml" 2>&1)
[ $? = 3 ] && echo "$out" | grep -q "writable by everyone" && t_ok reload-refuses-writable-policy ||
	t_fail reload-refuses-writable-policy "$out"
printf '192.0.2.0/24\n' >"$NS_TMP/set.txt"
chown nobody "$NS_TMP/set.txt"
printf 'version: 1\nsets: { s: { file: set.txt } }\nhooks: { forward: { default: drop } }\nrules:\n  - { name: a, from: s, action: accept }\n' \
	>"$NS_TMP/withset.yaml"
out=$(ctl reload --policy "$NS_TMP/withset.yaml" 2>&1)
[ $? = 3 ] && echo "$out" | grep -q "withset.yaml:2:.*cannot read set file.*belongs to uid 65534" && t_ok set-file-owner-checked ||
	t_fail set-file-owner-checked "$out"
# The file a client passes, even from a mount namespace the daemon cannot see.
out=$(unshare --mount --propagation private sh -c 'mkdir -p "$1/hidden" && mount -t tmpfs none "$1/hidden" &&
	cp "$1/big.yaml" "$1/hidden/p.yaml" && "$2" reload --socket "$3" --policy "$1/hidden/p.yaml"' \
	sh "$NS_TMP" "$NFBOX" "$SOCK" 2>&1)
[ $? = 0 ] && echo "$out" | grep -q "hidden/p.yaml: 20002 rules enforced" && t_ok reload-reads-passed-file ||
	t_fail reload-reads-passed-file "$out"
nfbox_stop
start --allow-unsafe-files || { t_fail unsafe-start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
ctl reload --policy "$NS_TMP/loose.yaml" >/dev/null 2>&1 && t_ok allow-unsafe-files || t_fail allow-unsafe-files "$(ctl reload --policy "$NS_TMP/loose.yaml" 2>&1)"

# ---- a log follower that falls behind ----
# The CLI's output goes to a reader that sleeps 5 s first (a FIFO, so that
# $! is nfbox itself, stopped with SIGINT as an operator's Ctrl-C would).
mkfifo "$NS_TMP/log.fifo"
/usr/bin/python3 "$CTL" follow-slow "$SOCK" 4 6 >"$NS_TMP/slow" 2>&1 &
slow=$!
(exec 3<"$NS_TMP/log.fifo"; sleep 5; cat <&3 >/dev/null) &
reader=$!
"$NFBOX" log --socket "$SOCK" >"$NS_TMP/log.fifo" 2>"$NS_TMP/log.err" &
logp=$!
# fifo_bytes: what nfbox log has written and the reader not yet read
fifo_bytes() {
	/usr/bin/python3 -c 'import fcntl, os, struct, sys, termios
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)
print(struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0])' "$NS_TMP/log.fifo"
}
# Both follow once each has an event (a logged datagram, sent until then):
# nfbox log in the FIFO, follow-slow (which reads nothing yet) in its
# socket, beyond the 3 bytes of "ok".
both_follow() {
	in_c "$NET" udp-blast $S4 7000 1 >/dev/null 2>&1
	[ "$(fifo_bytes)" -gt 0 ] && queued $slow 3
}
wait_until 5 both_follow || t_fail follower-told-missed "the two followers did not both get an event within 5 s"
in_c "$NET" udp-blast $S4 7000 30000 >/dev/null 2>&1
# The reader reads after its 5 s: then nfbox log learns what it missed.
wait_until 15 grep -q "missed: " "$NS_TMP/log.err" || t_fail log-cli-exits-1-when-missed "nfbox log said nothing missed within 15 s"
kill -INT $logp
wait $logp
log_rc=$?
wait $slow $reader
grep -qE "missed [1-9]" "$NS_TMP/slow" && t_ok follower-told-missed || t_fail follower-told-missed "$(cat "$NS_TMP/slow")"
[ "$log_rc" = 1 ] && grep -q "events missed in all" "$NS_TMP/log.err" && t_ok log-cli-exits-1-when-missed ||
	t_fail log-cli-exits-1-when-missed "rc $log_rc: $(tail -n 3 "$NS_TMP/log.err")"
t_done
