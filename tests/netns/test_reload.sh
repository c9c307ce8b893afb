#!/bin/bash
# Atomic reload and fail-closed operation: reloads under traffic, bad
# reloads that change nothing, SIGHUP, counters kept across reloads, the
# defrag flag switched by a reload, and SIGKILL then restart (the pinned
# policy keeps enforcing and the new daemon adopts it without a gap, and
# the rules' counters go on).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
reloads=${NFBOX_RELOADS:-$([ -n "${NFBOX_LONG:-}" ] && echo 500 || echo 50)}

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
policy() { # FILE PORT-ALLOWED [defrag]
	cat >"$1" <<YAML
version: 1
hooks:
  forward: { default: drop }
options:
  defrag: ${3:-true}
rules:
  - { name: stream, service: [tcp/5001], action: accept }
  - { name: web, service: [tcp/$2], action: accept }
YAML
	# Without defrag there is no conntrack: replies need a rule of their own.
	[ "${3:-true}" = false ] && echo "  - { name: replies, source-service: [tcp/$2, tcp/5001], action: accept }" >>"$1"
	return 0
}
policy "$NS_TMP/a.yaml" 80
policy "$NS_TMP/b.yaml" 81
policy "$NS_TMP/c.yaml" 80 false
printf 'version: 1\nhooks: { forward: { default: accept } }\nrules:\n  - { name: x, sevice: [tcp/80], action: drop }\n' >"$NS_TMP/bad.yaml"

can() { listen in_s "$1" 3; in_c "$NET" tcp-connect $S4 "$1" 1 >/dev/null 2>&1; }
# cannot PORT: a connection to a listener on PORT fails (without a listener
# it would fail anyway: that is not a "cannot").
cannot() { listen in_s "$1" 3 || return 1; ! in_c "$NET" tcp-connect $S4 "$1" 1 >/dev/null 2>&1; }
gen() { nfbox_ctl status --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["generation"])'; }
gen_above() { [ "$(gen)" -gt "$1" ]; }
# established PORT: the client has a TCP connection to the server's PORT
established() { [ -n "$(in_c ss -Htn state established "( dport = :$1 )")" ]; }

nfbox_start "$NS_TMP/a.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
t_check policy-a-allows-80 can 80
t_check policy-a-denies-81 cannot 81

# An established stream keeps flowing while the policy is replaced many times.
in_s "$NET" tcp-listen 5001 60 >/dev/null 2>&1 &
wait_listen in_s 5001
in_c "$NET" tcp-stream $S4 5001 8 >"$NS_TMP/stream" 2>&1 &
spid=$!
wait_until 5 established 5001 || t_fail stream-connects "the stream did not connect within 5 s"
bad=0
for i in $(seq "$reloads"); do
	f=$NS_TMP/a.yaml
	[ $((i % 2)) -eq 1 ] && f=$NS_TMP/b.yaml
	nfbox_ctl reload --policy "$f" >/dev/null 2>&1 || bad=$((bad + 1))
done
wait $spid
srv=$?
if [ "$bad" -eq 0 ]; then t_ok "reloads-$reloads"; else t_fail "reloads-$reloads" "$bad reloads failed"; fi
if [ "$srv" -eq 0 ] && stream_ok "$NS_TMP/stream"; then
	t_ok stream-survives-reloads
else
	t_fail stream-survives-reloads "$(cat "$NS_TMP/stream")"
fi
# $reloads is even: policy a is in force again.
t_check after-reloads-a-allows-80 can 80
t_check after-reloads-a-denies-81 cannot 81

# Each reload takes effect at once for new flows.
nfbox_ctl reload --policy "$NS_TMP/b.yaml" >/dev/null
t_check reload-b-allows-81 can 81
t_check reload-b-denies-80 cannot 80

# A bad policy changes nothing and says where it is wrong.
g=$(gen)
if out=$(nfbox_ctl reload --policy "$NS_TMP/bad.yaml" 2>&1); then
	t_fail bad-reload-refused "the reload of an invalid policy succeeded"
elif echo "$out" | grep -q "bad.yaml:4:16: error: unknown key 'sevice' in a rule; did you mean 'service'?" &&
	echo "$out" | grep -q "policy in force is unchanged"; then
	t_ok bad-reload-refused
else
	t_fail bad-reload-refused "unexpected output: $out"
fi
if [ "$(gen)" = "${g:-none}" ]; then t_ok bad-reload-keeps-generation; else t_fail bad-reload-keeps-generation "generation ${g:-unknown} -> $(gen)"; fi
t_check bad-reload-keeps-policy can 81
t_check bad-reload-keeps-policy-deny cannot 80
if nfbox_ctl reload --policy "$NS_TMP/missing.yaml" >/dev/null 2>&1; then
	t_fail missing-file-refused "reload of a missing file succeeded"
else
	t_ok missing-file-refused
fi

# Counters of a rule that keeps its name go on across reloads.
before=$(nfbox_count forward stream)
if ! out=$(nfbox_ctl reload --policy "$NS_TMP/b.yaml" 2>&1); then
	t_fail counters-survive-reload "the reload failed: $out"
else
	after=$(nfbox_count forward stream)
	if [ "$before" -ge 1 ] && [ "$after" -ge "$before" ]; then t_ok counters-survive-reload; else t_fail counters-survive-reload "stream: $before before, $after after"; fi
fi

# SIGHUP reloads the daemon's policy file.
policy "$NS_TMP/a.yaml" 82
g=$(gen)
kill -HUP "$NFBOX_PID"
t_check sighup-reloads wait_until 5 gen_above "${g:-0}"
t_check sighup-reload-allows-82 can 82

