#!/bin/bash
# Every single-node feature an operator enables, as the package runs it: the
# .deb installed in a throw-away root of this machine's release (or
# NFBOX_UNIT_RELEASE=trixie), booted with systemd-nspawn inside the
# appliance namespace of tests/lib/netns.sh (veth links to a client and a
# server namespace), nfbox.service as shipped. Each feature is judged by
# what it does, not by its loading:
# - early drop at XDP: a blocked source's frames dropped, counted under its rule;
# - the SYN proxy: a connection completes through it and carries data;
# - a connection limit with overload: the source over it is banned (set
#   list, the kernel's set read with bpftool, traffic);
# - a schedule in force and one out of force (traffic); a reload that ends
#   a scheduled accept rule's window cuts the TCP stream it let in;
# - a country set (an MMDB in /var/lib/GeoIP), a host-name set (resolved
#   through the resolv.conf the unit sees), a Suricata set (eve.json in
#   /var/log/suricata): their sources dropped; a country set whose database
#   is missing: status says what it means ("empty until the database is
#   read: rule R drops nothing");
# - a set fetched from a URL (an HTTPS server of Debian's nginx with a test
#   CA, in the server namespace; ca: a file in /etc/nfbox): fetched by the
#   daemon under the unit (status: entries, checked; the pinned tries hold
#   them, read with bpftool; traffic to a listed address dropped), kept in
#   the state directory (/var/lib/nfbox/state/url-SET.cache), and after a
#   stop and a start with the server gone (and the dynamic sets' saved file
#   removed) the kept list enforced again, status warning of the failed
#   fetch;
# - a capture and a mirror-from capture: their pcapng files hold the frames
#   (read by tshark);
# - --metrics-listen (NFBOX_OPTS in /etc/default/nfbox): a scrape from the
#   client; --log: events in the file, which logrotate's rotation (SIGUSR1
#   from its postrotate) replaces with a new one that takes the next events;
# - --strict in NFBOX_OPTS: a start with a policy that has a warning fails
#   with status 78 (not restarted), the journal naming the warning at its
#   place; a `systemctl reload` to such a policy fails, the generation and
#   the policy in force (traffic) unchanged;
# - a fleet's node (NFBOX_OPTS="--fleet ..."; one etcd member with TLS in a
#   namespace of the test's own): it applies a push and enforces a shared ban.
# The unit's exposure (systemd-analyze security) is printed.
#
# Environment: as tests/distro/test_unit_systemd.sh (NFBOX_UNIT_RELEASE,
# NFBOX_UNIT_DEB); NFBOX_UNIT_DROPIN, lines for a drop-in of the unit
# ('ReadWritePaths=' and 'ReadWritePaths=-/sys/fs/bpf /var/lib/nfbox' is the
# unit before it let the SYN proxy set its sysctl).
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/droot.sh
. tests/lib/deb.sh
. tests/lib/netns.sh
. tests/lib/nginx.sh
NET=$PWD/tests/lib/net.py

droot_prepare unit-features
rel=${NFBOX_UNIT_RELEASE:-$rel}
droot_cgroup2 "$rel" "$PWD/tests/distro/test_unit_features.sh" || { t_fail cgroup2 "cannot make the unified cgroup hierarchy that $rel's systemd needs"; t_done; }
command -v systemd-nspawn >/dev/null || { t_fail unit-features "systemd-nspawn is missing (packaging/install-deps.sh installs systemd-container)"; t_done; }
command -v etcd >/dev/null || { t_fail unit-features "etcd is missing (packaging/install-deps.sh installs etcd-server)"; t_done; }
C4B=198.51.100.3 C4GEO=198.51.100.70 C4IDS=198.51.100.101 C4FLEET=198.51.100.102 S4BAD=203.0.113.66
ETCD=192.0.2.2 MGMT=192.0.2.1 NS_E=$NS_PREFIX-e
S4URL=203.0.113.77 # listed by the URL's list

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
tmp=$NS_TMP
root=$tmp/root
etcd_pid=
features_cleanup() {
	[ -n "$etcd_pid" ] && { kill -9 "$etcd_pid" && wait "$etcd_pid"; } 2>/dev/null
	droot_halt
	droot_cgroup2_free
	umount "$tmp/bpffs" 2>/dev/null
	droot_free "$root"
	ip netns del "$NS_E" 2>/dev/null
	ns_cleanup
}
trap features_cleanup EXIT

