#!/bin/bash
# An HA pair (ha:): keepalived and conntrackd run by nfbox, with real
# traffic through two switches (bridges) and a sync link (a third bridge),
# built by tests/lib/hapair.sh:
#
#   client -- [brl] --+-- lan0 fw1 wan0 --+-- [brw] -- server
#                     +-- lan0 fw2 wan0 --+
#                         sync0 (fw1, fw2) on [brs]
#
# The client opens a TCP connection and a UDP flow to the server; after
# that only the server sends, so a node without the flow's state drops
# every packet and nothing from inside recreates it. The primary (fw1)
# loses its links, or vanishes (its links and its whole namespace), or
# its nfbox is killed; the flow goes on through fw2 with the server's
# packets accepted as established, and comes back to fw1 when it returns.
# Each backend, with masquerade and without. Without the sync link the
# same flow breaks at
# failover (the test of the test). Most pairs advertise every 100 ms and
# must fail over within 1.5 s; one keeps the default 1 s and, its links
# cut, must take 2 s or more. No node's VRRP advert may be refused on output (a masquerade
# once made them clash in conntrack). `validate` refuses an advert below
# the floor and warns about a fast one without preempt-delay. Also: the
# configurations nfbox writes pass `keepalived -t` and conntrackd starts
# on them cleanly, each node's files are its own, status and metrics show
# the pair, a daemon killed is started again, a missing program is named
# with its package.
#
# The scenarios share nothing, so they run at once, each in namespaces
# ($BASE-K-*) and a directory of its own; the output of each is printed
# when it is done, in the order they started, with a "#" line of where its
# time went. They wait for conditions, with deadlines; the fixed waits left
# are windows in which something must NOT happen (fw2 becoming master at
# the election, the flow coming back without the sync link, keepalived
# dying after a SIGHUP). HA_ONLY=NAME runs one scenario.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/hapair.sh
NET=$PWD/tests/lib/net.py
# The client the waits poll with, ten times a second in several pairs at
# once: the release build (ASan's start-up is most of a status call). The
# checks themselves ask through $NFBOX.
RELEASE=${NFBOX_BIN_RELEASE:-$PWD/build/nfbox}
[ -x "$RELEASE" ] || RELEASE=$NFBOX
BASE=nfh$$
TOP=$(mktemp -d /tmp/nfbox-ha.XXXXXX)
# A job's own (job sets them): the namespaces' prefix and the directory.
P=$BASE-0
SW=$P-sw C=$P-c S=$P-s
TMP=$TOP/main
declare -A PID=()
JOBS=() NAMES=()

