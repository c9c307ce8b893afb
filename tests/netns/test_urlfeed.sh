#!/bin/bash
# Blocklists fetched from a URL (appliance/feeds/url/), driven by
# build/asan/urlfeed as the daemon is to drive the library: the last good
# list read from the state directory at the start, then one fetch. The
# server is Debian's nginx (unpacked, never installed on the host) in the
# server namespace, with TLS from a CA the test makes; the fetch runs in
# the appliance namespace. Cases: the server not verified without the CA
# (nor with another CA); the first fetch (kept in the state directory);
# 304 on a conditional request; the list read back at the start; content
# that changes; and what must never replace the last good list: 500, a
# timeout, an oversize body (declared, and gzip'ed without a length),
# garbage (HTML), a redirect loop, a redirect to http://. A redirect within
# https is followed. Spamhaus' DROP JSON and a FireHOL netset are read.
# Positive controls (the test build's NFBOX_TEST_PLANT):
# urlfeed-no-verify (no TLS verification) and urlfeed-garbage-empties (a
# list of garbage empties the set) each make cases fail.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
. tests/lib/nginx.sh
FEED=${NFBOX_URLFEED:-$PWD/build/asan/urlfeed}
[ -x "$FEED" ] || { t_fail urlfeed "no $FEED: make unit"; t_done; }

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }

ngx_unpack

# ---- a test CA, the server's certificate (its IP address), another CA ----
ngx_ca ca && ngx_ca other || { t_fail pki "openssl could not make the CAs"; t_done; }
ngx_server_cert "$S4" || { t_fail pki "no server certificate"; t_done; }

