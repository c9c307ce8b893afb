# A fleet in network namespaces: a 3-member etcd cluster (the real etcd,
# TLS with client certificates, RBAC set up by packaging's
# nfbox-fleet-rbac), 3 nfbox nodes and a client, all on one bridge. Source
# after tests/lib/lib.sh. Everything is named after $FL_PREFIX and removed
# by fl_cleanup (the EXIT trap fl_setup installs).
#
#   bridge ns: br0 ── e1 192.0.2.11  e2 .12  e3 .13   (etcd members)
#                 ── n1 192.0.2.21  n2 .22  n3 .23   (nfbox nodes, group branches)
#                 ── cl 192.0.2.50, 2001:db8::50      (a client)
# Each namespace's link to the bridge is its eth0; in the bridge namespace
# it is vNAME (ip link set vn3 down partitions n3).

FL_PREFIX=${FL_PREFIX:-nfl$$}
FL_TMP=
FL_PIDS_NODE=()
FL_PIDS_ETCD=()
FL_GROUP=branches

fl_ns() { echo "$FL_PREFIX-$1"; }
in_ns() { local n=$1; shift; ip netns exec "$(fl_ns "$n")" "$@"; }
fl_ip() { case $1 in e*) echo "192.0.2.1${1#e}" ;; n*) echo "192.0.2.2${1#n}" ;; cl) echo 192.0.2.50 ;; esac; }
fl_ip6() { case $1 in n*) echo "2001:db8::2${1#n}" ;; cl) echo 2001:db8::50 ;; esac; }

fl_cleanup() {
	local p
	for p in "${FL_PIDS_NODE[@]}" "${FL_PIDS_ETCD[@]}"; do
		[ -n "$p" ] && { kill -9 "$p" && wait "$p"; } 2>/dev/null
	done
	for n in br e1 e2 e3 n1 n2 n3 cl; do
		ip netns pids "$(fl_ns $n)" 2>/dev/null | xargs -r kill -9 2>/dev/null
		ip netns del "$(fl_ns $n)" 2>/dev/null
	done
	if [ -n "$FL_TMP" ]; then
		# a failed run: the end of each node's log, for the runner's report
		if [ "${T_FAILED:-0}" -gt 0 ]; then
			for n in n1 n2 n3; do
				[ -s "$FL_TMP/$n.err" ] && { echo "# --- the end of $n's log ---"; tail -n 12 "$FL_TMP/$n.err" | sed 's/^/# /'; }
			done
		fi
		umount "$FL_TMP/bpf" 2>/dev/null
		rm -rf "$FL_TMP"
	fi
	return 0
}

# fl_cert NAME [IP]: a certificate signed by the test CA; a server's names
# its IP, a client's has no common name (etcd's JSON gateway refuses a
# request whose certificate has one).
fl_cert() {
	local d=$FL_TMP/pki subj=/O=nfbox-test ext
	if [ -n "${2:-}" ]; then
		ext="subjectAltName=IP:$2
extendedKeyUsage=serverAuth,clientAuth"
	else
		ext="extendedKeyUsage=clientAuth"
	fi
	printf '%s\n' "$ext" >"$d/$1.ext"
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$d/$1.key" -out "$d/$1.csr" \
		-subj "$subj" 2>/dev/null &&
		openssl x509 -req -in "$d/$1.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -out "$d/$1.crt" \
			-days 2 -extfile "$d/$1.ext" 2>/dev/null
}

fl_net() {
	local n
	ip netns add "$(fl_ns br)" || return 1
	ip -n "$(fl_ns br)" link add br0 type bridge || return 1
	ip -n "$(fl_ns br)" link set br0 up
	for n in e1 e2 e3 n1 n2 n3 cl; do
		ip netns add "$(fl_ns $n)" || return 1
		ip -n "$(fl_ns $n)" link set lo up
		in_ns $n sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
		ip link add eth0 netns "$(fl_ns $n)" type veth peer name "v$n" netns "$(fl_ns br)" || return 1
		ip -n "$(fl_ns br)" link set "v$n" master br0 up
		ip -n "$(fl_ns $n)" link set eth0 up
		ip -n "$(fl_ns $n)" addr add "$(fl_ip $n)/24" dev eth0
		[ -n "$(fl_ip6 $n)" ] && ip -n "$(fl_ns $n)" addr add "$(fl_ip6 $n)/64" dev eth0 nodad
	done
	return 0
}