cleanup() {
	local j ns
	for j in "${JOBS[@]}"; do [ -n "$j" ] && kill -TERM "$j" 2>/dev/null; done
	wait 2>/dev/null
	for ns in $(ip netns list 2>/dev/null | awk -v p="$BASE-" 'index($1, p) == 1 { print $1 }'); do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$ns" 2>/dev/null
	done
	rm -rf "$TOP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for prog in keepalived conntrackd; do
	command -v $prog >/dev/null || PATH=$PATH:/usr/sbin:/sbin
	command -v $prog >/dev/null || { t_fail ha-programs "$prog is not installed (packaging/install-deps.sh installs it)"; t_done; }
done

# ---- time ----
# sleep_until MICROSECONDS: wait until then (the clock of now_us).
sleep_until() {
	local d=$(($1 - $(now_us)))
	[ "$d" -gt 0 ] && sleep "$((d / 1000000)).$(printf %06d $((d % 1000000)))"
	return 0
}
# Where a job's time went: phase NAME ends the phase begun by the last one.
PH_T=$(now_us) PH=
phase() {
	local t d
	t=$(now_us)
	d=$((t - PH_T))
	PH+=" $1 $((d / 1000000)).$((d / 100000 % 10))"
	PH_T=$t
}

# ha N FILTER: of node N's status["ha"] (a jq filter; null as such).
ha() { ctl "$1" status --json 2>/dev/null | jq -r ".ha | objects | $2" 2>/dev/null; }
# DAEMON of node N running, restarted COUNT times: restarted N DAEMON COUNT
restarted() { local v; v=$(hq "$1" "\"$2\":\\{\"pid\":([0-9]+),\"restarts\":([0-9]+)") && [[ $v =~ ^[1-9][0-9]*\ $3$ ]]; }
daemon_running() { local v; v=$(hq "$1" "\"$2\":\\{\"pid\":([0-9]+)") && [ "$v" -gt 0 ]; } # N DAEMON
plus() { awk -v t="$1" -v d="$2" 'BEGIN { printf "%.3f", t + d }'; }
# Lines of PROTO the client received after time T: arrived PROTO T
arrived() { awk -v p="$1" -v t="$2" '$1 == p && $2 > t { n++ } END { print n + 0 }' "$TMP/watch" 2>/dev/null || echo 0; }
# The longest time no udp line arrived, from T on.
gap() { awk -v t="$1" '$1 == "udp" && $2 > t - 1 { if (last && $2 - last > g) g = $2 - last; last = $2 } END { printf "%.2f", g }' "$TMP/watch"; }
# The pair's advert in ms.
advert_ms() {
	local a=${ADVERT:-1s}
	case $a in *ms) echo "${a%ms}" ;; *s) echo $((${a%s} * 1000)) ;; esac
}
# Both flows delivered 10 lines after T.
flowing() { [ "$(arrived tcp "$1")" -ge 10 ] && [ "$(arrived udp "$1")" -ge 10 ]; }
flows_after() { wait_until "$2" flowing "$1"; } # T SECONDS
# Any line of either flow after T.
any_arrived() { [ "$(arrived tcp "$1")" -gt 0 ] || [ "$(arrived udp "$1")" -gt 0 ]; }
established() { # N: packets the node accepted as established
	ctl "$1" stats --json | jq -r .established.packets
}
# keepalived and conntrackd processes in node N's namespace.
daemons_left() { ip netns pids $P-f$1 2>/dev/null | xargs -r ps -o comm= -p 2>/dev/null | grep -cE 'keepalived|conntrackd'; }
no_daemons_left() { [ "$(daemons_left "$1")" -eq 0 ]; }
# What a flow that did not survive the failover left, for the log: fw2's
# log and conntrack entries of the test's port, its external cache, its
# verdict counters, both ends' sockets, the server's output and the last
# lines the client saw.
lost_flow() { # T0
	echo "# fw2's log:"
	tail -15 "$TMP/n2/err"
	echo "# fw2's conntrack entries of port 5000:"
	ip netns exec $P-f2 conntrack -L 2>/dev/null | grep -w 'dport=5000'
	echo "# fw2's external cache:"
	ip netns exec $P-f2 conntrackd -C "$TMP/n2/nfbox.ha/conntrackd.conf" -e 2>/dev/null | grep -w 'dport=5000'
	echo "# fw2's counters:"
	ctl 2 stats --json 2>/dev/null | jq -c 'del(.rules)'
	echo "# the client's and the server's sockets:"
	ip netns exec $C ss -tnio 2>/dev/null | grep -A1 ':5000'
	ip netns exec $S ss -tnio 2>/dev/null | grep -A1 ':5000'
	echo "# the server's output (\"tcp send failed\": its connection was reset or broke):"
	cat "$TMP/serve"
	echo "# the client's last lines after the failover ($1):"
	awk -v t="$1" '$2 > t - 2' "$TMP/watch" | grep -v '^udp' | tail -5
}
# scenario NAME BACKEND NAT FAILURE(links|netns|crash) SYNC(sync|nosync) [checks|reloads]
scenario() {
	local name=$1 backend=$2 nat=$3 how=$4 sync=$5 then=${6:-} t0 t2 tm est0 saw left g
	local adv=$(($(advert_ms) * 1000)) # us
	topology && node 1 && node 2 || { t_fail "$name-setup" "cannot build the namespaces"; return; }
	if [ "$sync" = nosync ]; then
		ip -n $SW link set p1s down
		ip -n $SW link set p2s down
	fi
	phase setup
	start 1 "$backend" "$nat" && start 2 "$backend" "$nat" ||
		{ t_fail "$name-start" "$(cat "$TMP"/n*/err | grep -v note | tail -5)"; return; }
	t2=$(now_us)
	phase start
	wait_role 1 master 15 || { t_fail "$name-elect" "fw1 $(ha 1 .role), fw2 $(ha 2 .role)"; return; }
	tm=$(now_us)
	phase elect
	[ "$(ha 1 .advert_ms)" = "$(advert_ms)" ] && t_ok "$name-status-advert" ||
		t_fail "$name-status-advert" "status says $(ha 1 .advert_ms) ms, the policy $(advert_ms) ms"
	ctl 1 status --json >"$TMP/ha-status.json" 2>/dev/null
	out=$(/usr/bin/python3 tests/lib/keysdoc.py docs/report.md "$TMP/ha-status.json" 2>&1) &&
		t_ok "$name-status-keys-documented" || t_fail "$name-status-keys-documented" "$out"
	if [ "$backend" = nftables ]; then
		saw=$("$NFBOX" diff "$TMP/n1/policy.yaml" "$TMP/n2/policy.yaml")
		[ "$saw" = "ha priority: 150 -> 100" ] && [ "$(ha 2 .peer)" = 203.0.113.1 ] && t_ok "$name-files-differ-in-priority" ||
			t_fail "$name-files-differ-in-priority" "diff: $saw; fw2's peer $(ha 2 .peer)"
	fi
	(ip netns exec $S "$NET" push-serve 5000 70 >"$TMP/serve" 2>&1 &)
	wait_until 5 eval "ip netns exec $S ss -lntu | grep -q ':5000 '"
	(ip netns exec $C "$NET" push-watch 198.51.100.10 5000 65 "$TMP/watch" >/dev/null 2>&1 &)
	if ! flows_after 0 5; then
		t_fail "$name-flow" "no traffic through fw1: $(cat "$TMP/serve")"
		return
	fi
	saw=$(awk '/^peer tcp/ { print $3 }' "$TMP/serve")
	[ "$saw" = "$([ "$nat" = masq ] && echo 198.51.100.1 || echo 192.0.2.10)" ] && t_ok "$name-source" ||
		t_fail "$name-source" "the server saw $saw"
	phase flow
	# fw2 would be master 3.6 adverts after its start if it did not hear
	# fw1 (VRRP blocked, say): it must still be backup two adverts (at
	# least 0.5 s) after fw1 became master and 3.6 adverts and 1 s after
	# its own start, and never have been master.
	sleep_until $((tm + (adv > 250000 ? 2 * adv : 500000) > t2 + 36 * adv / 10 + 1000000 ?
		tm + (adv > 250000 ? 2 * adv : 500000) : t2 + 36 * adv / 10 + 1000000))
	[ "$(ha 2 .role)" = backup ] && [ "$(ha 1 .role)" = master ] && ! grep -qE 'ha: [a-z]+ -> master' "$TMP/n2/err" ||
		{ t_fail "$name-elect" "fw1 $(ha 1 .role), fw2 $(ha 2 .role): $(grep -E 'ha: [a-z]+ -> ' "$TMP/n2/err")"; return; }
	phase elect-window
	if [ "$sync" = sync ]; then
		# fw2 holds both connections before fw1 fails.
		wait_until 15 external_at_least 2 2
		[ "$(external 2)" -ge 2 ] 2>/dev/null && t_ok "$name-synced" ||
			t_fail "$name-synced" "fw2's external cache: $(external 2) connections"
		phase sync
	fi
	est0=$(established 2)
	t0=$(date +%s.%N)
	case $how in
	links) ip -n $SW link set p1l down; ip -n $SW link set p1w down ;;
	netns)
		# The node vanishes: its processes, then at once its links, as a
		# machine that loses its power. Its namespace alone, deleted,
		# forwarded on while the kernel tore it down, and once answered
		# the server's next segment with a RST after the kernel had
		# dropped its conntrack entries (the NAT binding gone, the
		# virtual address still local): the flow was lost at the
		# failover (CI's Debian 13 leg: the server's TCP sender failed).
		{ ip netns pids $P-f1 | xargs -r kill -9; wait "${PID[1]}"; } 2>/dev/null
		for l in p1l p1w p1s; do ip -n $SW link del $l; done
		ip netns del $P-f1
		PID[1]= ;;
	crash) kill -9 "${PID[1]}"; wait "${PID[1]}" 2>/dev/null; PID[1]= ;;
	esac
	wait_role 2 master 10 || t_fail "$name-takeover" "fw2 is $(ha 2 .role)"
	phase takeover
	if [ "$sync" = nosync ]; then
		# The test of the test: fw2 is master, but without the state the
		# server's packets are new ones from outside, and dropped: not
		# one line arrives, UDP's every 50 ms nor TCP's retransmissions
		# (0.6, 1.4, 3 and 6.2 s after the loss): for 12 s (1 s adverts,
		# a takeover after 3 s or more), or 4 s (sub-second).
		if ! wait_until $((adv < 1000000 ? 4 : 12)) any_arrived "$(plus "$t0" 1)"; then
			t_ok "$name-breaks-without-sync"
		else
			t_fail "$name-breaks-without-sync" "tcp $(arrived tcp "$(plus "$t0" 1)"), udp $(arrived udp "$(plus "$t0" 1)") lines arrived after the failover"
		fi
		phase no-flow-window
		return
	fi
	if flows_after "$(plus "$t0" 1)" 20; then
		# The advert in force: a master that falls silent is replaced
		# after three adverts and a skew, from its last; 1 s adverts
		# leave the flow at least 2.6 s without a packet, 100 ms ones
		# about 0.4 s. Only links cut at once: a crash is no silence
		# (keepalived's last advert hands over at once), and a node that
		# vanished (links and namespace) is the same silence, but the
		# netns scenarios advertise every 100 ms anyway.
		g=$(gap "$t0")
		if awk -v g="$g" -v a="$adv" -v h="$how" 'BEGIN { exit !(a < 1000000 ? g < 1.5 : h != "links" || g >= 2) }'; then
			t_ok "$name-failover (advert ${ADVERT:-1s}: udp stopped for $g s)"
		else
			t_fail "$name-failover" "advert ${ADVERT:-1s}: udp stopped for $g s (1s adverts: 2.6 s or more; 100ms: about 0.4 s)"
		fi
	else
		t_fail "$name-failover" "after the failover: tcp $(arrived tcp "$t0"), udp $(arrived udp "$t0") lines; fw2: $(grep -c . "$TMP/n2/err") log lines"
		lost_flow "$t0"
	fi
	phase failover-flows
	[ "$(established 2)" -gt "$est0" ] && t_ok "$name-established-on-backup" ||
		t_fail "$name-established-on-backup" "fw2 accepted no packet as established"
	# Every virtual address moved, the IPv6 one (VRRPv3 over IPv6) too.
	[ "$(ha 2 '[.virtual[].state] | join(" ")')" = "master master master" ] &&
		ip -n $P-f2 -6 addr show dev lan0 | grep -q '2001:db8:1::1/64' && t_ok "$name-all-addresses-moved" ||
		t_fail "$name-all-addresses-moved" "fw2: $(ha 2 .virtual)"
	if [ "$how" = crash ]; then
		# keepalived and conntrackd went with the nfbox that ran them
		# (within the second after the takeover).
		wait_until 1 no_daemons_left 1
		left=$(daemons_left 1)
		[ "$left" -eq 0 ] && t_ok "$name-daemons-follow-nfbox" || t_fail "$name-daemons-follow-nfbox" "$left left running"
	fi
	# Failback: fw1 comes back and takes over again (preempt-delay 1).
	case $how in
	links) ip -n $SW link set p1l up; ip -n $SW link set p1w up ;;
	netns) node 1 && start 1 "$backend" "$nat" || t_fail "$name-restart" "$(tail -3 "$TMP/n1/err")" ;;
	crash) rm -f "$TMP/n1/out"; start 1 "$backend" "$nat" || t_fail "$name-restart" "$(tail -3 "$TMP/n1/err")" ;;
	esac
	phase restore
	if wait_role 1 master 20; then
		t0=$(date +%s.%N)
		phase fw1-master
		flows_after "$(plus "$t0" 1)" 20 && t_ok "$name-failback" ||
			t_fail "$name-failback" "after fw1 came back: tcp $(arrived tcp "$t0"), udp $(arrived udp "$t0") lines"
	else
		t_fail "$name-failback" "fw1 is $(ha 1 .role), fw2 $(ha 2 .role)"
	fi
	phase failback-flows
	# Each master's adverts left: nothing dropped them on output (with
	# NAT, a tuple clash did: keepalived's sendmsg failed with EPERM).
	saw=$(grep -h 'send advert error' "$TMP"/n*/err | head -1)
	[ -z "$saw" ] && t_ok "$name-adverts-sent" || t_fail "$name-adverts-sent" "$saw"
	[ -n "$then" ] && $then && phase "$then"
}

