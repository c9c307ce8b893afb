#!/bin/bash
# Connection limits (limit: { connections: N }), on the forward hook:
# - per source, with an overload set: a client holds 3 SSH connections, its
#   4th is refused and puts it into the overload set at once (checked
#   300 ms after that SYN), with the rule and time in `nfbox set list`;
#   then an earlier rule drops everything it sends, while a second client
#   (another source address) is not affected and has 3 of its own;
# - per rule, without overload: 2 connections to the web port among all
#   clients, the third refused, nobody banned;
# - counts are given back: when the held connections close (TCP), when
#   conntrack forgets them (conntrack -F);
# - SYN then RST, again and again, from one source: each connection is
#   closed before the next opens, so it is neither refused nor banned, even
#   with the daemon stopped (the kernel's path gives the counts back; the
#   planted bug conns-keep-closed, in the test build, fails it);
# - the daemon killed while the client's 3 connections close, then started
#   again on the pins: the client's next connection is let in and the
#   client is not banned (set list, traffic, the kernel's set); so too when
#   conntrack forgot the connections while no daemon ran and an attempt
#   meanwhile was refused; a real 4th connection after that is refused and
#   bans. The planted bug conns-adopt-trusting (adopted counts judge and
#   ban) fails the second case, and with conns-keep-closed the first too;
# - a reload that keeps the rule keeps its count (BPF backend).
# Over-limit attempts are counted under the rule (over_limit).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
C4B=198.51.100.3 # the second client

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
in_c ip addr add $C4B/24 dev c0
cat >"$NS_TMP/p.yaml" <<YAML
version: 1
interfaces:
  lan: [lan0]
sets:
  servers: [$S4, $S6]
  overloaded: { dynamic: true }
hooks:
  forward: { default: drop }
options: { established: accept }
rules:
  - { name: banned, in: lan, from: overloaded, action: drop }
  - name: ssh
    in: lan
    to: servers
    service: tcp/22
    state: new
    limit: { connections: 3, per: source, overload: overloaded, timeout: 60s }
    action: accept
  - { name: web, in: lan, to: servers, service: tcp/80, state: new, limit: { connections: 2 }, action: accept }
  - { name: other, in: lan, to: servers, service: tcp/81, state: new, action: accept }
YAML
nfbox_start "$NS_TMP/p.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
SINKS=()
for port in 22 80 81; do
	ip netns exec "$NS_S" timeout 120 "$NET" tcp-sink $port 110 &
	SINKS+=("$!")
done
# every sink listening, not only the last started: under load they come up
# in any order, and a first hold met port 22 closed (held 0, refused), so
# that every case after it failed
listening() { ip netns exec "$NS_S" ss -ltn | awk '{ print $4 }' >"$NS_TMP/listen" && for p in 22 80 81; do grep -q ":$p\$" "$NS_TMP/listen" || return 1; done; }
wait_until 10 listening || t_fail sinks-listening "$(ip netns exec "$NS_S" ss -ltn)"

declare -A HOLDER
hold() { # NAME SRC PORT COUNT TIMEOUT: COUNT connections held in the background; output in NS_TMP/NAME
	ip netns exec "$NS_C" timeout 100 "$NET" tcp-hold $S4 "$3" "$4" "$5" 90 "$2" >"$NS_TMP/$1" 2>&1 &
	HOLDER[$1]=$!
	wait_until 10 grep -q '^held' "$NS_TMP/$1"
}
held() { sed -n 's/^held //p' "$NS_TMP/$1"; }
over() { # RULE: its over-limit count
	nfbox_ctl stats --json | jq -r --arg r "$1" 'first((.rules[] | select(.rule == $r) | .over_limit), -1)'
}
probe() { in_c "$NET" tcp-probe "$@" | cut -d' ' -f1; } # HOST PORT TIMEOUT [SRC]
unhold() { for n in "$@"; do kill "${HOLDER[$n]}" 2>/dev/null; done; }

