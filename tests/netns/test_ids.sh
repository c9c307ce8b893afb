#!/bin/bash
# Bans driven by an IDS: a real Suricata (Debian's package) watches what
# nfbox mirrors (a capture with mirror-from lan0: Suricata reads the
# mirror's other end, ids0-tx, with af-packet) and writes eve.json; a set
# { eve: eve.json, severity: 2, timeout: 60s } takes each alert's source:
# - a client that sends the marker (a local rule, sid 1000001, priority 1)
#   is dropped within 2 s, the other client is not affected;
# - nfbox set list and the event log say which alert (sid and message);
# - an alert of lower severity (priority 3: sid 1000002) bans nobody;
# - eve.json rotated (renamed, a new one made): followed on;
# - a line that is not JSON is counted, not fatal; a flood of 3000 alerts
#   is banned in batches while the daemon keeps answering; nfbox set del
#   lets an offender go.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
C4B=198.51.100.3 # the other client

command -v suricata >/dev/null || { t_fail suricata "suricata is missing (packaging/install-deps.sh installs it)"; t_done; }
ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
in_c ip addr add $C4B/24 dev c0
SURI=$NS_TMP/suricata
mkdir -p "$SURI"
cat >"$SURI/local.rules" <<'RULES'
alert udp any any -> any 7000 (msg:"NFBOX-TEST marker seen"; content:"EVIL-MARKER"; sid:1000001; rev:1; priority:1;)
alert udp any any -> any 7000 (msg:"NFBOX-TEST mild"; content:"MILD-MARKER"; sid:1000002; rev:1; priority:3;)
RULES
cat >"$SURI/suricata.yaml" <<YAML
%YAML 1.1
---
vars:
  address-groups:
    HOME_NET: "[203.0.113.0/24]"
    EXTERNAL_NET: "any"
default-log-dir: $SURI
default-rule-path: $SURI
rule-files: [local.rules]
classification-file: /etc/suricata/classification.config
reference-config-file: /etc/suricata/reference.config
outputs:
  - eve-log:
      enabled: yes
      filetype: regular
      filename: eve.json
      types: [alert]
logging:
  default-log-level: info
  outputs:
    - file: { enabled: yes, level: info, filename: $SURI/suricata.log }
af-packet:
  - interface: ids0-tx
    cluster-id: 98
    cluster-type: cluster_flow
unix-command: { enabled: no }
YAML
cat >"$NS_TMP/p.yaml" <<YAML
version: 1
sets:
  ids: { eve: $SURI/eve.json, severity: 2, timeout: 60s }
hooks:
  forward: { default: accept }
rules:
  - { name: drop-ids, from: ids, action: drop }
capture:
  - { name: ids, interface: ids0, mirror-from: lan0, file: $NS_TMP/ids.pcapng }
YAML
nfbox_start "$NS_TMP/p.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
t_check mirror-up wait_until 5 in_a ip link show ids0-tx
ip netns exec "$NS_A" suricata -c "$SURI/suricata.yaml" --af-packet -k none --runmode single \
	--pidfile "$SURI/suricata.pid" -l "$SURI" >"$SURI/stdout" 2>&1 &
t_check suricata-running wait_until 60 grep -q "Engine started\|engine started" "$SURI/suricata.log" "$SURI/stdout"
t_check before-passes [ "$(probe_from $C4 $S4 7000)" = pass ]

say() { in_c "$NET" udp-say $S4 7000 "$2" "$1" >/dev/null; } # SRC TEXT
# a mild alert first: seen, nobody banned
say $C4 "hello MILD-MARKER"
t_check mild-alert-seen wait_until 5 grep -q '"signature_id":1000002' "$SURI/eve.json"
sleep 0.5
t_check mild-no-ban [ "$(probe_from $C4 $S4 7000)" = pass ]
# the marker: banned within 2 s
say $C4 "hello EVIL-MARKER"
sent=$EPOCHREALTIME
banned() { nfbox_ctl set list ids | grep -q "^$C4[[:space:]]"; }
t_check banned-within-2s wait_until 2 banned
t_check ban-took-under-2s fholds "$EPOCHREALTIME - $sent < 2.5"
t_check offender-dropped [ "$(probe_from $C4 $S4 7000)" = drop ]
t_check other-passes [ "$(probe_from $C4B $S4 7000)" = pass ]
t_check list-says-alert grep -q "by Suricata alert 1000001 (NFBOX-TEST marker seen)" <(nfbox_ctl set list ids)
t_check log-says-alert grep -q "by Suricata alert 1000001 (NFBOX-TEST marker seen), severity 1" "$NS_TMP/nfbox.err"

# rotated: renamed away and Suricata told to reopen (SIGHUP; it makes the
# new file at its next line), a line that is not JSON first, a second offender
mv "$SURI/eve.json" "$SURI/eve.json.1"
kill -HUP "$(cat "$SURI/suricata.pid")"
sleep 0.3
echo "this line is not JSON" >>"$SURI/eve.json"
say $C4B "again EVIL-MARKER"
banned_b() { nfbox_ctl set list ids | grep -q "^$C4B[[:space:]]"; }
t_check rotated-followed wait_until 3 banned_b
t_check bad-line-counted grep -q "1 lines not understood" <(nfbox_ctl status)

# a flood of alerts (as a hostile sender could make Suricata write): 3000
# sources in one burst are banned in batches; the daemon keeps answering.
# 255 of them lie in a prefix an operator put into the set by hand: they
# are banned already (an entry of their own would overlap it, which would
# have the whole batch refused), and the 2,745 others are added.
t_check manual-prefix nfbox_ctl set add ids 2001:db8:ff::/120
/usr/bin/python3 - "$SURI/eve.json" <<'PY'
import json, sys
with open(sys.argv[1], "a") as f:
    for i in range(1, 3001):
        f.write(json.dumps({"event_type": "alert", "src_ip": "2001:db8:ff::%x" % i, "dest_ip": "2001:db8:2::10",
                            "alert": {"severity": 1, "signature_id": 1000001, "signature": "NFBOX-TEST flood"}}) + "\n")
PY
# C4, C4B, the prefix and the 2,745 sources outside it
flooded() { [ "$(nfbox_ctl set list --json | jq 'first(.[] | select(.set == "ids") | .entries)')" -eq 2748 ]; }
t_check flood-banned-in-5s wait_until 5 flooded
t_check flood-status-answers timeout 2 "$NFBOX" status --socket "$NFBOX_SOCK"
t_check flood-logged-in-short grep -q "and [0-9]* more sources banned by Suricata alerts in this round" "$NS_TMP/nfbox.err"

# let one go by hand
t_check set-del nfbox_ctl set del ids $C4
t_check let-go-passes [ "$(probe_from $C4 $S4 7000)" = pass ]
kill "$(cat "$SURI/suricata.pid")" 2>/dev/null
nfbox_stop
t_done