# ---- what a scenario checks besides, once fw1 is master again: files,
# status, metrics, supervision (bpf-plain-links); reloads (bpf-plain-crash) ----
checks() {
	local d1 d2 pid
	d1=$(ha 1 .directory)
	d2=$(ha 2 .directory)
	[ -n "$d1" ] && [ "$d1" != "$d2" ] && [ -f "$d1/keepalived.conf" ] && [ -f "$d2/conntrackd.conf" ] &&
		t_ok files-per-node || t_fail files-per-node "fw1 $d1, fw2 $d2"
	case "$d1" in "$TMP"/n1/*) t_ok files-beside-socket ;; *) t_fail files-beside-socket "$d1" ;; esac
	ip netns exec $P-f1 keepalived -t -f "$d1/keepalived.conf" >"$TMP/ktest" 2>&1 && t_ok keepalived-config-test ||
		t_fail keepalived-config-test "$(head -5 "$TMP/ktest")"
	! grep -E 'error: (conntrackd|keepalived):' "$TMP"/n*/err && grep -q 'conntrackd: initialization completed' "$TMP/n1/err" &&
		t_ok conntrackd-clean-start || t_fail conntrackd-clean-start "$(grep conntrackd "$TMP/n1/err" | head -5)"
	[ "$(host_files)" = "$HOST_FILES" ] && t_ok no-host-files || t_fail no-host-files "now: $(host_files)"
	ctl 1 status >"$TMP/status"
	grep -qE '^ha: +master since .* was backup' "$TMP/status" && grep -q 'peer 203.0.113.2 over sync0' "$TMP/status" &&
		grep -qE 'sync: [0-9]+ connections held' "$TMP/status" && t_ok status-text || t_fail status-text "$(grep -A8 '^ha:' "$TMP/status")"
	ctl 1 metrics >"$TMP/metrics"
	grep -q '^nfbox_ha_role{role="master"} 1$' "$TMP/metrics" && grep -q '^nfbox_ha_transitions_total [1-9]' "$TMP/metrics" &&
		grep -qE '^nfbox_ha_sync_messages_total\{direction="sent"\} [1-9]' "$TMP/metrics" && t_ok metrics ||
		t_fail metrics "$(grep nfbox_ha "$TMP/metrics" | head)"
	# A daemon that dies is started again; fw2 goes back to backup.
	pid=$(ha 2 .conntrackd.pid)
	kill -9 "$pid"
	wait_until 8 restarted 2 conntrackd 1
	[ "$(ha 2 .conntrackd.restarts)" = 1 ] && [ "$(ha 2 .conntrackd.pid)" != 0 ] &&
		grep -q 'conntrackd exited (killed by signal 9' "$TMP/n2/err" && t_ok conntrackd-restarted ||
		t_fail conntrackd-restarted "$(ha 2 .conntrackd)"
	pid=$(ha 2 .keepalived.pid)
	kill -9 "$pid"
	wait_until 8 eval 'restarted 2 keepalived 1 && role_is 2 backup'
	[ "$(ha 2 .keepalived.restarts)" = 1 ] && [ "$(ha 2 .role)" = backup ] && t_ok keepalived-restarted ||
		t_fail keepalived-restarted "$(ha 2 .keepalived), role $(ha 2 .role)"
	# A clean stop takes both daemons along.
	pid=$(ha 1 .keepalived.pid)
	stop_node 1
	! kill -0 "$pid" 2>/dev/null && [ ! -e "$d1/conntrackd.lock" ] && t_ok clean-stop || t_fail clean-stop "keepalived $pid still runs"
}