# A reload can switch defrag off: links are re-attached without the flag.
nfbox_ctl reload --policy "$NS_TMP/c.yaml" >/dev/null
if [ "$(engine_defrag)" = no ]; then
	t_ok reload-defrag-off
else
	t_fail reload-defrag-off "$(nfbox_ctl status)"
fi
t_check reload-defrag-off-enforces can 80
nfbox_ctl reload --policy "$NS_TMP/b.yaml" >/dev/null
if [ "$(engine_defrag)" = yes ]; then
	t_ok reload-defrag-on
else
	t_fail reload-defrag-on "$(nfbox_ctl status)"
fi

# SIGKILL: the pinned program, maps and links go on enforcing policy b.
web_before=$(nfbox_count forward web)
kill -9 "$NFBOX_PID"
wait "$NFBOX_PID" 2>/dev/null
NFBOX_PID=
t_check sigkill-still-allows can 81
t_check sigkill-still-denies cannot 80
# A new daemon adopts the pinned state, then loads its own policy.
nfbox_start "$NS_TMP/a.yaml" || t_fail restart "$(cat "$NS_TMP/nfbox.err")"
if nfbox_ctl status --json | /usr/bin/python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["adopted"] else 1)'; then
	t_ok restart-adopts
else
	t_fail restart-adopts "$(nfbox_ctl status)"
fi
# The rule keeps its counters across the restart (they went on counting
# while no daemon ran: the connection to 81 above).
web_after=$(nfbox_count forward web)
[ "$web_before" -gt 0 ] && [ "$web_after" -gt "$web_before" ] && t_ok restart-keeps-counters ||
	t_fail restart-keeps-counters "web counted $web_before before the SIGKILL, $web_after after the restart"
t_check restart-enforces-new can 82
t_check restart-enforces-new-deny cannot 81

# With `established: rules` every packet of a flow goes through the rules,
# across every reload: 50 reloads under a TCP stream and 1,000 UDP
# datagrams a second lose no datagram, and cost at most a few TCP
# retransmissions (tail-loss probes of a busy machine; the nftables
# backend's table replaced whole, unregistering its base chains for the
# commit, cost 18 to 83 of them). The reloads alternate two policies.
rules_policy() { # FILE PORT-ALLOWED
	cat >"$1" <<YAML
version: 1
hooks:
  forward: { default: drop }
options: { established: rules }
rules:
  - { name: replies, state: [established, related], action: accept }
  - { name: stream, state: new, service: [tcp/5002], action: accept }
  - { name: ticks, service: [udp/7000], action: accept }
  - { name: web, service: [tcp/$2], action: accept }
YAML
	backend_policy "$1"
}
rules_policy "$NS_TMP/ra.yaml" 80
rules_policy "$NS_TMP/rb.yaml" 81
nfbox_ctl reload --policy "$NS_TMP/ra.yaml" >/dev/null || t_fail rules-reload "$(nfbox_ctl reload --policy "$NS_TMP/ra.yaml" 2>&1)"
retrans() { $1 nstat -az TcpRetransSegs | awk '/TcpRetransSegs/ { print $2 }'; }
in_s "$NET" tcp-listen 5002 60 >/dev/null 2>&1 &
wait_listen in_s 5002
in_s timeout 20 "$NET" udp-count 12 7000 >"$NS_TMP/rcount" 2>&1 &
cw=$!
wait_until 5 grep -q listening "$NS_TMP/rcount" || t_fail rules-setup "udp-count never listened"
rc0=$(retrans in_c) rs0=$(retrans in_s)
in_c "$NET" tcp-stream $S4 5002 8 >"$NS_TMP/rstream" 2>&1 &
spid=$!
in_c "$NET" udp-ticks $S4 8 7000 >"$NS_TMP/rsent" 2>&1 &
tpid=$!
wait_until 5 established 5002 || t_fail rules-stream-connects "the stream did not connect within 5 s"
bad=0
for i in $(seq "$reloads"); do
	f=$NS_TMP/ra.yaml
	[ $((i % 2)) -eq 1 ] && f=$NS_TMP/rb.yaml
	nfbox_ctl reload --policy "$f" >"$NS_TMP/rreload" 2>&1 || { bad=$((bad + 1)); cp "$NS_TMP/rreload" "$NS_TMP/rreload.bad"; }
done
wait $spid $tpid
wait $cw
rt=$(($(retrans in_c) - rc0 + $(retrans in_s) - rs0))
# (a datagram the client's own stack refused, ENOBUFS, never left it)
sent=$(awk '/^sent/ { print $3 - $4 }' "$NS_TMP/rsent")
got=$(awk '/^got/ { print $3 }' "$NS_TMP/rcount")
echo "# established: rules, $reloads reloads: $rt TCP retransmissions, ${got:-?} of ${sent:-?} datagrams"
[ "$bad" -eq 0 ] && t_ok rules-reloads || t_fail rules-reloads "$bad failed: $(head -c 600 "$NS_TMP/rreload.bad")"
t_check rules-stream-survives stream_ok "$NS_TMP/rstream"
none_lost() { [ -n "$sent" ] && [ "$sent" -gt 7000 ] && [ "${got:-0}" = "$sent" ]; }
t_check rules-no-datagram-lost none_lost
t_check rules-few-retransmissions [ "$rt" -le 10 ]
nfbox_stop
t_check stop-detaches can 81
t_done
