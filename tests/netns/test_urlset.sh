#!/bin/bash
# Sets fetched from a URL in the daemon (sets: { NAME: { url:, refresh:,
# ca: } }, appliance/feeds/part.c), with traffic, on both backends. The
# server is Debian's nginx (unpacked, never installed on the host) in the
# server namespace, with TLS from a CA the test makes (as test_urlfeed,
# which tests the library's cases one by one). The refresh is the policy's
# least, 5m; the test build's NFBOX_TEST_URL_REFRESH=2 makes it 2 s (nfbox
# itself has no such switch). Cases:
# - the first fetch soon after the start: a listed client is dropped,
#   another passes; status (kind url, the URL, entries, loaded, checked;
#   every key named in docs/report.md);
#   nfbox set add/flush refused;
# - the list changes on the server: after a refresh the new address is
#   dropped and the old one passes, without a reload;
# - the server answers 500, then garbage: the set keeps its entries (the
#   listed client still dropped), status and the log say the error;
# - a fetch that takes long (nginx's limit_rate) runs off the loop:
#   status answers at once meanwhile;
# - a reload with the same URL loads nothing again; a reload without the
#   set stops its fetches; a stop during a slow fetch ends it (within a
#   second, not the fetch's 30 s timeout);
# - a restart with the server down: the kept list is enforced at the
#   start (the dynamic sets' saved file removed, so that it is the URL's
#   list that comes back).
# Positive controls (NFBOX_TEST_PLANT): urlset-failure-empties (a failed
# fetch empties the set) makes the 500, garbage and server-down cases
# fail; urlset-stop-waits (a stop lets the fetch run on) stop-ends-fetch.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
. tests/lib/nginx.sh
C4B=198.51.100.70 # the second client

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
in_c ip addr add $C4B/24 dev c0

ngx_unpack

# ---- a test CA and the server's certificate (its IP address) ----
ngx_ca ca && ngx_server_cert "$S4" || { t_fail pki "openssl could not make the certificates"; t_done; }