reloads() {
	local d2 kpid cpid
	d2=$(ha 2 .directory)
	# Reloads: a changed section makes keepalived read its file again
	# (same process, still there a second later); a bad one changes
	# nothing; without ha: the pair stops, and a reload with it starts it
	# again.
	kpid=$(ha 2 .keepalived.pid)
	cpid=$(ha 2 .conntrackd.pid)
	policy 2 bpf plain | sed 's/preempt-delay: 1/preempt-delay: 3/' >"$TMP/n2/p2.yaml"
	ctl 2 reload --policy "$TMP/n2/p2.yaml" >"$TMP/reload" 2>&1 &&
		wait_until 5 grep -q "keepalived's configuration changed: it reads it again" "$TMP/n2/err" &&
		grep -q 'preempt_delay 3' "$d2/keepalived.conf" && [ "$(ha 2 .keepalived.pid)" = "$kpid" ] &&
		[ "$(ha 2 .conntrackd.pid)" = "$cpid" ] && [ "$(ha 2 .role)" = backup ] &&
		t_ok reload-changes-keepalived || t_fail reload-changes-keepalived "$(cat "$TMP/reload"); $(ha 2 .)"
	policy 2 bpf plain | sed 's/id: 52/id: 0/' >"$TMP/n2/bad.yaml"
	! ctl 2 reload --policy "$TMP/n2/bad.yaml" >"$TMP/reload" 2>&1 && grep -q 'bad.yaml:.*VRRP id must be a number 1..255' "$TMP/reload" &&
		[ "$(ha 2 .keepalived.pid)" = "$kpid" ] && grep -q 'preempt_delay 3' "$d2/keepalived.conf" &&
		t_ok reload-bad-ha-keeps-pair || t_fail reload-bad-ha-keeps-pair "$(cat "$TMP/reload")"
	policy 2 bpf plain | sed '/^ha:/,$d' >"$TMP/n2/single.yaml"
	ctl 2 reload --policy "$TMP/n2/single.yaml" >"$TMP/reload" 2>&1 && [ "$(ctl 2 status --json 2>/dev/null | jq -r .ha)" = null ] &&
		! kill -0 "$kpid" 2>/dev/null && ! kill -0 "$cpid" 2>/dev/null && t_ok reload-without-ha-stops ||
		t_fail reload-without-ha-stops "$(cat "$TMP/reload"); ha $(ha 2 .)"
	ctl 2 reload --policy "$TMP/n2/p2.yaml" >"$TMP/reload" 2>&1 && wait_role 2 backup 10 && t_ok reload-with-ha-starts ||
		t_fail reload-with-ha-starts "$(cat "$TMP/reload"); role $(ha 2 .role)"
}

