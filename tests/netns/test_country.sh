#!/bin/bash
# Country sets (sets: { NAME: { country: [CC...], database: FILE } }) on a
# deny-list (default accept), with a database the test writes itself
# (tests/lib/mmdbwrite.py; none ships in Debian):
# - the client of a blocked country is dropped, IPv4 and IPv6, another
#   client passes; status and set list say where the entries came from;
# - the database replaced (renamed over, as geoipupdate does) with the two
#   clients' countries swapped: within 2 s the first passes and the second
#   is dropped, without a reload;
# - a database that is not one: a warning in status, the entries stay;
# - nfbox set add on the set is refused; a restart keeps the entries;
# - validate refuses a code that is not one and a set without database.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
C4B=198.51.100.70 # the second client, in another country

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
in_c ip addr add $C4B/24 dev c0
DB=$NS_TMP/geo/country.mmdb
mkdir -p "$NS_TMP/geo"
mmdb() { /usr/bin/python3 tests/lib/mmdbwrite.py "$DB" "$@"; }
mmdb 198.51.100.0/26=DE 198.51.100.64/26=FR 2001:db8:1::/48=DE 203.0.113.0/24=US
cat >"$NS_TMP/p.yaml" <<YAML
version: 1
sets:
  blocked: { country: [de], database: $DB }
hooks:
  forward: { default: accept }
rules:
  - { name: drop-blocked, from: blocked, action: drop }
YAML
nfbox_start "$NS_TMP/p.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }
reloads() { nfbox_ctl status --json | jq -r .reloads_ok; }
feed() { # FIELD of the feed of set blocked (null as such)
	nfbox_ctl status --json |
		jq -r --arg k "$1" 'first((.feeds[] | select(.set == "blocked") | if has($k) then .[$k] else error("no \($k)") end), "absent")'
}
t_check de-dropped [ "$(probe_from $C4 $S4 7000)" = drop ]
t_check fr-passes [ "$(probe_from $C4B $S4 7000)" = pass ]
t_check de-v6-dropped [ "$(probe_from $C6 $S6 7000)" = drop ]
t_check status-entries [ "$(feed entries)" = 2 ]
t_check status-source [ "$(feed source)" = "DE from $DB" ]
t_check status-text grep -q "^feeds:      blocked: country, DE from $DB; 2 entries, loaded" <(nfbox_ctl status)
t_check list-by grep -Eq '^198\.51\.100\.0/26[[:space:]].*by country$' <(nfbox_ctl set list blocked)
r0=$(reloads)

# the database replaced, the countries swapped
mmdb 198.51.100.0/26=FR 198.51.100.64/26=DE 2001:db8:1::/48=FR 203.0.113.0/24=US
swapped() { [ "$(probe_from $C4B $S4 7000)" = drop ]; }
t_check swap-within-2s wait_until 2 grep -q "set blocked: 1 network of 1 country from $DB (1 added, 2 deleted)" "$NS_TMP/nfbox.err"
t_check swap-de-now-dropped swapped
t_check swap-fr-now-passes [ "$(probe_from $C4 $S4 7000)" = pass ]
t_check swap-v6-passes [ "$(probe_from $C6 $S6 7000)" = pass ]
t_check swap-no-reload [ "$(reloads)" = "$r0" ]

# a file that is not a database: a warning, the entries stay
echo "not a database" >"$DB.tmp" && mv "$DB.tmp" "$DB"
t_check bad-db-warned wait_until 2 sh -c "'$NFBOX' status --socket '$NFBOX_SOCK' | grep -q 'warning: .*country.mmdb.*the set keeps its entries (1)'"
t_check bad-db-keeps [ "$(probe_from $C4B $S4 7000)" = drop ]

# not by hand
out=$(nfbox_ctl set add blocked 192.0.2.1 2>&1)
t_check set-add-refused grep -q "set 'blocked' is filled from its country database by the daemon: change the policy instead" <<<"$out"

# a restart keeps the entries (the database is still bad)
nfbox_stop
nfbox_start "$NS_TMP/p.yaml" || { t_fail restart "$(cat "$NS_TMP/nfbox.err")"; t_done; }
t_check restart-keeps [ "$(probe_from $C4B $S4 7000)" = drop ]
t_check restart-warns [ "$(feed warning)" != null ]

# a database that is not there at the start: the set starts empty, and
# status says what that means (a deny-list that denies nothing) until the
# database appears; then it is read and enforced without a reload
nfbox_stop
DB2=$NS_TMP/later/country.mmdb
mkdir -p "$NS_TMP/later"
sed "s|$DB|$DB2|" "$NS_TMP/p.yaml" >"$NS_TMP/p2.yaml"
rm -f "$NS_TMP/state/dynsets"
nfbox_start "$NS_TMP/p2.yaml" || { t_fail start-no-db "$(cat "$NS_TMP/nfbox.err")"; t_done; }
t_check no-db-empty [ "$(feed entries)" = 0 ]
t_check no-db-says-what-it-means grep -q "set 'blocked' is empty until the database is read: rule 'drop-blocked' drops nothing" <<<"$(feed warning)"
t_check no-db-text-says grep -q "rule 'drop-blocked' drops nothing" <(nfbox_ctl status)
t_check no-db-passes [ "$(probe_from $C4 $S4 7000)" = pass ]
/usr/bin/python3 tests/lib/mmdbwrite.py "$DB2.tmp" 198.51.100.0/26=DE && mv "$DB2.tmp" "$DB2"
t_check db-appears-read wait_until 3 sh -c "[ \"\$('$NFBOX' status --json --socket '$NFBOX_SOCK' | jq -r '.feeds[0].entries')\" = 1 ]"
t_check db-appears-warning-gone [ "$(feed warning)" = null ]
t_check db-appears-dropped [ "$(probe_from $C4 $S4 7000)" = drop ]

# validate
cat >"$NS_TMP/bad.yaml" <<'YAML'
version: 1
sets:
  a: { country: [UK], database: /nonexistent/x.mmdb }
  b: { country: [FR] }
hooks:
  forward: { default: accept }
rules:
  - { name: r, from: [a, b], action: drop }
YAML
out=$("$NFBOX" validate "$NS_TMP/bad.yaml" 2>&1)
t_check validate-code grep -q "bad.yaml:3:18: error: country 'UK': did you mean GB?" <<<"$out"
t_check validate-missing-db grep -q "bad.yaml:3:33: warning: database '/nonexistent/x.mmdb' cannot be read" <<<"$out"
t_check validate-no-db grep -q "bad.yaml:4:17: error: a set of countries needs 'database: PATH'" <<<"$out"
nfbox_stop
t_done
