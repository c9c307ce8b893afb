# Debian's nginx, unpacked (never installed on the host), serving HTTPS
# with a test CA in a test's namespace; sourced after tests/lib/netns.sh.
#
#   ngx_unpack                    nginx under $NGX (=$NS_TMP/nginx); fails the test without its .deb
#   ngx_ca NAME                   a CA: $P/NAME.key, $P/NAME.pem ($P=$NS_TMP/pki)
#   ngx_server_cert ADDR          $P/server.key and .pem for the IP address ADDR, signed by $P/ca
#   ngx_conf_head                 the start of an nginx.conf (daemon, pid, logs, temp paths
#                                 under $NGX) up to and with "http {": the test writes its
#                                 servers and the closing brace
#   ngx_start NS                  nginx started in namespace NS with $NGX/nginx.conf

ngx_unpack() {
	local deb
	NGX=$NS_TMP/nginx
	P=$NS_TMP/pki
	deb=$(ls "${NFBOX_DEB_CACHE:-/var/cache/nfbox/debs}"/nginx_*.deb 2>/dev/null | head -1)
	if [ -z "$deb" ]; then
		t_fail nginx-deb "no nginx .deb in ${NFBOX_DEB_CACHE:-/var/cache/nfbox/debs}: run packaging/install-deps.sh"
		t_done
	fi
	mkdir -p "$NGX/tmp" "$P"
	dpkg-deb -x "$deb" "$NGX/root" || { t_fail nginx-unpack "$deb"; t_done; }
	echo "# $(basename "$deb")"
}

ngx_ca() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=nfbox test $1" \
		-keyout "$P/$1.key" -out "$P/$1.pem" 2>/dev/null
}

ngx_server_cert() {
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$1" \
		-keyout "$P/server.key" -out "$P/server.csr" 2>/dev/null &&
		printf 'subjectAltName=IP:%s\n' "$1" >"$P/ext" &&
		openssl x509 -req -in "$P/server.csr" -CA "$P/ca.pem" -CAkey "$P/ca.key" -CAcreateserial -days 2 \
			-extfile "$P/ext" -out "$P/server.pem" 2>/dev/null
}

ngx_conf_head() {
	cat <<CONF
daemon on;
user root; # its workers read the test's private directory
pid $NGX/nginx.pid;
error_log $NGX/error.log;
events { worker_connections 64; }
http {
	access_log $NGX/access.log;
	client_body_temp_path $NGX/tmp/body;
	proxy_temp_path $NGX/tmp/proxy;
	fastcgi_temp_path $NGX/tmp/fastcgi;
	uwsgi_temp_path $NGX/tmp/uwsgi;
	scgi_temp_path $NGX/tmp/scgi;
	default_type text/plain;
CONF
}

ngx_start() {
	ip netns exec "$1" "$NGX/root/usr/sbin/nginx" -p "$NGX" -c "$NGX/nginx.conf" -e "$NGX/error.log"
}