# ---- nginx: /list.txt, whose behaviour flag files in $W/modes switch ----
W=$NS_TMP/www
mkdir -p "$W/modes"
ngx_conf_head >"$NGX/nginx.conf"
cat >>"$NGX/nginx.conf" <<CONF
	server {
		listen $S4:443 ssl;
		ssl_certificate $P/server.pem;
		ssl_certificate_key $P/server.key;
		root $W;
		location = /list.txt {
			if (-f $W/modes/500) { return 500; }
			if (-f $W/modes/slow) { set \$limit_rate 40; }
		}
	}
}
CONF
nginx_start() {
	ngx_start "$NS_S" &&
		wait_listen in_s 443
}
nginx_stop() {
	[ -f "$NGX/nginx.pid" ] && kill -TERM "$(cat "$NGX/nginx.pid")" 2>/dev/null
	wait_until 5 sh -c "! [ -e '$NGX/nginx.pid' ]"
}
nginx_start || { t_fail nginx-start "$(cat "$NGX/error.log" 2>/dev/null)"; t_done; }
mode() { rm -f "$W"/modes/*; [ -z "${1:-}" ] || : >"$W/modes/$1"; }
fetches() { wc -l <"$NGX/access.log"; }

URL=https://$S4/list.txt
printf '# a FireHOL-style list\n%s\n192.0.2.0/24\n' "$C4" >"$W/list.txt"
cat >"$NS_TMP/p.yaml" <<YAML
version: 1
sets:
  listed: { url: "$URL", refresh: 5m, ca: $P/ca.pem }
hooks:
  forward: { default: accept }
rules:
  - { name: drop-listed, from: listed, action: drop }
YAML
cat >"$NS_TMP/none.yaml" <<YAML
version: 1
hooks:
  forward: { default: accept }
YAML

feed() { # FIELD of the feed of set listed
	nfbox_ctl status --json |
		jq -r --arg k "$1" 'first((.feeds[] | select(.set == "listed") | if has($k) then .[$k] else error("no \($k)") end), "absent")'
}
log_has() { grep -q -- "$1" "$NS_TMP/nfbox.err"; }

export NFBOX_TEST_URL_REFRESH=2
nfbox_start "$NS_TMP/p.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }

# ---- the first fetch ----
t_check first-fetch wait_until 5 log_has "set listed: 2 entries fetched from $URL (2 added, 0 deleted)"
t_check listed-dropped [ "$(probe_from $C4 $S4 7000)" = drop ]
t_check other-passes [ "$(probe_from $C4B $S4 7000)" = pass ]
t_check status-kind [ "$(feed kind)" = url ]
t_check status-source [ "$(feed source)" = "$URL" ]
t_check status-entries [ "$(feed entries)" = 2 ]
t_check status-loaded [ "$(feed loaded)" != null ]
t_check status-checked [ "$(feed checked)" != null ]
t_check status-no-warning [ "$(feed warning)" = null ]
nfbox_ctl status --json >"$NS_TMP/status.json"
out=$(/usr/bin/python3 tests/lib/keysdoc.py docs/report.md "$NS_TMP/status.json" 2>&1) &&
	t_ok status-keys-documented || t_fail status-keys-documented "$out"
t_check status-text grep -q "^feeds:      listed: url, $URL; 2 entries, loaded" <(nfbox_ctl status)
t_check list-by grep -Eq "^198\.51\.100\.2[[:space:]].*by url" <(nfbox_ctl set list listed)
out=$(nfbox_ctl set add listed 192.0.2.99 2>&1)
t_check set-add-refused grep -q "set 'listed' is filled from its URL by the daemon: change the policy instead" <<<"$out"
out=$(nfbox_ctl set flush listed 2>&1)
t_check set-flush-refused grep -q "set 'listed' is filled from its URL by the daemon" <<<"$out"
t_check flush-refused-keeps [ "$(probe_from $C4 $S4 7000)" = drop ]

# ---- the list changes on the server ----
sleep 1 # a Last-Modified of another second
printf '%s\n192.0.2.0/24\n' "$C4B" >"$W/list.txt"
t_check change-fetched wait_until 6 log_has "set listed: 2 entries fetched from $URL (1 added, 1 deleted)"
t_check change-new-dropped [ "$(probe_from $C4B $S4 7000)" = drop ]
t_check change-old-passes [ "$(probe_from $C4 $S4 7000)" = pass ]
loaded=$(feed loaded)

# ---- a failed fetch, garbage: the set keeps its entries ----
mode 500
t_check error-500-status wait_until 6 sh -c "'$NFBOX' status --socket '$NFBOX_SOCK' | grep -q 'warning: .*HTTP status 500.*; the set keeps its 2 entries'"
t_check error-500-logged log_has "set listed: cannot fetch $URL: .*HTTP status 500.*; the set keeps its 2 entries"
t_check error-500-keeps [ "$(probe_from $C4B $S4 7000)" = drop ]
t_check error-500-entries [ "$(feed entries)" = 2 ]
t_check error-500-loaded-stays [ "$(feed loaded)" = "$loaded" ]
mode
sleep 1
printf '<html><head><title>502 Bad Gateway</title></head>\n<body>upstream down</body></html>\n' >"$W/list.txt"
t_check garbage-status wait_until 6 sh -c "'$NFBOX' status --socket '$NFBOX_SOCK' | grep -q 'warning: .*not a list.*; the set keeps its 2 entries'"
t_check garbage-keeps [ "$(probe_from $C4B $S4 7000)" = drop ]
t_check garbage-entries [ "$(feed entries)" = 2 ]
printf '%s\n192.0.2.0/24\n' "$C4B" >"$W/list.txt"
warning_cleared() { [ "$("$NFBOX" status --socket "$NFBOX_SOCK" --json | jq -r '.feeds[0] | if has("warning") then .warning else error("no warning") end')" = null ]; }
t_check good-again-clears wait_until 6 warning_cleared

# ---- a slow fetch runs off the loop ----
{ printf '%s\n192.0.2.0/24\n' "$C4B"; printf '# padding, a slow body\n%.0s' $(seq 20); } >"$W/list.txt"
n0=$(fetches)
mode slow
sleep 3 # a fetch has begun (every 2 s), and takes ~12 s at 40 bytes/s
slowest=0
for _ in 1 2 3 4 5; do
	t0=$(date +%s%N)
	nfbox_ctl status >/dev/null
	ms=$((($(date +%s%N) - t0) / 1000000))
	[ $ms -gt $slowest ] && slowest=$ms
	sleep 0.3
done
t_check slow-fetch-under-way [ "$(fetches)" = "$n0" ]
t_check loop-answers-during-fetch [ "$slowest" -lt 1000 ]
mode
t_check slow-fetch-ends wait_until 30 sh -c "[ \$(wc -l <'$NGX/access.log') -gt $n0 ]"
t_check slow-fetch-keeps [ "$(probe_from $C4B $S4 7000)" = drop ]

# ---- reloads ----
kept0=$(grep -c "kept from the last fetch" "$NS_TMP/nfbox.err")
nfbox_ctl reload --policy "$NS_TMP/p.yaml" >/dev/null 2>&1
t_check reload-same-url-keeps [ "$(grep -c "kept from the last fetch" "$NS_TMP/nfbox.err")" = "$kept0" ]
t_check reload-same-url-enforced [ "$(probe_from $C4B $S4 7000)" = drop ]
nfbox_ctl reload --policy "$NS_TMP/none.yaml" >/dev/null 2>&1
sleep 1
n0=$(fetches)
sleep 4
t_check removed-set-not-fetched [ "$(fetches)" = "$n0" ]
t_check removed-set-passes [ "$(probe_from $C4B $S4 7000)" = pass ]
nfbox_ctl reload --policy "$NS_TMP/p.yaml" >/dev/null 2>&1
t_check set-back-kept-list wait_until 3 log_has "set listed: 2 entries kept from the last fetch of $URL"
t_check set-back-dropped [ "$(probe_from $C4B $S4 7000)" = drop ]

# ---- a stop during a slow fetch ends it: the daemon does not wait ----
touch "$W/list.txt" # a 200 with the slow body, not a 304
mode slow
# counted once a fast fetch already under way has ended (it is logged as it
# ends: counted before, under load it once ended after, 11 against 10)
sleep 1
n0=$(fetches)
sleep 2 # a slow fetch under way
t_check stop-during-fetch [ "$(fetches)" = "$n0" ]
t0=$(date +%s%N)
nfbox_stop
ms=$((($(date +%s%N) - t0) / 1000000))
t_check stop-ends-fetch [ "$ms" -lt 2500 ]
t_check stop-orderly grep -q "detaching and stopping" "$NS_TMP/nfbox.err"
mode

# ---- a restart with the server down: the kept list at the start ----
nginx_stop
ls "$NS_TMP/state" >"$NS_TMP/state.ls"
rm -f "$NS_TMP/state/dynsets"* # the URL's own cache is what must bring the entries back
nfbox_start "$NS_TMP/p.yaml" || { t_fail restart "$(cat "$NS_TMP/nfbox.err")"; t_done; }
t_check restart-kept-list log_has "set listed: 2 entries kept from the last fetch of $URL"
t_check restart-enforced [ "$(probe_from $C4B $S4 7000)" = drop ]
t_check restart-old-passes [ "$(probe_from $C4 $S4 7000)" = pass ]
t_check restart-down-warns wait_until 6 sh -c "'$NFBOX' status --socket '$NFBOX_SOCK' | grep -q 'warning: .*; the set keeps its 2 entries'"
t_check restart-down-logged log_has "set listed: cannot fetch $URL: "
t_check restart-down-keeps [ "$(probe_from $C4B $S4 7000)" = drop ]
nfbox_stop
[ -n "${NFBOX_URLSET_LOG:-}" ] && cp "$NS_TMP/nfbox.err" "$NFBOX_URLSET_LOG"
t_done