# --bcrypt-cost 4: a test cluster's passwords need no strength, and at
# etcd's default (10) every authentication costs ~100 ms of the setup.
fl_etcd_start() { # MEMBER
	local m=$1 ip cluster=
	ip=$(fl_ip "$m")
	for k in 1 2 3; do cluster="$cluster${cluster:+,}e$k=http://$(fl_ip e$k):2380"; done
	ip netns exec "$(fl_ns "$m")" etcd --name "$m" --data-dir "$FL_TMP/$m" \
		--listen-client-urls "https://$ip:2379" --advertise-client-urls "https://$ip:2379" \
		--listen-peer-urls "http://$ip:2380" --initial-advertise-peer-urls "http://$ip:2380" \
		--initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token "$FL_PREFIX" \
		--cert-file "$FL_TMP/pki/$m.crt" --key-file "$FL_TMP/pki/$m.key" --trusted-ca-file "$FL_TMP/pki/ca.crt" \
		--client-cert-auth --heartbeat-interval 100 --election-timeout 1000 --bcrypt-cost 4 \
		--logger zap --log-level error >"$FL_TMP/$m.log" 2>&1 &
	FL_PIDS_ETCD[${m#e}]=$!
}
fl_etcd_stop() { # MEMBER
	local p=${FL_PIDS_ETCD[${1#e}]}
	[ -n "$p" ] && kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
	FL_PIDS_ETCD[${1#e}]=
}

# etcdctl from the client namespace, as root once auth is on
fl_etcdctl() {
	ETCDCTL_API=3 ETCDCTL_ENDPOINTS="https://$(fl_ip e1):2379,https://$(fl_ip e2):2379,https://$(fl_ip e3):2379" \
		ETCDCTL_CACERT=$FL_TMP/pki/ca.crt ETCDCTL_CERT=$FL_TMP/pki/admin.crt ETCDCTL_KEY=$FL_TMP/pki/admin.key \
		ETCDCTL_DIAL_TIMEOUT=2s ETCDCTL_COMMAND_TIMEOUT=4s \
		ip netns exec "$(fl_ns cl)" "$@"
}

# fl_url MEMBER: its client URL (a script with another network defines its own)
fl_url() { echo "https://$(fl_ip "$1"):2379"; }
# fl_fleet_file NAME USER [NODE] [ENDPOINT-ORDER]: a fleet file in $FL_TMP/NAME.yaml
fl_fleet_file() {
	local f=$FL_TMP/$1.yaml order=${4:-1 2 3} eps= k
	for k in $order; do eps="$eps${eps:+, }'$(fl_url e$k)'"; done
	{
		echo "etcd:"
		echo "  endpoints: [$eps]"
		echo "  cert: pki/$2.crt"
		echo "  key: pki/$2.key"
		echo "  ca: pki/ca.crt"
		echo "  user: $2"
		echo "  password-file: pki/$2.pw"
		[ -n "${3:-}" ] && echo "node: $3"
		echo "group: $FL_GROUP"
	} >"$f"
}

fl_setup() {
	local k
	trap fl_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	FL_TMP=$(mktemp -d /tmp/nfbox-fleet.XXXXXX)
	mkdir -p "$FL_TMP/pki" "$FL_TMP/bpf" && chmod 700 "$FL_TMP/pki"
	mount -t bpf bpf "$FL_TMP/bpf" || return 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$FL_TMP/pki/ca.key" \
		-out "$FL_TMP/pki/ca.crt" -days 2 -subj /CN=nfbox-test-ca 2>/dev/null || return 1
	for k in 1 2 3; do fl_cert e$k "$(fl_ip e$k)" || return 1; done
	for k in admin root operator n1 n2 n3; do
		fl_cert $k || return 1
		head -c 18 /dev/urandom | base64 >"$FL_TMP/pki/$k.pw"
		chmod 600 "$FL_TMP/pki/$k.pw"
	done
	fl_net || return 1
	for k in 1 2 3; do fl_etcd_start e$k; done
	wait_until 20 fl_etcdctl etcdctl endpoint health || return 1
	# the RBAC as an operator sets it up: packaging's script
	local rbac=$PWD/packaging/fleet/nfbox-fleet-rbac
	fl_etcdctl "$rbac" init "$FL_TMP/pki/root.pw" >/dev/null || return 1
	fl_etcdctl "$rbac" --root-password-file "$FL_TMP/pki/root.pw" operator operator "$FL_TMP/pki/operator.pw" >/dev/null || return 1
	for k in 1 2 3; do
		fl_etcdctl "$rbac" --root-password-file "$FL_TMP/pki/root.pw" node "$FL_GROUP" n$k "$FL_TMP/pki/n$k.pw" >/dev/null || return 1
	done
	fl_fleet_file operator operator
	fl_fleet_file n1 n1 n1
	fl_fleet_file n2 n2 n2 "2 3 1"
	fl_fleet_file n3 n3 n3 "3 1 2"
	return 0
}

# fl_base_policy FILE: a deny-list whose blocklist every node shares
fl_base_policy() {
	cat >"$1" <<'YAML'
version: 1
sets:
  blocklist: { dynamic: true, shared: true }
hooks:
  input: { default: accept }
rules:
  - { name: drop-blocked, hook: input, from: blocklist, action: drop }
YAML
}

# fl_node_start N POLICY [nowait]: nfbox run --fleet in node N's namespace;
# it is ready when fl_node_ready N returns
fl_node_start() {
	local n=$1 i
	i=${n#n}
	: >"$FL_TMP/$n.out"
	ip netns exec "$(fl_ns "$n")" "$NFBOX" run --fleet "$FL_TMP/$n.yaml" --policy "$2" \
		--state-dir "$FL_TMP/state-$n" --socket "$FL_TMP/$n.sock" --pin-dir "$FL_TMP/bpf/$n" \
		>"$FL_TMP/$n.out" 2>"$FL_TMP/$n.err" &
	FL_PIDS_NODE[$i]=$!
	[ "${3:-}" = nowait ] || fl_node_ready "$n"
}
fl_node_ready() { wait_until 30 grep -q '^ready$' "$FL_TMP/$1.out" || { cat "$FL_TMP/$1.err" >&2; return 1; }; }
fl_node_stop() { # N [KILL]
	local i=${1#n} p
	p=${FL_PIDS_NODE[$i]}
	[ -n "$p" ] || return 0
	{ # quiet: no job notice from bash for a node killed on purpose
		kill "-${2:-TERM}" "$p"
		wait_until 5 eval "! kill -0 $p" || kill -9 "$p"
		wait "$p"
	} 2>/dev/null
	FL_PIDS_NODE[$i]=
}
fl_ctl() { local n=$1; shift; cli_run ip netns exec "$(fl_ns "$n")" "$NFBOX" "$@" --socket "$FL_TMP/$n.sock"; }
# the operator's nfbox fleet, from the client namespace
fl_fleet() { cli_run ip netns exec "$(fl_ns cl)" "$NFBOX" fleet "$@"; }
fl_status_field() { # N FIELD (of status --json's fleet; JSON's true, false, null as such)
	fl_ctl "$1" status --json 2>/dev/null | jq -r --arg f "$2" '.fleet | objects | select(has($f)) | .[$f]'
}
# ping from the client to a node answers (pass) or not (drop)
fl_ping() { # N [6]
	local a
	if [ "${2:-}" = 6 ]; then a=$(fl_ip6 "$1"); else a=$(fl_ip "$1"); fi
	if in_ns cl ping -c 1 -W 0.5 "$a" >/dev/null 2>&1; then echo pass; else echo drop; fi
}
fl_ping_is() { [ "$(fl_ping "$2" "${3:-}")" = "$1" ]; } # WANT N [6]
