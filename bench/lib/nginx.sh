# Sourced by bench/compare.sh, bench/evloop.sh and bench/proxy.sh: the
# private nginx they measure against (one worker, access_log off,
# keep-alive for the whole run, everything under its own directory).
#
# private_nginx DIR HTTPBODY: writes DIR/nginx.conf with HTTPBODY (server
# blocks) inside its http block and starts nginx in the background; its pid
# is NGINX_PID, for the caller to signal and wait for.
private_nginx() {
	local dir=$1 body=$2
	mkdir -p "$dir/logs" "$dir/tmp"
	cat >"$dir/nginx.conf" <<NGX
daemon off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/logs/error.log;
events { worker_connections 16384; }
http {
    access_log off;
    keepalive_requests 100000000;
    client_body_temp_path $dir/tmp;
    proxy_temp_path $dir/tmp;
    fastcgi_temp_path $dir/tmp;
    uwsgi_temp_path $dir/tmp;
    scgi_temp_path $dir/tmp;
    $body
}
NGX
	/usr/sbin/nginx -e "$dir/logs/error.log" -p "$dir" -c "$dir/nginx.conf" &
	NGINX_PID=$!
}

# start_ok_nginx DIR PORT: private_nginx answering `return 200 "ok\n"` on
# 127.0.0.1:PORT; waits until it answers on NGINX_URL, and returns 1 with
# its error log on stderr when it does not.
start_ok_nginx() {
	local dir=$1 port=$2
	private_nginx "$dir" "server { listen 127.0.0.1:$port; location / { return 200 \"ok\\n\"; } }"
	NGINX_URL="http://127.0.0.1:$port"
	for _ in $(seq 100); do curl -fs "$NGINX_URL/" >/dev/null 2>&1 && return 0; sleep 0.05; done
	curl -fs "$NGINX_URL/" >/dev/null 2>&1 || { cat "$dir/logs/error.log" >&2; return 1; }
}
