#!/bin/bash
# The shipped fail2ban action (packaging/fail2ban/action.d/nfbox.conf),
# driven by fail2ban itself: Debian's fail2ban package, unpacked into the
# test's directory (not installed: nothing runs on the host), runs a jail
# in the appliance namespace that watches a log file. Failure lines for the
# client make fail2ban ban it: the action puts it into the policy's dynamic
# set with the ban time as its timeout, and its traffic is dropped; an
# unban deletes it and traffic passes; a ban whose entry expired already
# unbans cleanly. Also the CrowdSec custom bouncer's script
# (packaging/crowdsec/nfbox-crowdsec), called as the bouncer calls it.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
C4B=198.51.100.3

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
ip -n "$NS_C" addr add $C4B/24 dev c0

# fail2ban from the distribution's archive, downloaded by
# packaging/install-deps.sh (the test needs no network) and unpacked here,
# never installed on the host.
deb=$(ls "${NFBOX_DEB_CACHE:-/var/cache/nfbox/debs}"/fail2ban_*.deb 2>/dev/null | head -1)
if [ -z "$deb" ]; then
	t_fail fail2ban-deb "no fail2ban .deb in ${NFBOX_DEB_CACHE:-/var/cache/nfbox/debs}: run packaging/install-deps.sh"
	t_done
fi
f2b=$NS_TMP/f2b
dpkg-deb -x "$deb" "$f2b" || { t_fail fail2ban-unpack "$deb"; t_done; }
pylib=$(ls -d "$f2b"/usr/lib/python3/dist-packages 2>/dev/null)
echo "# $(basename "$deb")"

cat >"$NS_TMP/policy.yaml" <<YAML
version: 1
sets:
  fail2ban: { dynamic: true }
  crowdsec: { dynamic: true }
hooks:
  forward: { default: accept }
rules:
  - { name: drop-fail2ban, from: fail2ban, action: drop }
  - { name: drop-crowdsec, from: crowdsec, action: drop }
YAML
nfbox_start "$NS_TMP/policy.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }

# probe SRC: "pass" or "drop" to the server's UDP port 7000 (probe_from, tests/lib/netns.sh)
probe() { probe_from "$1" $S4 7000; }
# listed SET ADDR: status 0 listed, 1 not listed, 2 the list failed (so
# not_listed fails too).
listed() {
	local out
	out=$(nfbox_ctl set list "$1" 2>/dev/null) || return 2
	grep -q "^$2\b" <<<"$out"
}
not_listed() { listed "$@"; [ $? -eq 1 ]; }

# The jail's configuration: only what the test needs, the action as shipped.
conf=$NS_TMP/f2b-conf
mkdir -p "$conf/action.d" "$conf/filter.d" "$conf/jail.d"
cp packaging/fail2ban/action.d/nfbox.conf "$conf/action.d/"
cat >"$conf/fail2ban.conf" <<CONF
[Definition]
loglevel = INFO
logtarget = $NS_TMP/f2b.log
socket = $NS_TMP/f2b.sock
pidfile = $NS_TMP/f2b.pid
dbfile = :memory:
CONF
cat >"$conf/filter.d/nfbox-test.conf" <<'CONF'
[Definition]
failregex = auth failure from <HOST>$
CONF
cat >"$conf/jail.conf" <<CONF
[DEFAULT]
backend = polling
[nfbox-test]
enabled = true
filter = nfbox-test
logpath = $NS_TMP/auth.log
maxretry = 2
findtime = 600
bantime = 600
action = nfbox[nfbox="$NFBOX", nfbox_opts="--socket $NFBOX_SOCK"]
CONF
: >"$NS_TMP/auth.log"
f2b() {
	in_a env PYTHONPATH="$pylib" /usr/bin/python3 "$f2b/usr/bin/fail2ban-client" -c "$conf" "$@"
}
f2b start >"$NS_TMP/f2b-start.out" 2>&1
t_check fail2ban-started f2b ping
t_check jail-started wait_until 5 f2b status nfbox-test
t_check passes-before [ "$(probe $C4)" = pass ]

