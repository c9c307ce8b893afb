#!/bin/bash
# `nfbox plan --nft` against the kernel: for the shipped policies (as they
# are, with the BPF backend's NAT and conntrack, and with backend:
# nftables) and the nftables goldens (counter maps, sets of one and of
# several protocols, rejects, NAT) the printed ruleset passes `nft -c -f`,
# and loading it with
# `nft -f` gives the same `nft list table inet nfbox` as the daemon's own
# netlink transaction: what the operator reads is what runs.
set -u
cd "$(dirname "$0")/../.."
. tests/lib/lib.sh
P=nfp$$
TMP=$(mktemp -d /tmp/nfbox-plan.XXXXXX)
PID=
cleanup() {
	[ -n "$PID" ] && kill -9 "$PID" 2>/dev/null
	ip netns del $P-d 2>/dev/null
	ip netns del $P-n 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# The listing without what differs by nature: the owner and persist flags
# (nft 1.1 lists persist, 1.0 does not), handles
# and the order nft lists the elements of a set in.
normal() {
	/usr/bin/python3 -c '
import re, sys
out = []
for line in sys.stdin:
    if re.match(r"\s*flags\s*((owner|persist)[, ]*)*$", line) or "# progname" in line:
        line = re.sub(r"\s*# progname.*", "", line)
        if re.match(r"\s*flags\s*((owner|persist)[, ]*)*$", line):
            continue
    if not line.strip():
        continue
    line = re.sub(r"\{ ([^{}]*) \}", lambda m: "{ " + ", ".join(sorted(m.group(1).split(", "))) + " }", line)
    out.append(line)
sys.stdout.write("".join(out))'
}

check_policy() { # NAME FILE
	local name=$1 f=$2
	ip netns del $P-d 2>/dev/null
	ip netns del $P-n 2>/dev/null
	ip netns add $P-d && ip netns add $P-n || return 1
	if ! "$NFBOX" plan --nft "$f" >"$TMP/$name.nft" 2>"$TMP/$name.err"; then
		t_fail "$name-plan" "$(cat "$TMP/$name.err")"
		return
	fi
	if ! grep -q '^table inet nfbox' "$TMP/$name.nft"; then
		t_skip "$name" "no table for this policy"
		return
	fi
	out=$(ip netns exec $P-n nft -c -f "$TMP/$name.nft" 2>&1) && t_ok "$name-nft-check" || t_fail "$name-nft-check" "$out"
	ip netns exec $P-n nft -f "$TMP/$name.nft" 2>/dev/null
	ip netns exec $P-n nft list table inet nfbox | normal >"$TMP/$name.from-plan"
	ip netns exec $P-d "$NFBOX" run --policy "$f" --state-dir "$TMP/state" --socket "$TMP/s.sock" --no-pin --allow-unsafe-files \
		>"$TMP/$name.out" 2>"$TMP/$name.run" &
	PID=$!
	if ! wait_until 10 grep -q '^ready$' "$TMP/$name.out"; then
		t_fail "$name-plan-is-what-runs" "the daemon was not ready after 10 s: $(tail -n 3 "$TMP/$name.run")"
		kill -9 $PID 2>/dev/null
		wait $PID
		PID=
		return
	fi
	ip netns exec $P-d nft list table inet nfbox | normal >"$TMP/$name.from-daemon"
	kill -TERM $PID
	wait $PID
	PID=
	if [ -s "$TMP/$name.from-daemon" ] && diff -u "$TMP/$name.from-plan" "$TMP/$name.from-daemon" >"$TMP/$name.diff"; then
		t_ok "$name-plan-is-what-runs"
	else
		t_fail "$name-plan-is-what-runs" "$(head -40 "$TMP/$name.diff"; tail -3 "$TMP/$name.run")"
	fi
}

for f in tests/unit/golden/valid/*.yaml; do
	grep -q 'backend: nftables' "$f" && check_policy "golden-$(basename "$f" .yaml)" "$f"
done
for f in config/policy.yaml config/examples/*.yaml; do
	n=$(basename "$f" .yaml)
	check_policy "$n" "$f"
	# The same policy with the nftables backend.
	if grep -q '^options:' "$f"; then
		sed 's/^options:/options:\n  backend: nftables/' "$f" >"$TMP/$n-nft.yaml"
	else
		{ cat "$f"; printf 'options:\n  backend: nftables\n'; } >"$TMP/$n-nft.yaml"
	fi
	# Set files are named relative to the policy.
	cp config/examples/*.txt "$TMP/" 2>/dev/null
	check_policy "$n-nftables" "$TMP/$n-nft.yaml"
done
t_done