# ---- the root: the package and what the features read ----
unit_root "$rel" "$root" "$tmp"
mkdir -p "$root/var/lib/GeoIP" "$root/var/log/suricata"
/usr/bin/python3 tests/lib/mmdbwrite.py "$root/var/lib/GeoIP/country.mmdb" 198.51.100.64/27=DE 198.51.100.0/26=FR
: >"$root/var/log/suricata/eve.json"
echo "nameserver $S4" >"$root/etc/resolv.conf"
# In force: today and tomorrow (a run across midnight stays in force); out
# of force: three days on, neither.
today=$(date -u +%a | tr A-Z a-z) tomorrow=$(date -u -d '+1 day' +%a | tr A-Z a-z)
today="$today, $tomorrow" other_day=$(date -u -d '+3 days' +%a | tr A-Z a-z)
cat >"$root/etc/nfbox/policy.yaml" <<YAML
version: 1
interfaces: { lan: [lan0], wan: [wan0] }
sets:
  blocked: [$S4BAD]
  over: { dynamic: true }
  geo: { country: [de], database: /var/lib/GeoIP/country.mmdb }
  svc: { hosts: [srv.example.test], min-ttl: 1s, grace: 0 }
  ids: { eve: /var/log/suricata/eve.json, severity: 2, timeout: 1h }
  shared-bans: { dynamic: true, shared: true }
  geo-none: { country: [fr], database: /var/lib/GeoIP/none.mmdb }
  lists: { url: "https://$S4/list.txt", refresh: 1h, ca: /etc/nfbox/lists-ca.pem }
hooks:
  input: { default: accept }
  forward: { default: accept }
rules:
  - { name: early-drop, hook: [input, forward], in: wan, from: blocked, action: drop, early: true }
  - { name: drop-geo, from: geo, action: drop }
  - { name: drop-ids, from: ids, action: drop }
  - { name: drop-over, from: over, action: drop }
  - { name: drop-shared, from: shared-bans, action: drop }
  - { name: drop-geo-none, from: geo-none, action: drop }
  - { name: drop-listed, to: lists, action: drop }
  - { name: ssh, in: lan, service: tcp/22, state: new, limit: { connections: 2, per: source, overload: over, timeout: 10m }, action: accept }
  - { name: ssh-over, in: lan, service: tcp/22, action: drop }
  - { name: proxied, in: lan, service: tcp/8080, synproxy: true, action: accept }
  - { name: in-force, service: udp/7101, when: [ { days: [$today], tz: UTC } ], action: drop }
  - { name: out-of-force, service: udp/7102, when: [ { days: [$other_day], tz: UTC } ], action: drop }
  - { name: until-reload, in: lan, service: tcp/7106, when: [ { days: [$today], tz: UTC } ], action: accept }
  - { name: after-window, service: tcp/7106, action: drop }
  - { name: to-svc, to: svc, service: udp/7103, action: drop }
  - { name: logged, service: udp/7104, action: drop, log: true }
capture:
  - { name: span, interface: span0, file: /var/lib/nfbox/capture/span.pcapng }
  - { name: mirror, interface: mon0, mirror-from: lan0, file: /var/lib/nfbox/capture/mirror.pcapng }
YAML
echo "NFBOX_OPTS=\"--metrics-listen $A4L:9470 --log /var/log/nfbox/events.jsonl\"" >"$root/etc/default/nfbox"
# A drop-in that narrows the unit (NFBOX_UNIT_DROPIN: its text): how each
# check was seen to fail where the sandbox blocks its feature.
if [ -n "${NFBOX_UNIT_DROPIN:-}" ]; then
	mkdir -p "$root/etc/systemd/system/nfbox.service.d"
	printf '[Service]\n%s\n' "$NFBOX_UNIT_DROPIN" >"$root/etc/systemd/system/nfbox.service.d/narrow.conf"
fi

