#!/usr/bin/env bash
# Same target, same run: wrk vs `rlbench attack` against one `rlbench backend`
# on 127.0.0.1 (a free port), to show what rlbench's own client costs.
# Usage: bench/compare.sh [IDS] [CONCURRENCY]   (defaults 20000 and 50)
# Needs wrk (Debian package `wrk`). The bare-vegeta comparison is a Go
# benchmark: bench/attack.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
ids="${1:-20000}"
conc="${2:-50}"
command -v wrk >/dev/null || { echo "compare.sh: wrk not installed (apt-get install wrk)" >&2; exit 2; }
work="$(mktemp -d)"
bin="$work/rlbench"
go build -o "$bin" ./cmd/rlbench
"$bin" backend --listen 127.0.0.1:0 --receipts "$work/receipts.jsonl" > "$work/backend.json" 2> "$work/backend.err" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -s "$work/backend.json" ] && break; sleep 0.05; done
url="$(sed -n 's/.*"backend":"\([^"]*\)".*/\1/p' "$work/backend.json")"
[ -n "$url" ] || { echo "compare.sh: backend did not start" >&2; cat "$work/backend.err" >&2; exit 1; }
echo "target: $url (rlbench backend, pid $pid)"

echo "== wrk -t2 -c$conc -d5s"
wrk -t2 -c"$conc" -d5s "$url/" | grep -E "Requests/sec|Latency"

echo "== rlbench attack --ids $ids --concurrency $conc"
start=$(date +%s.%N)
/usr/bin/time -f "cpu: %U s user + %S s sys" "$bin" attack --target b="$url" --ids "$ids" --concurrency "$conc" --out "$work/ev" 2>&1 | tail -2
end=$(date +%s.%N)
awk -v n="$ids" -v s="$start" -v e="$end" 'BEGIN { printf "rlbench attack: %.0f requests/s (wall, incl. process start and writing requests.jsonl)\n", n/(e-s) }'
lines=$(wc -l < "$work/ev/requests.jsonl")
echo "requests.jsonl: $lines lines"