# ---- validate: an advert below the floor is refused at its place; a
# sub-second one with preempt-delay 0 is warned about ----
adverts() {
	local out rc
	ADVERT=50ms policy 1 bpf plain >"$TMP/floor.yaml"
	out=$("$NFBOX" validate "$TMP/floor.yaml" 2>&1)
	rc=$?
	[ $rc = 3 ] && [[ $out == *"floor.yaml:15:11: error: ha.advert 50ms is below the floor of 100ms"* ]] &&
		t_ok validate-advert-floor || t_fail validate-advert-floor "exit $rc: $out"
	ADVERT=100ms policy 1 bpf plain | sed 's/preempt-delay: 1/preempt-delay: 0/' >"$TMP/fast.yaml"
	out=$("$NFBOX" validate "$TMP/fast.yaml" 2>&1)
	rc=$?
	[ $rc = 0 ] && [[ $out == *"fast.yaml:15:11: warning: ha.advert 100ms with preempt-delay 0: a node that returns"* ]] &&
		! "$NFBOX" validate --strict "$TMP/fast.yaml" >/dev/null 2>&1 && t_ok validate-advert-failback-warning ||
		t_fail validate-advert-failback-warning "exit $rc: $out"
}

# fw1 alone, without switches: its sync0 and lan0 one veth pair, wan0 and
# x0 another, all up (the cases of one node that never forwards).
lone_node() {
	mkns $P-f1 && ip -n $P-f1 link add sync0 type veth peer name lan0 && ip -n $P-f1 link add wan0 type veth peer name x0 &&
		for l in sync0 lan0 wan0 x0; do ip -n $P-f1 link set $l up; done
}

