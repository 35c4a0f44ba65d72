#!/usr/bin/env bash
# run.sh — run the reference experiment (examples/envoy/rlbench/plan.yaml) on real Envoy.
#
#   ENVOY_BIN=/path/to/envoy examples/envoy/run.sh [--root DIR] [other `rlbench run` flags]
#
# Five scenarios, each on fresh processes started by the plan's setup (envoyctl.sh): two local buckets, a shared
# envoyproxy/ratelimit (RLS), the RLS stopped with failure_mode_deny true, the RLS stopped with failure_mode_deny
# false, and the RLS restarted. One Envoy worker per proxy (--concurrency 1). The global scenarios need
# redis-server and .bin/service_cmd (scripts/install-real-parts.sh installs both).
#
# This script builds rlbench (or uses $RLBENCH_BIN), starts `rlbench backend` on 127.0.0.1:8080 (the examples'
# backend cluster) after checking the port is free, runs `rlbench run` on the plan and stops the backend by its
# PID. Without a usable ENVOY_BIN, or when port 8080 is taken, it still runs the plan: every scenario's setup
# fails with the reason, so the evidence directory marks each one NOT_RUN (status.txt) and the exit code is
# rlbench run's (4 = NOT_RUN). Evidence goes under --root (default: rlbench's runs directory, see `rlbench run --help`).
#
# Environment: ENVOY_BIN, RLBENCH_BIN (prebuilt rlbench), RLBENCH_KEEP_WORK=1 (keep the work directory with the
# Envoy/RLS/Redis/backend logs), plus envoyctl.sh's RLBENCH_RLS_BIN, RLBENCH_REDIS_BIN, RLBENCH_ENVOY_BASE_ID
# and ENVOY_EXTRA_ARGS.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
cd "$REPO" || exit 1

log() { printf 'run.sh: %s\n' "$*" >&2; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/rlbench-envoy.XXXXXX")" || exit 1
export RLBENCH_ENVOY_WORK="$WORK" RLBENCH_ENVOY_DIR="$HERE"
BACKEND_PID=""

cleanup() {
	if [ -n "$BACKEND_PID" ] && kill -0 "$BACKEND_PID" 2>/dev/null; then
		kill -TERM "$BACKEND_PID" 2>/dev/null
		for _ in $(seq 1 50); do kill -0 "$BACKEND_PID" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$BACKEND_PID" 2>/dev/null && kill -KILL "$BACKEND_PID" 2>/dev/null
		wait "$BACKEND_PID" 2>/dev/null
	fi
	# Envoy, RLS and Redis of an interrupted scenario: stop exactly the PIDs envoyctl.sh recorded.
	bash "$HERE/envoyctl.sh" teardown >/dev/null 2>&1
	if [ "${RLBENCH_KEEP_WORK:-}" = 1 ]; then log "work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

# port_listening PORT: some socket listens on TCP PORT (any address), from /proc/net/tcp*.
port_listening() {
	local hex
	hex="$(printf '%04X' "$1")"
	awk -v p=":$hex" 'NR > 1 && $4 == "0A" && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}

RLBENCH="${RLBENCH_BIN:-}"
if [ -z "$RLBENCH" ]; then
	RLBENCH="$WORK/rlbench"
	log "building rlbench"
	go build -o "$RLBENCH" ./cmd/rlbench || { log "go build failed"; exit 1; }
fi

if [ -n "${ENVOY_BIN:-}" ] && [ -x "${ENVOY_BIN}" ]; then
	if port_listening 8080; then
		export RLBENCH_ENVOY_BLOCKED="port 127.0.0.1:8080 (the backend the example bootstraps route to) is already in use"
	else
		"$RLBENCH" backend --listen 127.0.0.1:8080 --receipts "$WORK/receipts.jsonl" \
			</dev/null >"$WORK/backend.out" 2>"$WORK/backend.err" &
		BACKEND_PID=$!
		ok=""
		for _ in $(seq 1 100); do
			if [ "$(curl -s --max-time 1 http://127.0.0.1:8080/healthz 2>/dev/null)" = ok ]; then ok=1; break; fi
			kill -0 "$BACKEND_PID" 2>/dev/null || break
			sleep 0.1
		done
		if [ -z "$ok" ]; then
			export RLBENCH_ENVOY_BLOCKED="rlbench backend did not come up on 127.0.0.1:8080: $(tail -n 3 "$WORK/backend.err" | tr '\n' ' ')"
		fi
	fi
	[ -z "${RLBENCH_ENVOY_BLOCKED:-}" ] || log "$RLBENCH_ENVOY_BLOCKED"
else
	log "ENVOY_BIN is not set or not executable: every scenario will be NOT_RUN"
fi

"$RLBENCH" run "$@" examples/envoy/rlbench/plan.yaml
rc=$?
exit "$rc"