# Per source, with overload: three fit, the fourth does not.
hold a1 $C4 22 3 2
t_check three-fit [ "$(held a1)" = 3 ]
hold a2 $C4 22 1 0.3
t_check fourth-refused [ "$(held a2)" = 0 ]
t_check overload-listed-at-once grep -Eq "^$C4	expires in (59|60)s	added [0-9T:-]+Z by rule ssh$" <(nfbox_ctl set list overloaded)
t_check overload-json sh -c "'$NFBOX' set list overloaded --json --socket '$NFBOX_SOCK' | grep -q '\"by\": *\"rule ssh\"'"
t_check over-counted [ "$(over ssh)" -ge 1 ]
t_check overload-logged grep -q "overloaded: $C4 added by rule ssh" "$NS_TMP/nfbox.err"
t_check banned-elsewhere [ "$(probe $S4 81 1)" = timeout ]
t_check banned-counted [ "$(nfbox_count forward banned)" -ge 1 ]
t_check other-source-unaffected [ "$(probe $S4 81 2 $C4B)" = open ]
hold b1 $C4B 22 4 1
t_check other-source-own-count [ "$(held b1)" = 3 ]
t_check other-source-in-overload grep -q "^$C4B	" <(nfbox_ctl set list overloaded)
nfbox_ctl set del overloaded $C4 $C4B >/dev/null

# Per rule: two among all clients, the third refused, nobody banned.
hold w1 $C4 80 1 2
hold w2 $C4B 80 2 1
t_check per-rule-two [ "$(held w1)$(held w2)" = 11 ]
t_check per-rule-no-overload [ "$(nfbox_ctl set list overloaded | grep -vc '^set ')" = 0 ]
# A reload that keeps the rules keeps their counts (with nftables, the
# per-source ones: a rule's own ct count goes with the rule).
nfbox_ctl reload >/dev/null
t_check reload-keeps-source-count [ "$(probe $S4 22 1 $C4B)" = timeout ]
nfbox_ctl set del overloaded $C4B >/dev/null
bpf_backend && t_check reload-keeps-rule-count [ "$(probe $S4 80 1)" = timeout ]

# Given back when TCP closes: the holder goes, a new connection fits.
unhold a1 a2 b1 w1
t_check released-on-close wait_until 5 sh -c "ip netns exec '$NS_C' '$NET' tcp-probe $S4 80 1 | grep -q ^open"

# Given back when conntrack forgets: three held, flushed, three more fit.
hold c1 $C4 22 3 2
t_check three-again [ "$(held c1)" = 3 ]
in_a conntrack -F >/dev/null 2>&1
sleep 0.5
hold c2 $C4 22 3 2
t_check released-on-flush [ "$(held c2)" = 3 ]
nfbox_ctl set del overloaded $C4 >/dev/null 2>&1
in_a conntrack -F >/dev/null 2>&1
unhold "${!HOLDER[@]}"
sleep 0.5

# SYN then RST, again and again, from one source (issue 39): each
# connection is closed before the next opens, so the source never holds
# more than one and is neither refused nor banned. The daemon is stopped
# meanwhile, so that what gives the counts back is the kernel's path
# alone: the classifier on the closing packets, nftables' ct count at the
# source's next connection. The pairs are 20 ms apart: ct count looks for
# closed connections at most once a jiffy (policy/README.md).
listed() { nfbox_ctl set list overloaded | grep -q "^$1	"; }
unlisted() { ! listed "$1"; }
over0=$(over ssh)
kill -STOP "$NFBOX_PID"
in_c "$NET" syn-rst $S4 22 8 0.02 $C4 >/dev/null
kill -CONT "$NFBOX_PID"
t_check synrst-none-over [ "$(over ssh)" = "$over0" ]
hold s1 $C4B 22 4 0.3 # reported after the burst: once it is banned, the burst's reports were heard
t_check synrst-other-banned wait_until 3 listed $C4B
t_check synrst-not-banned unlisted $C4
hold s2 $C4 22 3 2
t_check synrst-counts-nothing [ "$(held s2)" = 3 ]
unhold s1 s2
nfbox_ctl set del overloaded $C4 $C4B >/dev/null 2>&1
all_closed() { ! in_a conntrack -L -p tcp --dport 22 2>/dev/null | grep -vw -e TIME_WAIT -e CLOSE | grep -q .; }
wait_until 5 all_closed

