#!/usr/bin/env bash
# envoyctl.sh — start and stop the real parts of one examples/envoy scenario; used by rlbench/plan.yaml's setup, teardown
# and exec fault steps (run through `sh -c` by `rlbench run`, from the repository root).
#
#   envoyctl.sh setup local|global|global-open   start [Redis + envoyproxy/ratelimit +] Envoy a and b, wait until ready
#   envoyctl.sh teardown                         stop exactly the processes setup started (PID files), bounded
#   envoyctl.sh rls-stop | rls-start | rls-restart   stop/start envoyproxy/ratelimit (Redis keeps the counters)
#   envoyctl.sh rls-only                         start Redis and envoyproxy/ratelimit only (to try them without Envoy)
#
# Environment:
#   ENVOY_BIN              Envoy binary (required; when unset or not executable, setup fails with the reason, so the
#                          runner marks the scenario NOT_RUN)
#   RLBENCH_ENVOY_WORK     work directory for PID files and logs (required; run.sh creates it)
#   RLBENCH_ENVOY_BLOCKED  when set, setup fails with this reason (run.sh sets it when, e.g., port 8080 is taken)
#   RLBENCH_RLS_BIN        envoyproxy/ratelimit service_cmd (default <repo>/.bin/service_cmd, from
#                          scripts/install-real-parts.sh)
#   RLBENCH_REDIS_BIN      redis-server (default: redis-server on PATH)
#   RLBENCH_ENVOY_BASE_ID  first Envoy --base-id (default 310; proxy a uses it, b uses it + 1)
#   ENVOY_EXTRA_ARGS       extra Envoy arguments (default: --file-flush-interval-msec 100, so that access log lines
#                          reach the file within 100 ms instead of Envoy's default 10 s)
#
# Every process runs on 127.0.0.1 only. Ports are checked to be free before anything starts (Envoy a: 10000/9901,
# b: 10001/9902, RLS gRPC 8081); Redis listens on a unix socket in the work directory only (--port 0). Each Envoy
# runs one worker (--concurrency 1) and appends its stdout (the JSON access log of the example bootstraps) to
# $RLBENCH_ENVOY_WORK/envoy-<a|b>.access.log, which rlbench/plan.yaml declares as the proxy's access_log.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"

die() { printf 'envoyctl: %s\n' "$*" >&2; exit 1; }

need_work() {
	[ -n "${RLBENCH_ENVOY_WORK:-}" ] || die "RLBENCH_ENVOY_WORK is not set (run examples/envoy/run.sh)"
	WORK="$RLBENCH_ENVOY_WORK"
	mkdir -p "$WORK/pids"
}