# ---- the network: the appliance namespace of netns.sh, and more links ----
for a in $C4B $C4GEO $C4IDS $C4FLEET; do in_c ip addr add $a/24 dev c0; done
in_s ip addr add $S4BAD/24 dev s0
in_s ip addr add $S4URL/24 dev s0
ip link add span0 netns "$NS_A" type veth peer name span1 netns "$NS_S" && in_a ip link set span0 up && in_s ip link set span1 up
ip netns add "$NS_E" && ip -n "$NS_E" link set lo up
ip link add mg0 netns "$NS_A" type veth peer name eth0 netns "$NS_E"
in_a ip link set mg0 up && in_a ip addr add $MGMT/24 dev mg0
ip -n "$NS_E" link set eth0 up && ip -n "$NS_E" addr add $ETCD/24 dev eth0
printf '%s srv.example.test\n' $S4 >"$tmp/dns-hosts"
in_s dnsmasq --keep-in-foreground --conf-file=/dev/null --no-resolv --no-hosts --addn-hosts="$tmp/dns-hosts" \
	--local-ttl=2 --listen-address=$S4 --bind-interfaces --user=root --group=root --pid-file="$tmp/dnsmasq.pid" &
# An HTTPS server of lists in the server namespace, up before nfbox starts:
# the daemon fetches at its start, then every refresh (1h).
ngx_unpack
ngx_ca ca && ngx_server_cert "$S4" || { t_fail pki "openssl could not make the certificates"; t_done; }
mkdir -p "$tmp/www"
printf '# a FireHOL-style list\n%s\n192.0.2.128/25\n' $S4URL >"$tmp/www/list.txt"
ngx_conf_head >"$NGX/nginx.conf"
printf '\tserver {\n\t\tlisten %s:443 ssl;\n\t\tssl_certificate %s;\n\t\tssl_certificate_key %s;\n\t\troot %s;\n\t}\n}\n' \
	$S4 "$P/server.pem" "$P/server.key" "$tmp/www" >>"$NGX/nginx.conf"
{ ngx_start "$NS_S" && wait_listen in_s 443; } || { t_fail nginx-start "$(cat "$NGX/error.log" 2>/dev/null)"; t_done; }
cp "$P/ca.pem" "$root/etc/nfbox/lists-ca.pem"

# ---- boot it in the appliance namespace ----
mkdir -p "$tmp/bpffs"
mount -t bpf bpf "$tmp/bpffs" || { t_fail bpffs "cannot mount a bpf filesystem"; t_done; }
# /proc/sys/net writable in it, as on a host (nspawn makes all of /proc/sys
# read-only unless told): the unit's own sandbox is what is tested.
if ! SYSTEMD_NSPAWN_API_VFS_WRITABLE=network droot_boot "$root" "$tmp/nspawn.log" \
	--network-namespace-path="/run/netns/$NS_A" --resolv-conf=off --bind="$tmp/bpffs:/sys/fs/bpf"; then
	t_fail boot "the container did not boot: $(tail -n 5 "$tmp/nspawn.log" | tr '\n' ' ')"
	t_done
fi
in_ct() { nsenter -t "$DROOT_LEADER" -a "$@"; }
show() { in_ct systemctl show nfbox -p "$1" --value; }
journal() { in_ct journalctl -u nfbox --no-pager -n "${1:-8}" | tr '\n' ' '; }
active() { [ "$(show ActiveState)" = active ]; }

in_ct systemctl enable --now nfbox >"$tmp/enable.out" 2>&1
if [ "$(show ActiveState)" = active ]; then t_ok start; else t_fail start "$(show ActiveState): $(journal)"; t_done; fi
echo "# exposure: $(in_ct systemd-analyze security nfbox 2>/dev/null | sed -n 's/^→ Overall exposure level for nfbox.service: *//p')"
ctl() { in_ct nfbox "$@"; }
listed() { ctl set list "$1" | grep -q "^$2[[:space:]]"; } # SET ADDRESS
# from_to c|s SRC DST PORT: three UDP datagrams from SRC (in the client or the
# server namespace) to DST:PORT: "pass" if one arrives within 1.5 s, else
# "drop" (the booted root and the others' load may slow the first)
from_to() {
	local recv sns=$NS_S
	[ "$1" = s ] && sns=$NS_C
	: >"$tmp/count"
	ip netns exec "$sns" timeout 10 "$NET" udp-first 8 "$4" >"$tmp/count" 2>&1 &
	recv=$!
	# as probe_from (tests/lib/netns.sh): a receiver that is not there
	# yet, or a datagram not sent, is said, never taken for a drop
	if ! wait_until 5 grep -q listening "$tmp/count"; then
		kill -TERM $recv 2>/dev/null
		wait $recv 2>/dev/null
		echo no-listener
		return
	fi
	if ! ip netns exec "$([ "$1" = s ] && echo "$NS_S" || echo "$NS_C")" "$NET" udp-blast "$3" "$4" 3 "$2" 2>&1 | grep -qx "sent 3"; then
		kill -TERM $recv 2>/dev/null
		wait $recv 2>/dev/null
		echo not-sent
		return
	fi
	wait_until 1.5 grep -q '^got' "$tmp/count" || kill -TERM $recv 2>/dev/null
	wait $recv 2>/dev/null
	awk '/^got/ {print ($3 > 0) ? "pass" : "drop"}' "$tmp/count"
}