# ---- nginx: /list.txt, whose behaviour flag files in $W/modes switch ----
W=$NS_TMP/www
mkdir -p "$W/real" "$W/gz" "$W/modes"
ngx_conf_head >"$NGX/nginx.conf"
cat >>"$NGX/nginx.conf" <<CONF
	server {
		listen $S4:443 ssl;
		listen $S4:8080;
		ssl_certificate $P/server.pem;
		ssl_certificate_key $P/server.key;
		root $W;
		location = /list.txt {
			if (-f $W/modes/500) { return 500; }
			if (-f $W/modes/loop) { return 302 https://$S4/list.txt; }
			if (-f $W/modes/http) { return 302 http://$S4:8080/list.txt; }
			if (-f $W/modes/moved) { return 302 https://$S4/real/list.txt; }
			if (-f $W/modes/slow) { set \$limit_rate 20; }
		}
		location /gz/ { gzip on; gzip_types text/plain; gzip_min_length 1; }
	}
}
CONF
ngx_start "$NS_S" ||
	{ t_fail nginx-start "$(cat "$NGX/error.log" 2>/dev/null)"; t_done; }
wait_listen in_s 443

ST=$NS_TMP/state
mkdir -p "$ST"
URL=https://$S4/list.txt
printf '; Spamhaus-style list\n192.0.2.0/24 ; SBL1\n198.51.100.128/25 ; SBL2\n' >"$W/list.txt"

fetch() { in_a "$FEED" "$ST" "$@" 2>&1; } # NAME URL [CA|-] [MAX_BYTES] [TIMEOUT_MS]
# expect NAME OUTPUT REGEX: one line of OUTPUT matches
expect() {
	if grep -Eq -- "$3" <<<"$2"; then t_ok "$1"; else t_fail "$1" "expected /$3/ in: $(tr '\n' '|' <<<"$2")"; fi
}
cache=$ST/url-drop.cache
kept() { [ -f "$cache" ] && md5sum <"$cache"; }
# intact NAME SUM: the kept list is the one it was
intact() {
	if [ -n "$2" ] && [ "$(kept)" = "$2" ]; then t_ok "$1"; else t_fail "$1" "the kept list changed (or there was none)"; fi
}
mode() { rm -f "$W"/modes/*; [ -z "${1:-}" ] || : >"$W/modes/$1"; }
last_status() { tail -n 1 "$NGX/access.log" | awk '{ print $9 }'; }

# ---- TLS: verified against the system's CAs, or against ca: ----
out=$(fetch drop "$URL")
expect tls-system-cas-refuse "$out" '^fetch: error EACCES .*; kept 0 entries$'
out=$(fetch drop "$URL" "$P/other.pem")
expect tls-other-ca-refuses "$out" '^fetch: error EACCES .*; kept 0 entries$'
[ ! -e "$cache" ] && t_ok tls-refused-keeps-nothing || t_fail tls-refused-keeps-nothing "a list was kept"

# ---- the first fetch; 304; the start from the kept list ----
out=$(fetch drop "$URL" "$P/ca.pem")
expect first-fetch "$out" '^fetch: changed 2 entries$'
expect first-fetch-entries "$out" '^entries: 192\.0\.2\.0/24 198\.51\.100\.128/25$'
[ -s "$cache" ] && t_ok first-fetch-kept || t_fail first-fetch-kept "no $cache"
out=$(fetch drop "$URL" "$P/ca.pem")
expect start-from-kept-list "$out" '^start: 2 entries$'
expect not-modified "$out" '^fetch: unchanged 2 entries$'
[ "$(last_status)" = 304 ] && t_ok conditional-request-304 || t_fail conditional-request-304 "nginx answered $(last_status)"

# ---- content that changes ----
sleep 1 # a Last-Modified of another second
printf '# FireHOL-style\n192.0.2.0/24\n203.0.113.64/26\n2001:db8:bad::/48\n' >"$W/list.txt"
out=$(fetch drop "$URL" "$P/ca.pem")
expect content-changes "$out" '^fetch: changed 3 entries$'
[ "$(last_status)" = 200 ] && t_ok changed-answer-200 || t_fail changed-answer-200 "nginx answered $(last_status)"
good=$(kept)

# ---- what never replaces the last good list ----
mode 500
out=$(fetch drop "$URL" "$P/ca.pem")
expect error-500-keeps "$out" '^fetch: error EPROTO \(HTTP status 500\); kept 3 entries$'
intact error-500-kept-list "$good"
mode slow
printf '192.0.2.0/24\n%.0s' $(seq 20) >"$W/slow.tmp" && cp "$W/list.txt" "$W/list.bak" && cat "$W/list.bak" "$W/slow.tmp" >"$W/list.txt"
out=$(fetch drop "$URL" "$P/ca.pem" 0 1500)
expect timeout-keeps "$out" '^fetch: error ETIMEDOUT .*; kept 3 entries$'
intact timeout-kept-list "$good"
mode
cp "$W/list.bak" "$W/list.txt"
head -c 5000 /dev/zero | tr '\0' '\n' >>"$W/list.txt" # blank lines: a list still, but large
out=$(fetch drop "$URL" "$P/ca.pem" 2000)
expect oversize-keeps "$out" '^fetch: error EFBIG .*; kept 3 entries$'
intact oversize-kept-list "$good"
printf '<html><head><title>502 Bad Gateway</title></head>\n<body>upstream down</body></html>\n' >"$W/list.txt"
out=$(fetch drop "$URL" "$P/ca.pem")
expect garbage-keeps "$out" '^fetch: error EINVAL \(not a list: line 1: .*\); kept 3 entries$'
intact garbage-kept-list "$good"
cp "$W/list.bak" "$W/list.txt"
mode loop
out=$(fetch drop "$URL" "$P/ca.pem")
expect redirect-loop-keeps "$out" '^fetch: error ELOOP .*; kept 3 entries$'
mode http
out=$(fetch drop "$URL" "$P/ca.pem")
expect redirect-to-http-refused "$out" '^fetch: error EACCES .*; kept 3 entries$'
intact redirects-kept-list "$good"

# ---- a redirect within https is followed ----
printf '198.51.100.0/24\n' >"$W/real/list.txt"
mode moved
out=$(fetch drop "$URL" "$P/ca.pem")
expect redirect-followed "$out" '^fetch: changed 1 entries$'
mode

# ---- an oversize body without a declared length (gzip, chunked) ----
head -c 100000 /dev/zero | tr '\0' '\n' >"$W/gz/list.txt"
echo 192.0.2.0/24 >>"$W/gz/list.txt"
out=$(fetch gz "https://$S4/gz/list.txt" "$P/ca.pem" 50000)
expect oversize-chunked "$out" '^fetch: error EFBIG .*; kept 0 entries$'
grep -q '"GET /gz/list.txt HTTP/1.1" 200 [0-9]* ' "$NGX/access.log" && t_ok oversize-chunked-served || t_fail oversize-chunked-served "$(tail -n 1 "$NGX/access.log")"

# ---- the formats ----
cat >"$W/drop_v4.json" <<'JSON'
{"cidr":"192.0.2.0/24","sblid":"SBL000001","rir":"ripencc"}
{"cidr":"203.0.113.0/25","sblid":"SBL000002","rir":"arin"}
{"type":"metadata","timestamp":1796544000,"size":2,"records":2,"copyright":"(c) test"}
JSON
out=$(fetch spamhaus "https://$S4/drop_v4.json" "$P/ca.pem")
expect spamhaus-json "$out" '^entries: 192\.0\.2\.0/24 203\.0\.113\.0/25$'
printf '#\n# firehol_level1\n#\n198.51.100.7\n203.0.113.128/25\n' >"$W/firehol.netset"
out=$(fetch firehol "https://$S4/firehol.netset" "$P/ca.pem")
expect firehol-netset "$out" '^entries: 198\.51\.100\.7 203\.0\.113\.128/25$'
t_done