# ---- a program missing: the error names its package; a sync interface
# without an address: enforcement goes on, the pair waits ----
missing() {
	local rc err
	mkdir -p "$TMP/bin"
	ln -s "$(command -v conntrackd)" "$TMP/bin/conntrackd"
	lone_node
	mkdir -p "$TMP/n1"
	policy 1 bpf plain >"$TMP/n1/policy.yaml"
	ip netns exec $P-f1 env PATH="$TMP/bin" "$NFBOX" run --policy "$TMP/n1/policy.yaml" --socket "$TMP/n1/nfbox.sock" --no-pin \
		--state-dir "$TMP/n1/state" >/dev/null 2>"$TMP/missing"
	rc=$?
	[ $rc -ne 0 ] && grep -q "needs keepalived, which is not installed.*apt install keepalived" "$TMP/missing" &&
		t_ok missing-keepalived-named || t_fail missing-keepalived-named "exit $rc: $(grep -v note "$TMP/missing" | tail -3)"
	rm "$TMP/bin/conntrackd"
	ln -s "$(command -v keepalived)" "$TMP/bin/keepalived"
	ip netns exec $P-f1 env PATH="$TMP/bin" "$NFBOX" run --policy "$TMP/n1/policy.yaml" --socket "$TMP/n1/nfbox.sock" --no-pin \
		--state-dir "$TMP/n1/state" >/dev/null 2>"$TMP/missing"
	rc=$?
	[ $rc -ne 0 ] && grep -q "needs conntrackd, which is not installed.*apt install conntrackd" "$TMP/missing" &&
		t_ok missing-conntrackd-named || t_fail missing-conntrackd-named "exit $rc: $(grep -v note "$TMP/missing" | tail -3)"
	phase missing
	ip netns exec $P-f1 "$NFBOX" run --policy "$TMP/n1/policy.yaml" --socket "$TMP/n1/nfbox.sock" --no-pin \
		--state-dir "$TMP/n1/state" >"$TMP/n1/out" 2>"$TMP/n1/err" &
	PID[1]=$!
	wait_until 20 ready 1
	err=$(ha 1 .error)
	[[ "$err" == *"sync interface sync0 has no ipv4 address"* ]] && [ "$(ha 1 .keepalived.pid)" = 0 ] &&
		t_ok sync-address-awaited || t_fail sync-address-awaited "error '$err'"
	ip -n $P-f1 addr add 203.0.113.1/30 dev sync0
	wait_until 10 daemon_running 1 keepalived
	[ "$(ha 1 .keepalived.pid)" != 0 ] && [ "$(ha 1 .conntrackd.pid)" != 0 ] && [ "$(ha 1 'if has("error") then .error else error("no error") end')" = null ] &&
		t_ok sync-address-then-started || { t_fail sync-address-then-started "$(ha 1 .)"; tail -20 "$TMP/n1/err"; }
	phase sync-address
}