# ---- early drop at XDP ----
t_check early-attached grep -q '^early drop at XDP on: wan0' <(ctl status)
t_check early-drops [ "$(from_to s $S4BAD $C4 7000)" = drop ]
t_check early-counted awk '$2 == "early-drop" && $4 > 0 { f = 1 } END { exit !f }' <(ctl stats)
t_check early-others-pass [ "$(from_to s $S4 $C4 7000)" = pass ]

# ---- the SYN proxy ----
ip netns exec "$NS_S" timeout 20 "$NET" tcp-whoami 8080 10 >/dev/null 2>&1 &
wait_listen in_s 8080
t_check synproxy-connects grep -q "^peer $C4 " <(in_c "$NET" tcp-ask $S4 8080 3 2>/dev/null)
t_check synproxy-counted awk '$2 == "proxied" && $4 > 0 { f = 1 } END { exit !f }' <(ctl stats)

# ---- a connection limit whose overload bans ----
ip netns exec "$NS_S" timeout 60 "$NET" tcp-sink 22 55 >/dev/null 2>&1 &
wait_listen in_s 22
in_c timeout 30 "$NET" tcp-hold $S4 22 3 2 25 $C4B >"$tmp/hold" 2>&1 &
t_check limit-third-refused wait_until 10 grep -q '^held 2' "$tmp/hold"
t_check overload-banned wait_until 3 listed over $C4B
t_check overload-in-kernel wait_until 2 sh -c "/usr/bin/python3 tests/lib/kset.py bpf '$tmp/bpffs/nfbox' over | grep -q '^$C4B/32 '"
t_check overload-dropped [ "$(from_to c $C4B $S4 7000)" = drop ]

# ---- schedules ----
t_check schedule-in-force [ "$(from_to c $C4 $S4 7101)" = drop ]
t_check schedule-out-of-force [ "$(from_to c $C4 $S4 7102)" = pass ]
# A reload that ends a scheduled accept rule's window cuts the TCP stream
# it let in (conntrack entries deleted over ctnetlink, in the sandbox).
ip netns exec "$NS_S" timeout 60 "$NET" tcp-last 7106 50 >"$tmp/last" 2>&1 &
last_pid=$!
wait_until 5 grep -q listening "$tmp/last"
in_c timeout 60 "$NET" tcp-ticks $S4 7106 50 >"$tmp/ticks" 2>&1 &
ticks_pid=$!
t_check schedule-stream-connected wait_until 5 grep -q connected "$tmp/ticks"
sed -i "s/^\(  - { name: until-reload, .*days: \[\)$today\]/\1$other_day]/" "$root/etc/nfbox/policy.yaml"
now_s() { fnum "$EPOCHREALTIME"; }
before=$(now_s)
in_ct systemctl reload nfbox
after=$(now_s)
cut_logged() { journal 40 | grep -q "rule 'until-reload' is out of force (when:): connection cut: proto 6 $C4 port [0-9]* to $S4 port 7106"; }
t_check schedule-cut-logged wait_until 5 cut_logged
not_before() { fholds "$EPOCHREALTIME >= $1"; } # EXPR: the clock has reached it
wait_until 5 not_before "$after + 2.5"
kill -TERM $last_pid $ticks_pid 2>/dev/null
wait $last_pid $ticks_pid 2>/dev/null
stopped=$(awk '/^last/ {print $3}' "$tmp/last")
echo "# the stream's last tick: $stopped; the reload: $before to $after" >&2
t_check schedule-stream-cut fholds "$before - 1 < ${stopped:-0} && ${stopped:-0} <= $after + 1"

