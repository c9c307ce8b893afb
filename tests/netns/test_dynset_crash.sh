#!/bin/bash
# An acknowledged change is never lost: a client adds 100,000 prefixes to a
# dynamic set in batches of 4,000 while the daemon is killed (SIGKILL) at
# random moments, within a request or between two; after each kill a new
# daemon adopts the pinned state and the client sends again what was not
# acknowledged. At the end every prefix of an acknowledged batch is in the
# daemon's set and in the kernel's (the BPF tries or the nftables set), and
# traffic from one of them is dropped. Runs with either backend
# (NFBOX_BACKEND).
# runner: timeout 240
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
. tests/lib/netns.sh
NET=$PWD/tests/lib/net.py
BATCHES=${NFBOX_CRASH_BATCHES:-25} PER=4000 KILLS=${NFBOX_CRASH_KILLS:-6}
SEED=${NFBOX_CRASH_SEED:-$$}
echo "# seed $SEED (NFBOX_CRASH_SEED to repeat)"
RANDOM=$SEED

ns_setup || { t_fail setup "cannot build the namespaces"; t_done; }
cat >"$NS_TMP/policy.yaml" <<YAML
version: 1
sets:
  banned: { dynamic: true }
hooks:
  forward: { default: accept }
rules:
  - { name: drop-banned, from: banned, action: drop }
YAML
nfbox_start "$NS_TMP/policy.yaml" || { t_fail start "$(cat "$NS_TMP/nfbox.err")"; t_done; }

# Batch b holds the /64 prefixes 2001:db8:X:Y::/64 numbered b*4000 ..
# b*4000+3999; number 65536 is 2001:db8:1::/64, the client's own network.
# Written as nfbox and the kernel's readers below print them (the zeros
# compressed: 2001:db8::/64, 2001:db8:1::/64), without ipaddress, which
# took 1.4 s of CPU for the 100,000.
mkdir -p "$NS_TMP/b"
/usr/bin/python3 - "$NS_TMP/b" "$BATCHES" "$PER" <<'PY'
import sys
d, nb, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for b in range(nb):
    with open(f"{d}/{b}", "w") as f:
        for i in range(b * per, (b + 1) * per):
            x, y = i >> 16, i & 0xffff
            f.write(f"2001:db8:{x:x}:{y:x}::/64\n" if y else f"2001:db8:{x:x}::/64\n" if x else "2001:db8::/64\n")
PY

# KILLS batches, chosen at random, are killed within
declare -A killat=()
while [ ${#killat[@]} -lt "$KILLS" ] && [ ${#killat[@]} -lt "$BATCHES" ]; do killat[$((RANDOM % BATCHES))]=1; done
acked=() kills=0 restarts_failed=0
# send B: 0 if the daemon acknowledged batch B
send() { nfbox_ctl set add banned --file "$NS_TMP/b/$1" >"$NS_TMP/send.out" 2>&1 && grep -q "added" "$NS_TMP/send.out"; }
b=0
while [ $b -lt "$BATCHES" ]; do
	if [ -n "${killat[$b]:-}" ]; then
		unset "killat[$b]" # the batch sent again is not killed again
		send $b &
		sp=$!
		# somewhere in the request: before it, in the kernel change, in the save, after
		sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
		kill -9 "$NFBOX_PID" 2>/dev/null
		wait "$NFBOX_PID" 2>/dev/null
		NFBOX_PID=
		kills=$((kills + 1))
		wait $sp && acked+=("$b")
		if ! nfbox_start "$NS_TMP/policy.yaml"; then
			restarts_failed=$((restarts_failed + 1))
			t_fail "restart-$kills" "$(tail -n 3 "$NS_TMP/nfbox.err")"
			break
		fi
		# not acknowledged: sent again (an entry already there is renewed)
		[ "${acked[-1]:-}" = "$b" ] || continue
	elif send $b; then
		acked+=("$b")
	else
		t_fail "batch-$b" "$(cat "$NS_TMP/send.out")"
		break
	fi
	b=$((b + 1))
done
echo "# $kills kills, ${#acked[@]} batches acknowledged"
t_check killed-at-random [ "$kills" -eq "$KILLS" ]
t_check every-batch-acknowledged [ "${#acked[@]}" -eq "$BATCHES" ]

# every acknowledged prefix in the daemon's set and in the kernel's
for a in "${acked[@]}"; do cat "$NS_TMP/b/$a"; done | sort -u >"$NS_TMP/acked"
nfbox_ctl set list banned | grep -v '^set ' | sed 's/\t.*//' | sort -u >"$NS_TMP/daemon"
t_check acked-count [ "$(wc -l <"$NS_TMP/acked")" -eq $((BATCHES * PER)) ]
t_check daemon-holds-every-acked sh -c "! comm -23 '$NS_TMP/acked' '$NS_TMP/daemon' | grep -q ."
kernel_set() {
	if bpf_backend; then
		bpftool -j map dump pinned "$NFBOX_PINS/maps/nfb_dyn6" | /usr/bin/python3 -c '
import ipaddress, json, sys
for e in json.load(sys.stdin):
    k = bytes(int(x, 16) for x in e["key"])
    plen = int.from_bytes(k[0:4], "little") - 16
    print(f"{ipaddress.IPv6Address(k[6:22])}/{plen}")'
	else
		in_a nft -j list set inet nfbox d_banned_6 | /usr/bin/python3 -c '
import json, sys
for o in json.load(sys.stdin)["nftables"]:
    for e in o.get("set", {}).get("elem", []):
        v = e.get("elem", {}).get("val", e) if isinstance(e, dict) else e
        p = v.get("prefix") if isinstance(v, dict) else None
        if p:
            print("%s/%s" % (p["addr"], p["len"]))'
	fi
}
kernel_set | sort -u >"$NS_TMP/kernel"
t_check kernel-holds-every-acked sh -c "[ -s '$NS_TMP/kernel' ] && ! comm -23 '$NS_TMP/acked' '$NS_TMP/kernel' | grep -q ."

# traffic from an acknowledged prefix (the client's network) is dropped
probe() { probe_from "$C6" "$S6" 7000; } # (tests/lib/netns.sh)
t_check client-network-dropped [ "$(probe)" = drop ]
nfbox_ctl set del banned 2001:db8:1::/64 >/dev/null 2>&1
t_check client-network-passes-when-deleted [ "$(probe)" = pass ]
[ -n "${NFBOX_CRASH_CONTROL:-}" ] && t_done

# The positive control: a daemon that answers "ok" without saving
# (NFBOX_TEST_PLANT=dyn-no-save, compiled into the test build only) must
# fail this test, killed at a moment of our choosing.
if "$NFBOX" --version >/dev/null 2>&1 && [ "$NFBOX" != "${NFBOX_BIN_RELEASE:-}" ]; then
	if NFBOX_TEST_PLANT=dyn-no-save NFBOX_CRASH_CONTROL=1 NFBOX_CRASH_BATCHES=6 NFBOX_CRASH_KILLS=3 \
		NS_PREFIX=${NS_PREFIX}p "$0" >"$NS_TMP/control.out" 2>&1; then
		t_fail planted-no-save-caught "a daemon that does not save what it acknowledges passed: $(tail -n 3 "$NS_TMP/control.out")"
	else
		t_check planted-no-save-caught grep -q "^FAIL daemon-holds-every-acked" "$NS_TMP/control.out"
	fi
fi
t_done