# ---- another keepalived on this host: the pid files keepalived takes by
# default (in /run) locked while the pair starts. nfbox's keepalived must
# take files of its own and run: it was given its main and VRRP ones only,
# checked the others' defaults, and exited 0, "daemon is already running"
# (two appliances starting at once on one host met it: Debian 13's CI leg).
# The node runs in a mount namespace whose /run is a tmpfs of its own (the
# namespaces bound back in), so the host's /run is never touched. ----
foreign() {
	local holder
	lone_node
	ip -n $P-f1 addr add 203.0.113.1/30 dev sync0
	ip -n $P-f1 addr add 192.0.2.2/24 dev lan0
	ip -n $P-f1 addr add 198.51.100.2/24 dev wan0
	mkdir -p "$TMP/n1" "$TMP/netns"
	policy 1 bpf plain >"$TMP/n1/policy.yaml"
	# The other keepalived: POSIX locks (as keepalived takes them) on its
	# four default pid files, held while nfbox (its parent) runs.
	holder='import fcntl, os, sys, time
ppid = os.getppid()
held = [open(p, "w") for p in sys.argv[2:]]
for f in held:
    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
open(sys.argv[1], "w").close()
while os.getppid() == ppid:
    time.sleep(0.2)'
	unshare -m --propagation private bash -c '
		mount --rbind /run/netns "$1/netns" && mount -t tmpfs nfbox-run /run && mkdir /run/netns &&
			mount --rbind "$1/netns" /run/netns || exit 1
		/usr/bin/python3 -c "$2" "$1/held" /run/keepalived.pid /run/vrrp.pid /run/checkers.pid /run/bfd.pid &
		for i in $(seq 100); do [ -e "$1/held" ] && break; sleep 0.05; done
		exec ip netns exec "$3" "$4" run --policy "$1/n1/policy.yaml" --socket "$1/n1/nfbox.sock" --no-pin \
			--state-dir "$1/n1/state"' - "$TMP" "$holder" $P-f1 "$NFBOX" >"$TMP/n1/out" 2>"$TMP/n1/err" &
	PID[1]=$!
	wait_until 20 ready 1
	[ -e "$TMP/held" ] || { t_fail foreign-pid-files "the other keepalived's pid files were not locked"; return; }
	# Alone, the node becomes master after three adverts (1 s each).
	if wait_role 1 master 10 && [ "$(ha 1 .keepalived.restarts)" = 0 ] && grep -q "keepalived started" "$TMP/n1/err"; then
		t_ok foreign-pid-files-own
	else
		t_fail foreign-pid-files-own "fw1 $(ha 1 .role), keepalived restarts $(ha 1 .keepalived.restarts): $(grep -m1 -E 'already running|locked' "$TMP/n1/err")"
		tail -30 "$TMP/n1/err"
	fi
	phase foreign
}