# ---- country, host-name and Suricata sets ----
t_check country-dropped [ "$(from_to c $C4GEO $S4 7000)" = drop ]
t_check country-others-pass [ "$(from_to c $C4 $S4 7000)" = pass ]
t_check hosts-resolved wait_until 5 listed svc $S4
t_check hosts-dropped [ "$(from_to c $C4 $S4 7103)" = drop ]
printf '{"event_type":"alert","src_ip":"%s","dest_ip":"%s","alert":{"severity":1,"signature_id":1000001,"signature":"NFBOX-TEST unit"}}\n' $C4IDS $S4 >>"$root/var/log/suricata/eve.json"
t_check suricata-banned wait_until 3 listed ids $C4IDS
t_check suricata-dropped [ "$(from_to c $C4IDS $S4 7000)" = drop ]
feed() { # SET FIELD: the field of the set's feed in status --json, "absent" without one
	ctl status --json | jq -r --arg s "$1" --arg k "$2" 'first((.feeds[] | select(.set == $s) | .[$k]), "absent")'
}
t_check country-missing-says grep -q "set 'geo-none' is empty until the database is read: rule 'drop-geo-none' drops nothing" <<<"$(feed geo-none warning)"

# ---- a set fetched from a URL, kept in the state directory ----
url_checked() { [ "$(feed lists checked)" != null ] && [ "$(feed lists checked)" != absent ]; }
kheld() { /usr/bin/python3 tests/lib/kset.py bpf "$tmp/bpffs/nfbox" "$1" | grep -q "^$2 "; } # SET PREFIX
t_check url-checked wait_until 10 url_checked
t_check url-entries [ "$(feed lists entries)" = 2 ]
t_check url-no-warning [ "$(feed lists warning)" = null ]
t_check url-in-kernel wait_until 3 kheld lists $S4URL/32
t_check url-in-kernel-prefix kheld lists 192.0.2.128/25
t_check url-dropped [ "$(from_to c $C4 $S4URL 7000)" = drop ]
t_check url-cached grep -qx "$S4URL" "$root/var/lib/nfbox/state/url-lists.cache"
# The server gone; a stop (not a restart: it detaches, so that no pinned
# set carries the entries over) and the dynamic sets' saved file removed:
# what comes back at the start is the URL's cache.
kill -TERM "$(cat "$NGX/nginx.pid")" && wait_until 5 sh -c "! [ -e '$NGX/nginx.pid' ]"
in_ct systemctl stop nfbox
rm -f "$root/var/lib/nfbox/state/dynsets"*
in_ct systemctl start nfbox
t_check url-kept-in-kernel wait_until 5 kheld lists $S4URL/32
t_check url-kept-dropped [ "$(from_to c $C4 $S4URL 7000)" = drop ]
url_warns() { feed lists warning | grep -q 'the set keeps its 2 entries'; }
t_check url-down-warns wait_until 10 url_warns
t_check url-kept-logged grep -q "set lists: 2 entries kept from the last fetch of https://$S4/list.txt" <(journal 200)

# ---- captures: the files hold the frames ----
in_s ip neigh replace 198.18.0.1 lladdr 02:00:00:00:00:01 dev span1 nud permanent
in_s ip route replace 198.18.0.0/24 dev span1
in_s "$NET" udp-blast 198.18.0.1 7777 5 >/dev/null 2>&1
in_c "$NET" udp-blast $S4 7778 5 >/dev/null 2>&1
# frames to 198.18.0.1 go out of span1 only: the capture on span0 takes them
tshark_has() { [ "$(tshark -r "$1" -Y "$2" 2>/dev/null | wc -l)" -ge "$3" ]; } # FILE FILTER MIN
written() { [ "$(ctl stats --json | jq --arg n "$1" '[.captures[] | select(.name == $n) | .written] | add // 0')" -ge "$2" ]; }
t_check capture-written wait_until 3 written span 5
t_check mirror-written wait_until 3 written mirror 5
in_ct systemctl stop nfbox
t_check capture-file tshark_has "$root/var/lib/nfbox/capture/span.pcapng" 'udp.dstport == 7777' 5
t_check mirror-file tshark_has "$root/var/lib/nfbox/capture/mirror.pcapng" 'udp.dstport == 7778' 5
in_ct systemctl start nfbox