# The daemon killed while the client's 3 connections close, then started
# again on the pins (issue 39): the client's next connection is let in,
# and the client is not banned. (Their closing packets gave the counts
# back in the kernel; the next check takes that path away.)
kernel_banned() { # ADDR: in the kernel's copy of the overload set
	if bpf_backend; then
		bpftool -j map dump pinned "$NFBOX_PINS/maps/nfb_dyn4" | /usr/bin/python3 -c '
import ipaddress, json, sys
for e in json.load(sys.stdin):
    k = bytes(int(x, 16) for x in e["key"])
    print(ipaddress.IPv4Address(k[6:10]))' | grep -qx "$1"
	else
		in_a nft list set inet nfbox d_overloaded_4 | grep -qw "$1"
	fi
}
restart() { # kill -9, then the commands given, then a daemon on the pins
	kill -9 "$NFBOX_PID"
	wait "$NFBOX_PID" 2>/dev/null
	NFBOX_PID=
	"$@"
	nfbox_start "$NS_TMP/p.yaml" || t_fail restart "$(cat "$NS_TMP/nfbox.err")"
}
not_in_kernel() { ! kernel_banned "$1"; }
not_banned() { # NAME: C4 not in the overload set: nfbox set list, the kernel's set, its traffic
	t_check "$1-not-banned" unlisted $C4
	t_check "$1-not-banned-kernel" not_in_kernel $C4
	t_check "$1-not-banned-traffic" [ "$(probe $S4 81 1)" = open ]
}
close_d1() {
	unhold d1
	wait_until 5 all_closed
}
forget_e1() { # conntrack forgets them; an attempt meanwhile
	in_a conntrack -D -p tcp --dport 22 >/dev/null 2>&1
	probe $S4 22 0.5 >/dev/null
}
hold d1 $C4 22 3 2
t_check held-before-kill [ "$(held d1)" = 3 ]
restart close_d1
t_check adopted-next-accepted [ "$(probe $S4 22 2)" = open ]
not_banned adopted

# Connections conntrack forgot while no daemon ran (a flush here, a timeout
# elsewhere), so that no packet through the hooks gave their counts back;
# an attempt meanwhile is refused on those counts (BPF). The next daemon
# takes none of them for open until conntrack says so: the next
# connection is let in, and the overload reported while no daemon ran
# bans nobody.
hold e1 $C4 22 3 30
t_check held-again [ "$(held e1)" = 3 ]
restart forget_e1
bpf_backend && t_check forgotten-set-aside grep -q "3 connections counted while nobody listened" "$NS_TMP/nfbox.err"
t_check forgotten-next-accepted [ "$(probe $S4 22 2)" = open ]
not_banned forgotten
unhold e1

# The control: a real 4th connection after the restart is over and bans.
hold f1 $C4 22 3 2
t_check restart-three-fit [ "$(held f1)" = 3 ]
t_check restart-fourth-refused [ "$(probe $S4 22 0.5)" = timeout ]
t_check restart-fourth-banned wait_until 2 listed $C4
t_check restart-fourth-banned-kernel wait_until 2 kernel_banned $C4
t_check restart-fourth-banned-traffic [ "$(probe $S4 81 0.5)" = timeout ]

drops() { nfbox_ctl stats --json | jq -r --arg k "$1" '.drops[$k]'; }
t_check no-release-failed [ "$(drops conn_release_failed)" = 0 ]
t_check no-events-lost [ "$(drops conn_events_lost)" = 0 ]
unhold "${!HOLDER[@]}"
kill "${SINKS[@]}" 2>/dev/null
wait "${SINKS[@]}" "${HOLDER[@]}" 2>/dev/null
t_done