# port_listening PORT: true when some socket listens on TCP PORT (any address, IPv4 or IPv6), from /proc/net/tcp*.
port_listening() {
	local hex
	hex="$(printf '%04X' "$1")"
	awk -v p=":$hex" 'NR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}

require_free() {
	local p
	for p in "$@"; do
		if port_listening "$p"; then die "port 127.0.0.1:$p is already in use; stop whatever holds it"; fi
	done
}

# alive PID NAME: the PID runs and its command line mentions NAME (guards against PID reuse).
alive() {
	[ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -q -- "$2"
}

# stop_pid NAME MATCH: TERM the PID recorded in pids/NAME.pid, wait up to 5 s, then KILL; removes the PID file.
stop_pid() {
	local f="$WORK/pids/$1.pid" pid i
	[ -s "$f" ] || return 0
	pid="$(cat "$f")"
	if alive "$pid" "$2"; then
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 1 50); do alive "$pid" "$2" || break; sleep 0.1; done
		if alive "$pid" "$2"; then kill -KILL "$pid" 2>/dev/null || true; fi
		for i in $(seq 1 20); do alive "$pid" "$2" || break; sleep 0.1; done
	fi
	rm -f "$f"
}

tail_log() { [ -f "$1" ] && tail -n 5 "$1" | tr '\n' ' ' || true; }

start_redis() {
	local bin="${RLBENCH_REDIS_BIN:-$(command -v redis-server || true)}"
	[ -n "$bin" ] && [ -x "$bin" ] || die "redis-server not found (run scripts/install-real-parts.sh or set RLBENCH_REDIS_BIN)"
	rm -f "$WORK/redis.sock"
	"$bin" --port 0 --unixsocket "$WORK/redis.sock" --unixsocketperm 700 --save "" --appendonly no \
		--dir "$WORK" --logfile "$WORK/redis.log" </dev/null >/dev/null 2>&1 &
	echo $! >"$WORK/pids/redis.pid"
	local i
	for i in $(seq 1 100); do
		[ -S "$WORK/redis.sock" ] && return 0
		alive "$!" redis-server || die "redis-server exited: $(tail_log "$WORK/redis.log")"
		sleep 0.1
	done
	die "redis-server: no socket $WORK/redis.sock after 10 s: $(tail_log "$WORK/redis.log")"
}

start_rls() {
	local bin="${RLBENCH_RLS_BIN:-$REPO/.bin/service_cmd}"
	[ -x "$bin" ] || die "envoyproxy/ratelimit not found at $bin (run scripts/install-real-parts.sh or set RLBENCH_RLS_BIN)"
	[ -S "$WORK/redis.sock" ] || die "no Redis socket at $WORK/redis.sock"
	require_free 8081
	# HTTP and debug ports 0: the kernel picks free ones (the HTTP default 8080 is the backend's port).
	env -i PATH=/usr/bin:/bin \
		RUNTIME_ROOT="$HERE" RUNTIME_SUBDIRECTORY=ratelimit RUNTIME_APPDIRECTORY=config \
		RUNTIME_WATCH_ROOT=false RUNTIME_IGNOREDOTFILES=true \
		HOST=127.0.0.1 PORT=0 GRPC_HOST=127.0.0.1 GRPC_PORT=8081 DEBUG_HOST=127.0.0.1 DEBUG_PORT=0 \
		BACKEND_TYPE=redis REDIS_SOCKET_TYPE=unix REDIS_TYPE=SINGLE REDIS_URL="$WORK/redis.sock" \
		USE_STATSD=false DISABLE_STATS=true LOG_LEVEL=info LOG_FORMAT=json \
		"$bin" </dev/null >>"$WORK/rls.log" 2>&1 &
	echo $! >"$WORK/pids/rls.pid"
	local pid=$! i
	for i in $(seq 1 100); do
		port_listening 8081 && return 0
		alive "$pid" service_cmd || die "envoyproxy/ratelimit exited: $(tail_log "$WORK/rls.log")"
		sleep 0.1
	done
	die "envoyproxy/ratelimit: gRPC 127.0.0.1:8081 not listening after 10 s: $(tail_log "$WORK/rls.log")"
}

# start_envoy a|b VARIANT INDEX
start_envoy() {
	local p="$1" variant="$2" idx="$3" admin listen
	if [ "$p" = a ]; then admin=9901 listen=10000; else admin=9902 listen=10001; fi
	local base=$(( ${RLBENCH_ENVOY_BASE_ID:-310} + idx ))
	# shellcheck disable=SC2086 # ENVOY_EXTRA_ARGS is a word list on purpose
	"$ENVOY_BIN" -c "$HERE/$variant-$p.yaml" --concurrency 1 --base-id "$base" \
		${ENVOY_EXTRA_ARGS---file-flush-interval-msec 100} \
		</dev/null >>"$WORK/envoy-$p.access.log" 2>"$WORK/envoy-$p.err" &
	local pid=$!
	echo "$pid" >"$WORK/pids/envoy-$p.pid"
	local i body
	for i in $(seq 1 150); do
		body="$(curl -s --max-time 1 "http://127.0.0.1:$admin/ready" 2>/dev/null || true)"
		[ "$body" = LIVE ] && port_listening "$listen" && return 0
		alive "$pid" "$(basename "$ENVOY_BIN")" || die "envoy $p exited: $(tail_log "$WORK/envoy-$p.err")"
		sleep 0.1
	done
	die "envoy $p: admin http://127.0.0.1:$admin/ready not LIVE after 15 s: $(tail_log "$WORK/envoy-$p.err")"
}

teardown() {
	stop_pid envoy-a "$(basename "${ENVOY_BIN:-envoy}")"
	stop_pid envoy-b "$(basename "${ENVOY_BIN:-envoy}")"
	stop_pid rls service_cmd
	stop_pid redis redis-server
	rm -f "$WORK/redis.sock"
}

setup() {
	local variant="${1:-}"
	case "$variant" in local | global | global-open) ;; *) die "setup: variant must be local, global or global-open, not '$variant'" ;; esac
	[ -z "${RLBENCH_ENVOY_BLOCKED:-}" ] || die "$RLBENCH_ENVOY_BLOCKED"
	[ -n "${ENVOY_BIN:-}" ] || die "ENVOY_BIN is not set: no Envoy binary"
	[ -x "$ENVOY_BIN" ] || die "ENVOY_BIN=$ENVOY_BIN is not an executable file: no Envoy binary"
	command -v curl >/dev/null 2>&1 || die "curl not found (needed to poll Envoy's admin /ready)"
	need_work
	require_free 10000 10001 9901 9902
	# A failure below tears down whatever was started, then exits non-zero with the reason.
	if [ "$variant" != local ]; then
		( start_redis ) || { teardown; exit 1; }
		( start_rls ) || { teardown; exit 1; }
	fi
	( start_envoy a "$variant" 0 ) || { teardown; exit 1; }
	( start_envoy b "$variant" 1 ) || { teardown; exit 1; }
}

cmd="${1:-}"
shift || true
case "$cmd" in
setup) setup "$@" ;;
teardown) need_work; teardown ;;
rls-stop) need_work; stop_pid rls service_cmd ;;
rls-start) need_work; start_rls ;;
rls-restart) need_work; stop_pid rls service_cmd; start_rls ;;
rls-only) need_work; (start_redis && start_rls) || { teardown; exit 1; } ;;
*) die "usage: envoyctl.sh setup local|global|global-open | teardown | rls-stop | rls-start | rls-restart | rls-only" ;;
esac