# ---- metrics over HTTP, and the event log with its rotation ----
scrape() { in_c /usr/bin/python3 -c "import urllib.request as u; print(u.urlopen('http://$A4L:9470/metrics', timeout=3).read().decode())"; }
t_check metrics-scraped grep -q '^nfbox_rule_packets_total' <(scrape)
from_to c $C4 $S4 7104 >/dev/null
t_check log-written wait_until 3 grep -q '"rule":"logged"' "$root/var/log/nfbox/events.jsonl"
in_ct logrotate -f /etc/logrotate.d/nfbox >"$tmp/logrotate.out" 2>&1
t_check log-rotated test -s "$root/var/log/nfbox/events.jsonl.1"
from_to c $C4 $S4 7104 >/dev/null
t_check log-reopened wait_until 3 grep -q '"rule":"logged"' "$root/var/log/nfbox/events.jsonl"

# ---- --strict from /etc/default/nfbox: a policy with a warning is refused ----
# The policy's one warning: geo-none's database cannot be read.
pol=$root/etc/nfbox/policy.yaml
geo_line=$(grep -n 'name: drop-geo-none,' "$pol" | cut -d: -f1) # the warning's place: its from:
sed 's/^rules:$/rules:\n  - { name: strict-new, service: udp\/7106, action: drop }/' "$pol" >"$tmp/warned.yaml"
echo 'NFBOX_OPTS="--strict"' >"$root/etc/default/nfbox"
in_ct systemctl restart nfbox >/dev/null 2>&1
failed() { [ "$(show ActiveState)" = failed ]; }
t_check strict-start-refused wait_until 10 failed
t_check strict-start-status-78 [ "$(show ExecMainStatus)" = 78 ]
t_check strict-start-names-warning grep -qE "/etc/nfbox/policy.yaml:$geo_line:[0-9]+: error: set 'geo-none' is empty" <(journal 40)
sed -i '/geo-none/d' "$pol"
in_ct systemctl reset-failed nfbox
in_ct systemctl start nfbox
t_check strict-clean-starts wait_until 20 active
gen() { ctl status --json | jq -r .generation; }
g=$(gen)
cp "$pol" "$tmp/clean.yaml"
cp "$tmp/warned.yaml" "$pol"
reload_refused() { ! in_ct systemctl reload nfbox; }
t_check strict-reload-refused reload_refused
t_check strict-reload-keeps-generation [ "$(gen)" = "$g" ]
t_check strict-reload-keeps-old [ "$(from_to c $C4 $S4 7106)" = pass ]
t_check strict-reload-still-active active
cp "$tmp/clean.yaml" "$pol"

# ---- a fleet's node ----
pki=$root/etc/nfbox/fleet
mkdir -p "$pki" && chmod 700 "$pki"
cert() { # NAME [IP]
	local ext="extendedKeyUsage=clientAuth"
	[ -n "${2:-}" ] && ext="subjectAltName=IP:$2
extendedKeyUsage=serverAuth,clientAuth"
	printf '%s\n' "$ext" >"$pki/$1.ext"
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$pki/$1.key" -out "$pki/$1.csr" \
		-subj /O=nfbox-test 2>/dev/null &&
		openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$tmp/ca.key" -CAcreateserial -out "$pki/$1.crt" \
			-days 2 -extfile "$pki/$1.ext" 2>/dev/null
}
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$tmp/ca.key" -out "$pki/ca.crt" \
	-days 2 -subj /CN=nfbox-test-ca 2>/dev/null
cert etcd $ETCD && cert node && cert operator
etcd_start() {
	ip netns exec "$NS_E" etcd --name e1 --data-dir "$tmp/etcd" --listen-client-urls "https://$ETCD:2379" \
		--advertise-client-urls "https://$ETCD:2379" --listen-peer-urls "http://$ETCD:2380" \
		--initial-advertise-peer-urls "http://$ETCD:2380" --initial-cluster "e1=http://$ETCD:2380" \
		--cert-file "$pki/etcd.crt" --key-file "$pki/etcd.key" --trusted-ca-file "$pki/ca.crt" --client-cert-auth \
		--logger zap --log-level error >>"$tmp/etcd.log" 2>&1 &
	etcd_pid=$!
}
etcd_start
in_e() { # etcdctl's environment, in etcd's namespace
	ETCDCTL_API=3 ETCDCTL_ENDPOINTS="https://$ETCD:2379" ETCDCTL_CACERT=$pki/ca.crt ETCDCTL_CERT=$pki/operator.crt \
		ETCDCTL_KEY=$pki/operator.key ip netns exec "$NS_E" "$@"
}
t_check etcd-up wait_until 20 in_e etcdctl endpoint health
# etcd's users and roles as the runbook makes them (packaging's script)
for u in root operator n1; do head -c 18 /dev/urandom | base64 >"$pki/$u.pw" && chmod 600 "$pki/$u.pw"; done
rbac=$PWD/packaging/fleet/nfbox-fleet-rbac
t_check fleet-rbac sh -c "$(declare -f in_e); ETCD=$ETCD pki=$pki NS_E=$NS_E; in_e '$rbac' init '$pki/root.pw' >/dev/null &&
	in_e '$rbac' --root-password-file '$pki/root.pw' operator operator '$pki/operator.pw' >/dev/null &&
	in_e '$rbac' --root-password-file '$pki/root.pw' node branches n1 '$pki/n1.pw' >/dev/null"
