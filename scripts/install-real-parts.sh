#!/usr/bin/env bash
# install-real-parts.sh — install the real parts rlbench drives in its integration tests and scenarios:
#   * redis-server from Debian's `redis-server` package (the distro service is never left running),
#   * nginx from Debian's `nginx-light` package (in bookworm a transitional package that depends on `nginx`, the same
#     /usr/sbin/nginx; the distro service is never started: rlbench runs private nginx processes),
#   * prometheus from Debian's `prometheus` package (bookworm: 2.42), for the remote write integration test, which
#     runs its own private instance (the distro service is never started),
#   * haproxy from Debian's `haproxy` package (the distro service is never left running: rlbench runs private
#     HAProxy processes with their own configs, lab.haproxy),
#   * envoyproxy/ratelimit's service_cmd, pinned (see RLS_VERSION), built with `go install` into the user's directory
#     of installed parts, USER_BIN: $RLBENCH_HOME/bin if RLBENCH_HOME is set, else the user cache directory's
#     rlbench/bin (${XDG_CACHE_HOME:-~/.cache}/rlbench/bin; ~/Library/Caches/rlbench/bin on macOS), the rule of
#     internal/userdirs.Bin, where `rlbench run` finds it from any working directory. <repo>/.bin/service_cmd (with
#     its stamp) is kept too, as a link to it, for the tools and docs that use that path (examples/envoy/envoyctl.sh),
#   * jq from Debian's `jq` package, for the README's event-stream example (`rlbench run --events - ... | jq ...`),
#     which TestREADME runs where jq is on PATH, and
#   * Slurm from Debian's `slurm-wlm` package, for examples/slurm's integration test (the services are never started).
# Idempotent: each part is skipped when it is already present (for service_cmd: the binary exists AND the stamp file
# service_cmd.version beside it records exactly RLS_VERSION; one already in <repo>/.bin is copied, not rebuilt).
# Needs root (or sudo) for apt-get, Go for the build. Prints progress (the build of service_cmd takes minutes the
# first time) and where things are. Overrides: RLBENCH_REDIS_BIN (use this redis-server, skip apt),
# RLBENCH_NGINX_BIN (use this nginx, skip apt), RLBENCH_PROMETHEUS_BIN (use this prometheus, skip apt), RLBENCH_JQ_BIN
# (use this jq, skip apt), RLBENCH_HAPROXY_BIN (use this haproxy, skip apt), RLBENCH_HOME (see USER_BIN), GO (go binary).
set -euo pipefail

RLS_MODULE="github.com/envoyproxy/ratelimit"
RLS_PKG="${RLS_MODULE}/src/service_cmd"
# main-branch commit 3fb702589d36 (2026-01-22); the module has no tags, so @latest drifts. It must equal
# internal/realparts.RLSModuleVersion.
RLS_VERSION="v1.4.1-0.20260122083618-3fb702589d36"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPO_BIN="${REPO}/.bin"
GO="${GO:-go}"

