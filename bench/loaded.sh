#!/usr/bin/env bash
# bench/loaded.sh — run example plans on the embedded lab while N busy loops compete for the cores, R times each,
# and print one line per plan × scenario × condition with its PASS / FAIL / NOT_RUN counts (issue 21's table).
#
#   bash bench/loaded.sh [-b BUSY] [-r RUNS] [-o OUTDIR] PLAN.yaml...
#
# BUSY (default 16) busy loops `sh -c 'while :; do :; done'` run during the loaded condition; 0 gives the quiet
# condition. Every busy loop is started by this script and stopped by its PID. Needs python3 for the JSON tally.
# The real parts (nginx, Redis, envoyproxy/ratelimit) are used where scripts/install-real-parts.sh put them.
set -euo pipefail
busy=16 runs=2 out="$(mktemp -d)"
while getopts "b:r:o:" o; do case $o in b) busy=$OPTARG;; r) runs=$OPTARG;; o) out=$OPTARG;; *) exit 2;; esac; done
shift $((OPTIND-1))
mkdir -p "$out"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${RLBENCH:-$out/rlbench}"
[ -x "$bin" ] || (cd "$repo" && go build -o "$bin" ./cmd/rlbench)
export RLBENCH_RLS_BIN="${RLBENCH_RLS_BIN:-$repo/.bin/service_cmd}"
export RLBENCH_REDIS_BIN="${RLBENCH_REDIS_BIN:-$(command -v redis-server || true)}"
pids=()
stop() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; pids=(); }
trap stop EXIT
for ((i = 0; i < busy; i++)); do sh -c 'while :; do :; done' & pids+=($!); done
for plan in "$@"; do
	name="$(echo "$plan" | sed 's|.*examples/||; s|/|_|g; s|\.yaml$||')"
	for ((r = 1; r <= runs; r++)); do
		root="$out/$name-$r"
		"$bin" run --quiet --root "$root" --format json "$plan" >"$root.json" 2>"$root.err" || true
		python3 - "$plan" "$busy" "$root.json" <<'PY'
import json, sys
plan, busy, path = sys.argv[1:4]
try:
    d = json.load(open(path))
except Exception as e:
    print(f"{plan}\t(no report: {e})\tbusy={busy}\tERROR"); sys.exit(0)
for s in d.get("scenarios", []):
    why = "; ".join(s.get("reasons") or [])[:160]
    print(f"{plan}\t{s['name']}\tbusy={busy}\t{s['status']}\t{why}")
PY
	done
done | tee "$out/tally.tsv"
echo "evidence and tally: $out" >&2