# job NAME FUNCTION ARGS...: FUNCTION in the background, with namespaces
# and a directory of its own; its output in $TOP/NAME.log.
job() {
	local name=$1
	shift
	JOBS+=("")
	(
		JOB=$name P=$BASE-${#JOBS[@]}
		SW=$P-sw C=$P-c S=$P-s
		TMP=$TOP/$name
		PH_T=$(now_us) PH=
		T_FAILED=0
		mkdir -p "$TMP"
		trap 'teardown; phase teardown; echo "# $JOB:$PH"' EXIT
		trap 'HURRY=1; exit 143' TERM
		trap 'HURRY=1; exit 130' INT
		"$@"
		exit 0
	) >"$TOP/$name.log" 2>&1 </dev/null &
	JOBS[-1]=$!
	NAMES+=("$name")
}

# The daemons' default files: nfbox names its own, so these never appear.
host_files() { ls -d /run/keepalived* /var/run/keepalived* /var/run/conntrackd* /var/lock/conntrack* /tmp/keepalived* 2>/dev/null | tr '\n' ' '; }
HOST_FILES=$(host_files)
# HA_ONLY=NAME runs one scenario (and the missing-program cases).
run() { [ -z "${HA_ONLY:-}" ] || [ "$HA_ONLY" = "$1" ] && job "$1" scenario "$@"; }
# FAST: the sub-second advert of most pairs; nft-masq-links keeps the
# default 1s (a failover of 2.6 s or more).
FAST=100ms
# The longest first (the pair with 1 s adverts; the windows without the
# sync link; the checks), the others once those are loaded (a start is
# mostly the kernel's verifier: every pair starting at once, all wait).
run nft-masq-links nftables masq links sync
ADVERT=$FAST run bpf-nosync bpf plain links nosync
ADVERT=$FAST run nft-nosync nftables masq links nosync
ADVERT=$FAST run bpf-plain-links bpf plain links sync checks
sleep 2
ADVERT=$FAST run bpf-masq-netns bpf masq netns sync
ADVERT=$FAST run nft-plain-netns nftables plain netns sync
ADVERT=$FAST run bpf-plain-crash bpf plain crash sync reloads
job missing missing
job foreign foreign
job adverts adverts

for i in "${!JOBS[@]}"; do
	wait "${JOBS[$i]}"
	rc=$?
	JOBS[$i]=
	log=$TOP/${NAMES[$i]}.log
	cat "$log"
	f=$(grep -c '^FAIL ' "$log")
	T_FAILED=$((T_FAILED + f))
	[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || t_fail "${NAMES[$i]}" "exited with status $rc"
done
# What every scenario's daemons left behind.
[ "$(host_files)" = "$HOST_FILES" ] && t_ok no-host-files-left || t_fail no-host-files-left "now: $(host_files)"
t_done
