#!/bin/bash
# action: reject, seen by real clients: on input, forward and output, IPv4
# and IPv6, a TCP connection is refused at once (a reset) and a UDP
# datagram draws the ICMP error reject-with asks for; the first-match order
# holds (an earlier accept wins); rejects are counted and logged; the
# replies are bounded by reject-rate, the rest dropped unanswered and
# counted. The event log is opened again on SIGUSR1 (log rotation). Runs
# with either backend (NFBOX_BACKEND).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
cat >"$NS_TMP/policy.yaml" <<YAML
version: 1
interfaces:
  lan: [lan0]
hooks:
  input: { default: accept }
  forward: { default: drop }
  output: { default: drop }
options:
  established: accept
  reject-rate: 20/second
rules:
  - { name: web, in: lan, service: [tcp/80], action: accept }
  - { name: fwd-tcp, in: lan, service: [tcp/81-90], action: reject, log: true }
  - { name: fwd-udp, in: lan, service: [udp/5000], action: reject }
  - { name: fwd-admin, in: lan, service: [udp/5001], action: reject, reject-with: admin-prohibited }
  - { name: fwd-host, in: lan, service: [udp/5002], action: reject, reject-with: host-unreachable }
  - { name: fwd-net, in: lan, service: [udp/5003], action: reject, reject-with: net-unreachable }
  - { name: fwd-flood, in: lan, service: [udp/6000], action: reject }
  - { name: in-tcp, hook: input, service: [tcp/22], action: reject }
  - { name: in-udp, hook: input, service: [udp/161], action: reject }
  - { name: out-tcp, hook: output, to: [203.0.113.10, "2001:db8:2::10"], service: [tcp/9999], action: reject }
  # Output accepts only neighbour discovery: the replies to rejected
  # packets must leave all the same (BPF: marked; nftables: related).
  - { name: out-ns, hook: output, proto: icmpv6, icmp-type: 135, action: accept }
  - { name: out-na, hook: output, proto: icmpv6, icmp-type: 136, action: accept }
YAML
nfbox_start "$NS_TMP/policy.yaml" --log "$NS_TMP/events.jsonl" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }

# probe NAME WANT-REGEX NS CMD...: the first word of net.py's answer, and
# that it came at once (well under the probe's timeout).
probe() {
	local name=$1 want=$2 out
	shift 2
	out=$("$@" 2>&1)
	set -- $out
	if [[ "${1:-}" =~ ^($want)$ ]] && [[ "${2:-9}" =~ ^[0-9]+(\.[0-9]*)?$ ]] && awk -v s="${2:-9}" 'BEGIN { exit !(s + 0 < 1.0) }'; then
		t_ok "$name"
	else
		t_fail "$name" "got '$out', expected $want at once"
	fi
}

listen in_s 80 5
probe accept-before-reject open in_c "$NET" tcp-probe $S4 80 3
for fam in 4 6; do
	s=S$fam a=A${fam}L
	probe forward-tcp-v$fam refused in_c "$NET" tcp-probe ${!s} 85 3
	probe forward-udp-v$fam ECONNREFUSED in_c "$NET" udp-probe ${!s} 5000 3
	probe input-tcp-v$fam refused in_c "$NET" tcp-probe ${!a} 22 3
	probe input-udp-v$fam ECONNREFUSED in_c "$NET" udp-probe ${!a} 161 3
	probe output-tcp-v$fam refused in_a "$NET" tcp-probe ${!s} 9999 3
	probe net-unreachable-v$fam ENETUNREACH in_c "$NET" udp-probe ${!s} 5003 3
	probe host-unreachable-v$fam EHOSTUNREACH in_c "$NET" udp-probe ${!s} 5002 3
done
# ICMP 3/13 reads as EHOSTUNREACH, ICMPv6 1/1 as EACCES.
probe admin-prohibited-v4 EHOSTUNREACH in_c "$NET" udp-probe $S4 5001 3
probe admin-prohibited-v6 EACCES in_c "$NET" udp-probe $S6 5001 3

# Counted like drop, logged with action reject.
n=$(nfbox_count forward fwd-tcp)
[ "$n" -ge 2 ] && t_ok counted || t_fail counted "fwd-tcp counted $n"
wait_until 5 grep -q '"rule":"fwd-tcp","action":"reject"' "$NS_TMP/events.jsonl" && t_ok logged-as-reject ||
	t_fail logged-as-reject "$(head -c 600 "$NS_TMP/events.jsonl")"

# Log rotation: the file moved away, SIGUSR1, and the next event goes to a
# new file by the old name; the moved one gets nothing more.
mv "$NS_TMP/events.jsonl" "$NS_TMP/events.1"
before=$(wc -l <"$NS_TMP/events.1")
kill -USR1 "$NFBOX_PID"
if ! wait_until 5 grep -q "SIGUSR1: the log file .* opened again" "$NS_TMP/nfbox.err"; then
	t_fail sigusr1-reopens-log "the daemon did not say it opened the file again: $(tail -n 3 "$NS_TMP/nfbox.err")"
else
	in_c "$NET" tcp-probe $S4 86 3 >/dev/null 2>&1
	wait_until 5 grep -q '"rule":"fwd-tcp"' "$NS_TMP/events.jsonl" && t_ok sigusr1-reopens-log ||
		t_fail sigusr1-reopens-log "no event in the new file; $(tail -n 3 "$NS_TMP/nfbox.err")"
fi
t_check rotated-file-left-alone [ "$(wc -l <"$NS_TMP/events.1")" -eq "$before" ]

# Bounded: 300 datagrams at once draw a few dozen replies at 20/second.
sleep 1.2 # fixed: the time under test, the bucket refilling from the probes above
sent=$(in_c "$NET" udp-blast $S4 6000 300 2>&1 | awk '$1 == "sent" { print $2 }')
flood_counted() { [ "$(nfbox_count forward fwd-flood)" -ge "${sent:-300}" ]; }
wait_until 5 flood_counted # (the case below says if they are not all counted)
n=$(nfbox_count forward fwd-flood)
lim=$(nfbox_ctl stats --json | jq -r .drops.reject_rate_limited)
if [ "$n" -ge 250 ] && [ "$lim" -ge $((n - 45)) ]; then t_ok reject-rate-bounds-replies; else
	t_fail reject-rate-bounds-replies "fwd-flood counted $n, $lim over the rate"
fi
if bpf_backend; then
	rep=$(nfbox_ctl stats --json | jq -r .drops.reject_replies)
	[ "$rep" -ge 16 ] && [ "$rep" -le 90 ] && t_ok replies-counted || t_fail replies-counted "$rep replies"
fi
t_done
