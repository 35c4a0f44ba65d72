#!/usr/bin/env bash
# Load + Judge on lab-shaped evidence, beside `vegeta report` on the same
# number of results.
# Usage: bench/analyze.sh [N ...]   (default: 1000000 3000000; run from anywhere)
# For each N it writes N requests and N receipts shaped like `rlbench demo`'s
# (internal/labshape: 566 bytes per request line plus its receipt) and
# the same requests as vegeta JSON results, then prints the wall time and peak
# RSS (/usr/bin/time -v; Debian package `time`) of `rlbench analyze` and of
# `vegeta report` (vegeta v12.13.0's CLI, built into a temporary GOBIN).
# Then it times analyze on the same evidence with a limiter declared (evgen
# -model): every request replayed through its model.
# RLBENCH=/path/to/rlbench times that binary instead of building ./cmd/rlbench.
# REPEAT (default 3) runs each command that many times; the machine may be
# shared, so compare medians.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "analyze.sh: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
repeat="${REPEAT:-3}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# RLBENCH may name another rlbench binary (e.g. an earlier release's) to time.
if [ -n "${RLBENCH:-}" ]; then cp "$RLBENCH" "$work/rlbench"; else go build -o "$work/rlbench" ./cmd/rlbench; fi
go build -o "$work/evgen" ./bench/evgen
GOBIN="$work/bin" go install github.com/tsenart/vegeta/v12@v12.13.0

# measure LABEL CMD...: one line "LABEL wall S peak_rss MB" per run.
measure() {
	local label="$1"
	shift
	for _ in $(seq "$repeat"); do
		/usr/bin/time -v "$@" > /dev/null 2> "$work/time.txt" || true
		awk -v l="$label" '/Elapsed \(wall clock\)/ { n = split($NF, t, ":"); s = t[n] + (n > 1 ? t[n-1] * 60 : 0) + (n > 2 ? t[n-2] * 3600 : 0) }
			/User time/ { u = $NF } /System time/ { y = $NF }
			/Maximum resident set size/ { rss = $NF / 1024 }
			END { printf "%-16s wall %6.2f s  cpu %6.2f s  peak RSS %7.1f MB\n", l, s, u + y, rss }' "$work/time.txt"
	done
}

for n in "${@:-1000000 3000000}"; do
	for m in $n; do
		dir="$work/ev-$m"
		"$work/evgen" -n "$m" -out "$dir" -vegeta "$work/results-$m.json"
		bytes=$(cat "$dir/requests.jsonl" "$dir/receipts.jsonl" | wc -c)
		echo "== $m requests + $m receipts ($((bytes / m)) bytes per request line plus its receipt)"
		measure "rlbench analyze" "$work/rlbench" analyze --format json --status-file - "$dir"
		measure "vegeta report" "$work/bin/vegeta" report "$work/results-$m.json"
		rm -rf "$dir" "$work/results-$m.json"
		# the same, with a limiter declared: every request through its model
		"$work/evgen" -n "$m" -out "$dir" -model
		measure "analyze + model" "$work/rlbench" analyze --format json --status-file - "$dir"
		rm -rf "$dir"
	done
done