for _ in 1 2; do echo "$(date '+%Y-%m-%d %H:%M:%S') auth failure from $C4"; done >>"$NS_TMP/auth.log"
t_check banned-into-set wait_until 10 listed fail2ban $C4
t_check ban-has-timeout grep -Eq "^$C4	expires in (59[0-9]|600)s" <(nfbox_ctl set list fail2ban)
t_check banned-dropped [ "$(probe $C4)" = drop ]
t_check other-passes [ "$(probe $C4B)" = pass ]

f2b set nfbox-test unbanip $C4 >/dev/null 2>&1
t_check unbanned-from-set wait_until 5 not_listed fail2ban $C4
t_check unbanned-passes [ "$(probe $C4)" = pass ]
# A ban whose entry nfbox already let go (deleted here): the unban is clean.
# (unbanip answers once the action ran: fail2ban's removeBannedIP calls it,
# and logs its failure, before it returns.)
f2b set nfbox-test banip 192.0.2.77 >/dev/null 2>&1
if ! wait_until 5 listed fail2ban 192.0.2.77; then
	t_fail gone-entry-unban-clean "the ban of 192.0.2.77 never reached the set"
elif ! out=$(nfbox_ctl set del fail2ban 192.0.2.77 2>&1); then
	t_fail gone-entry-unban-clean "cannot take 192.0.2.77 out first: $out"
elif ! out=$(f2b set nfbox-test unbanip 192.0.2.77 2>&1); then
	t_fail gone-entry-unban-clean "fail2ban-client unbanip: $out"
elif ! grep -q 'nfbox-test.* Unban 192.0.2.77' "$NS_TMP/f2b.log"; then
	t_fail gone-entry-unban-clean "fail2ban logged no unban of 192.0.2.77: $(tail -n 3 "$NS_TMP/f2b.log")"
elif grep -E 'nfbox-test.*(Failed|Error).*unban|returned [1-9]' "$NS_TMP/f2b.log" | grep -q 192.0.2.77; then
	t_fail gone-entry-unban-clean "$(grep -E 'Failed|Error|returned [1-9]' "$NS_TMP/f2b.log" | tail -n 2)"
else
	t_ok gone-entry-unban-clean
fi
f2b stop >/dev/null 2>&1

# CrowdSec's custom bouncer calls: add IP DURATION REASON JSON, del ...
cs() { NFBOX="$NFBOX" NFBOX_OPTS="--socket $NFBOX_SOCK" packaging/crowdsec/nfbox-crowdsec "$@"; }
cs add $C4 3600 "ssh-bf" '{}'
t_check crowdsec-add grep -Eq "^$C4	expires in (359[0-9]|3600)s" <(nfbox_ctl set list crowdsec)
t_check crowdsec-dropped [ "$(probe $C4)" = drop ]
cs add 203.0.113.0/24 86400 "range" '{}'
t_check crowdsec-range grep -Eq "^203.0.113.0/24	expires in 86[34][0-9][0-9]s" <(nfbox_ctl set list crowdsec)
cs add 192.0.2.50 0 "ends now" '{}'
cs add 192.0.2.51 -3 "ended" '{}'
t_check crowdsec-no-endless-ban [ "$(nfbox_ctl set list crowdsec --json | jq -r .entries)" = 2 ]
# A duration it cannot read fails (the bouncer logs it) and adds nothing;
# a Go duration as CrowdSec writes it is read, rounded up.
cs add 192.0.2.52 "4 hours" "bad" '{}' 2>"$NS_TMP/cs.err"
t_check crowdsec-bad-duration-fails [ $? -ne 0 ]
t_check crowdsec-bad-duration-says-why grep -q "cannot read the duration '4 hours'" "$NS_TMP/cs.err"
cs add 192.0.2.53 "" "none" '{}' 2>/dev/null
t_check crowdsec-empty-duration-fails [ $? -ne 0 ]
t_check crowdsec-bad-duration-not-added [ "$(nfbox_ctl set list crowdsec --json | jq -r .entries)" = 2 ]
cs add 192.0.2.54 "1h59m58.5s" "go" '{}'
t_check crowdsec-go-duration grep -Eq "^192.0.2.54	expires in 7(19[0-9]|200)s" <(nfbox_ctl set list crowdsec)
cs del $C4 3600 "ssh-bf" '{}'
t_check crowdsec-del [ "$(probe $C4)" = pass ]
cs del $C4 3600 "ssh-bf" '{}'
t_check crowdsec-del-again-clean [ $? -eq 0 ]
t_done