fleet_file() { # FILE CERT USER [NODE]
	printf 'etcd:\n  endpoints: [https://%s:2379]\n  cert: %s.crt\n  key: %s.key\n  ca: ca.crt\n  user: %s\n  password-file: %s.pw\n%sgroup: branches\n' \
		$ETCD "$2" "$2" "$3" "$3" "${4:+node: $4
}" >"$1"
}
fleet_file "$pki/fleet.yaml" node n1 n1
fleet_file "$pki/operator.yaml" operator operator
echo 'NFBOX_OPTS="--fleet /etc/nfbox/fleet/fleet.yaml"' >"$root/etc/default/nfbox"
in_ct systemctl restart nfbox
if wait_until 20 active; then t_ok fleet-node-started; else t_fail fleet-node-started "$(show ActiveState): $(journal 12)"; fi
sed 's/^  - { name: logged, .*$/  - { name: pushed, service: udp\/7105, action: drop }/' "$root/etc/nfbox/policy.yaml" >"$pki/pushed.yaml"
out=$(ip netns exec "$NS_E" "$NFBOX" fleet push --fleet "$pki/operator.yaml" --wait 15s "$pki/pushed.yaml" 2>&1)
t_check fleet-push-applied grep -q 'n1: applied' <<<"$out"
t_check fleet-pushed-enforced [ "$(from_to c $C4 $S4 7105)" = drop ]
# as another node of the group shares a ban
in_e etcdctl --user "root:$(cat "$pki/root.pw")" put /nfbox/branches/sets/shared-bans/$C4FLEET '{"expires":0,"by":"n9"}' >/dev/null
t_check fleet-shared-ban-listed wait_until 3 listed shared-bans $C4FLEET
t_check fleet-shared-ban-dropped [ "$(from_to c $C4FLEET $S4 7000)" = drop ]
# a ban made here goes into etcd (in a pack of n1's), counted as a transaction
ctl set add shared-bans 198.51.100.77 --timeout 300 >/dev/null
t_check fleet-own-ban-shared wait_until 3 sh -c "$(declare -f in_e); ETCD=$ETCD pki=$pki NS_E=$NS_E;
	in_e etcdctl --user 'root:$(cat "$pki/root.pw")' get --prefix /nfbox/branches/sets/shared-bans/+n1. | grep -q '\"198.51.100.77\":'"
t_check fleet-own-ban-transactions sh -c "nsenter -t '$DROOT_LEADER' -a nfbox status | grep -q 'shared entries: 1 sent (in 1 transactions)'"
# etcd restarted (an upgrade of its package, a reboot of its host): the
# node resumes its watch, and a ban shared meanwhile arrives
kill -TERM "$etcd_pid" && wait "$etcd_pid" 2>/dev/null
etcd_pid=
etcd_start
t_check etcd-restarted wait_until 20 in_e etcdctl endpoint health
in_e etcdctl --user "root:$(cat "$pki/root.pw")" put /nfbox/branches/sets/shared-bans/198.51.100.104 '{"expires":0,"by":"n9"}' >/dev/null
t_check fleet-etcd-restart-ban-listed wait_until 20 listed shared-bans 198.51.100.104
resumed() { in_ct journalctl -u nfbox --no-pager -n 30 | grep 'fleet: etcd reached' | tail -n 1; }
t_check fleet-etcd-restart-resumed eval 'resumed | grep -q "the watch resumed from revision" || { resumed; journal 12; false; }'
in_ct systemctl stop nfbox
# the entry that came from etcd just before the stop is in the saved file
t_check fleet-stop-saved grep -q "198.51.100.104" "$root/var/lib/nfbox/state/dynsets"
t_done