# user_bin prints USER_BIN, the rule of internal/userdirs.Bin (keep the two equal).
user_bin() {
	if [ -n "${RLBENCH_HOME:-}" ]; then
		case "$RLBENCH_HOME" in /*) printf '%s/bin\n' "$RLBENCH_HOME" ;; *) printf '%s/%s/bin\n' "$PWD" "$RLBENCH_HOME" ;; esac
	elif [ "$(uname -s)" = Darwin ]; then
		printf '%s/Library/Caches/rlbench/bin\n' "$HOME"
	else
		printf '%s/rlbench/bin\n' "${XDG_CACHE_HOME:-$HOME/.cache}"
	fi
}
BIN="$(user_bin)"
STAMP="${BIN}/service_cmd.version"

log() { printf 'install-real-parts: %s\n' "$*" >&2; }

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo "$@"; else
		log "need root (or sudo) to run: $*"; return 1
	fi
}

# find_bin OVERRIDE NAME PATH... prints the binary to use: the value of the variable OVERRIDE if set, else NAME on
# PATH, else the first executable PATH; it fails when there is none.
find_bin() {
	local override="${!1:-}" name="$2"
	shift 2
	if [ -n "$override" ]; then printf '%s\n' "$override"; return 0; fi
	command -v "$name" 2>/dev/null && return 0
	for p in "$@"; do
		[ -x "$p" ] && { printf '%s\n' "$p"; return 0; }
	done
	return 1
}

# --- Redis -------------------------------------------------------------------------------------------------------
find_redis() { find_bin RLBENCH_REDIS_BIN redis-server /usr/bin/redis-server /usr/local/bin/redis-server /usr/sbin/redis-server; }

# stop_distro_redis stops only the Debian service instance (the one recorded in the package's pidfile / managed by
# systemd), never any other redis-server (tests and other users run their own on other ports).
stop_distro_redis() {
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		as_root systemctl disable --now redis-server >/dev/null 2>&1 || true
	fi
	local pidfile=/run/redis/redis-server.pid
	if [ -s "$pidfile" ]; then
		local pid
		pid="$(cat "$pidfile")"
		if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'redis-server'; then
			log "stopping the distro redis-server service (pid $pid from $pidfile)"
			as_root kill -TERM "$pid" || true
			for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
		fi
	fi
	if command -v update-rc.d >/dev/null 2>&1; then as_root update-rc.d redis-server disable >/dev/null 2>&1 || true; fi
}

# apt_install_no_start installs Debian packages without letting their maintainer scripts start a service:
# invoke-rc.d and deb-systemd-invoke consult /usr/sbin/policy-rc.d, and one that denies every action (exit 101) is
# installed for the duration, only if none exists, and removed afterwards. `apt-get update` runs once per script run.
APT_UPDATED=""
apt_install_no_start() {
	local policy=/usr/sbin/policy-rc.d added=""
	if [ ! -e "$policy" ]; then
		as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $policy && chmod 755 $policy"
		added=1
	fi
	# shellcheck disable=SC2064 # expand now: the trap must remove exactly the file added here
	if [ -n "$added" ]; then trap "as_root rm -f '$policy'" EXIT; fi
	local rc=0
	if [ -z "$APT_UPDATED" ]; then
		as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q || rc=$?
		APT_UPDATED=1
	fi
	if [ "$rc" -eq 0 ]; then
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" || rc=$?
	fi
	if [ -n "$added" ]; then as_root rm -f "$policy"; trap - EXIT; fi
	return "$rc"
}

if REDIS_BIN="$(find_redis)"; then
	log "redis-server present: ${REDIS_BIN} (skipping apt)"
else
	log "installing Debian package redis-server"
	apt_install_no_start redis-server
	REDIS_BIN="$(find_redis)" || { log "redis-server still not found after apt-get install"; exit 1; }
	stop_distro_redis
fi

# --- nginx -------------------------------------------------------------------------------------------------------
find_nginx() { find_bin RLBENCH_NGINX_BIN nginx /usr/sbin/nginx /usr/local/sbin/nginx /usr/bin/nginx; }

# stop_distro_nginx keeps the Debian service instance from running: it disables the unit / init script and stops
# only the master recorded in the package's pidfile /run/nginx.pid (rlbench's private instances use their own pid
# files), never any other nginx.
stop_distro_nginx() {
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		as_root systemctl disable --now nginx >/dev/null 2>&1 || true
	fi
	if command -v update-rc.d >/dev/null 2>&1; then as_root update-rc.d nginx disable >/dev/null 2>&1 || true; fi
	local pidfile=/run/nginx.pid
	if [ -s "$pidfile" ]; then
		local pid
		pid="$(cat "$pidfile")"
		local cmd=""
		[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline")"
		# The service's master runs without -p (a private instance always has its own prefix and pid file).
		if [[ "$cmd" == "nginx: master process /usr/sbin/nginx"* && "$cmd" != *" -p "* ]]; then
			log "stopping the distro nginx service (pid $pid from $pidfile)"
			as_root kill -QUIT "$pid" || true
			for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
		fi
	fi
}

if NGINX_BIN="$(find_nginx)"; then
	log "nginx present: ${NGINX_BIN} (skipping apt)"
else
	log "installing Debian package nginx-light"
	apt_install_no_start nginx-light
	NGINX_BIN="$(find_nginx)" || { log "nginx still not found after apt-get install"; exit 1; }
	stop_distro_nginx
fi

# --- Prometheus --------------------------------------------------------------------------------------------------
find_prometheus() { find_bin RLBENCH_PROMETHEUS_BIN prometheus /usr/bin/prometheus /usr/local/bin/prometheus; }

# stop_distro_prometheus keeps the Debian service instance from running: it disables the unit / init script and
# stops only the process recorded in the package's pidfile (/run/prometheus/prometheus.pid, sysvinit), never any other
# prometheus (the integration test runs its own on a private port). Without systemd or init the service never starts.
stop_distro_prometheus() {
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		as_root systemctl disable --now prometheus >/dev/null 2>&1 || true
	fi
	if command -v update-rc.d >/dev/null 2>&1; then as_root update-rc.d prometheus disable >/dev/null 2>&1 || true; fi
	local pidfile=/run/prometheus/prometheus.pid
	if [ -s "$pidfile" ]; then
		local pid
		pid="$(cat "$pidfile")"
		if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'prometheus'; then
			log "stopping the distro prometheus service (pid $pid from $pidfile)"
			as_root kill -TERM "$pid" || true
			for _ in $(seq 1 50); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
		fi
	fi
}

if PROMETHEUS_BIN="$(find_prometheus)"; then
	log "prometheus present: ${PROMETHEUS_BIN} (skipping apt)"
else
	log "installing Debian package prometheus"
	apt_install_no_start prometheus
	PROMETHEUS_BIN="$(find_prometheus)" || { log "prometheus still not found after apt-get install"; exit 1; }
	stop_distro_prometheus
fi

# --- jq ------------------------------------------------------------------------------------------------------------
find_jq() { find_bin RLBENCH_JQ_BIN jq /usr/bin/jq /usr/local/bin/jq; }

if JQ_BIN="$(find_jq)"; then
	log "jq present: ${JQ_BIN} (skipping apt)"
else
	log "installing Debian package jq"
	apt_install_no_start jq
	JQ_BIN="$(find_jq)" || { log "jq still not found after apt-get install"; exit 1; }
fi

# --- haproxy -----------------------------------------------------------------------------------------------------
find_haproxy() { find_bin RLBENCH_HAPROXY_BIN haproxy /usr/sbin/haproxy /usr/local/sbin/haproxy /usr/bin/haproxy; }

# stop_distro_haproxy keeps the Debian service from running: it disables the unit / init script and stops only the
# process recorded in the package's pidfile /run/haproxy.pid, never any other haproxy.
stop_distro_haproxy() {
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		as_root systemctl disable --now haproxy >/dev/null 2>&1 || true
	fi
	if command -v update-rc.d >/dev/null 2>&1; then as_root update-rc.d haproxy disable >/dev/null 2>&1 || true; fi
	local pidfile=/run/haproxy.pid
	if [ -s "$pidfile" ]; then
		local pid cmd=""
		pid="$(head -n1 "$pidfile")"
		[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] && cmd="$(tr '\0' ' ' <"/proc/$pid/cmdline")"
		if [[ "$cmd" == *"/etc/haproxy/haproxy.cfg"* ]]; then
			log "stopping the distro haproxy service (pid $pid from $pidfile)"
			as_root kill -TERM "$pid" || true
		fi
	fi
}

if HAPROXY_BIN="$(find_haproxy)"; then
	log "haproxy present: ${HAPROXY_BIN} (skipping apt)"
else
	log "installing Debian package haproxy"
	apt_install_no_start haproxy
	HAPROXY_BIN="$(find_haproxy)" || { log "haproxy still not found after apt-get install"; exit 1; }
	stop_distro_haproxy
fi

# --- Slurm (examples/slurm's integration test) --------------------------------------------------------------------
# Debian's slurm-wlm (slurmctld, slurmd and the client commands); the distro services are never started: the test runs
# its own slurmctld and slurmd from a generated slurm.conf (auth/none, loopback ports, a temporary directory).
if command -v slurmctld >/dev/null 2>&1 && command -v slurmd >/dev/null 2>&1 && command -v sbatch >/dev/null 2>&1; then
	log "slurm present: $(command -v slurmctld) (skipping apt)"
else
	log "installing Debian package slurm-wlm"
	apt_install_no_start slurm-wlm
	command -v slurmctld >/dev/null 2>&1 || { log "slurmctld still not found after apt-get install"; exit 1; }
fi

# --- envoyproxy/ratelimit -----------------------------------------------------------------------------------------
# has_rls DIR: DIR/service_cmd exists and its stamp records exactly the pinned version.
has_rls() { [ -x "$1/service_cmd" ] && [ -f "$1/service_cmd.version" ] && [ "$(cat "$1/service_cmd.version")" = "${RLS_PKG}@${RLS_VERSION}" ]; }

# heartbeat prints the elapsed time every 30 s while a long step runs (a single package can compile for minutes);
# TERM stops it and its sleep at once, so that nothing holds the caller's stderr open.
heartbeat() {
	local start sp=""
	start="$(date +%s)"
	trap '[ -n "$sp" ] && kill "$sp" 2>/dev/null; exit 0' TERM
	while :; do
		sleep 30 &
		sp=$!
		wait "$sp"
		log "  still building service_cmd: $(($(date +%s) - start)) s so far"
	done
}

if has_rls "$BIN"; then
	log "service_cmd present: ${BIN}/service_cmd (${RLS_VERSION}, skipping build)"
elif has_rls "$REPO_BIN" && ! [ "${REPO_BIN}/service_cmd" -ef "${BIN}/service_cmd" ]; then
	log "service_cmd present in ${REPO_BIN} (${RLS_VERSION}): copying it to ${BIN}"
	mkdir -p "$BIN"
	cp "${REPO_BIN}/service_cmd" "${BIN}/service_cmd.tmp" && mv "${BIN}/service_cmd.tmp" "${BIN}/service_cmd"
	printf '%s\n' "${RLS_PKG}@${RLS_VERSION}" >"$STAMP"
else
	command -v "$GO" >/dev/null 2>&1 || { log "go not found (set GO=/path/to/go)"; exit 1; }
	mkdir -p "$BIN"
	rm -f "$STAMP"
	log "building envoyproxy/ratelimit: about 3–17 min on 2 cores the first time; go: downloading lines follow"
	log "  ${RLS_PKG}@${RLS_VERSION} into ${BIN} (go install -v: then one line per package compiled)"
	build_start="$(date +%s)"
	heartbeat &
	hb=$!
	rc=0
	# Run outside the repo so rlbench's go.mod does not take part; GOFLAGS from the caller could break `go install`.
	(cd "$BIN" && env GOBIN="$BIN" GOFLAGS= GO111MODULE=on "$GO" install -v "${RLS_PKG}@${RLS_VERSION}") || rc=$?
	kill "$hb" 2>/dev/null || true
	wait "$hb" 2>/dev/null || true
	if [ "$rc" -ne 0 ]; then log "building service_cmd failed (exit $rc)"; exit "$rc"; fi
	printf '%s\n' "${RLS_PKG}@${RLS_VERSION}" >"$STAMP"
	log "built service_cmd in $(($(date +%s) - build_start)) s"
fi

# <repo>/.bin keeps a service_cmd for the tools and docs that name that path: a link to USER_BIN's unless it already
# holds the pinned one.
if ! has_rls "$REPO_BIN"; then
	mkdir -p "$REPO_BIN"
	ln -sfn "${BIN}/service_cmd" "${REPO_BIN}/service_cmd"
	ln -sfn "$STAMP" "${REPO_BIN}/service_cmd.version"
	log "linked ${REPO_BIN}/service_cmd -> ${BIN}/service_cmd"
fi

printf 'redis-server=%s\n' "$REDIS_BIN"
printf 'redis-version=%s\n' "$("$REDIS_BIN" --version | head -n1)"
printf 'nginx=%s\n' "$NGINX_BIN"
printf 'nginx-version=%s\n' "$("$NGINX_BIN" -v 2>&1 | head -n1)"
printf 'haproxy=%s\n' "$HAPROXY_BIN"
printf 'haproxy-version=%s\n' "$("$HAPROXY_BIN" -v 2>&1 | head -n1)"
printf 'prometheus=%s\n' "$PROMETHEUS_BIN"
printf 'prometheus-version=%s\n' "$("$PROMETHEUS_BIN" --version 2>&1 | head -n1)"
printf 'jq=%s\n' "$JQ_BIN"
printf 'service_cmd=%s\n' "${BIN}/service_cmd"
printf 'service_cmd-repo=%s\n' "${REPO_BIN}/service_cmd"
printf 'service_cmd-version=%s\n' "$(cat "$STAMP")"
printf 'slurm-version=%s\n' "$(slurmctld -V 2>&1 | head -n1)"
