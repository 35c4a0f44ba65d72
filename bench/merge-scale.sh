#!/usr/bin/env bash
# rlbench merge and analyze of a sharded attack at scale (issue 24 item 5:
# 16 shards × 1 M requests within bounded memory).
#
#   bench/merge-scale.sh            (run from anywhere; tens of minutes, ~30 GB of /tmp at the default sizes)
#
# For each N×M of SIZES, bench/evgen -shards N -n M writes N shard
# directories of M requests each (attack.json of `rlbench attack --shard
# K/N`, requests.jsonl) and the backend's N×M receipts in one backend/
# directory (RECEIPTS_PER_SHARD=1: in each shard's directory), lab-shaped
# (internal/labshape: every request admitted, one receipt each). Then
# `rlbench merge` of the set and `rlbench analyze` of the merged directory,
# each under /usr/bin/time -v. One line per size:
#   shards ids total | merge wall | merge peak RSS | merge B/request | analyze wall | analyze peak RSS | verdict
# merge B/request is merge's peak RSS over the merged requests (receipts as
# many): it stays flat when memory does not grow with N.
#
# Environment: SIZES (default "16x250000 4x1000000 16x1000000"), ANALYZE
# (default 1; 0 skips analyze), RLBENCH=/path/to/rlbench times that binary
# instead of building ./cmd/rlbench, BEFORE=/path/to/rlbench also times
# that binary's merge of the same shards first (a line "BEFORE merge": the
# figures before a change, in the same run), WORK=DIR keeps the generated shards in
# DIR and reuses them on the next run (otherwise a temporary directory,
# removed at the end). Wall times depend on the machine's load (the line
# prints the 1-minute load average when merge started): compare them as
# ratios of one run. Peak RSS does not depend on load.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "merge-scale.sh: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
SIZES=${SIZES:-16x250000 4x1000000 16x1000000}
ANALYZE=${ANALYZE:-1}
bin=$(mktemp -d)
if [ -n "${WORK:-}" ]; then
	work=$WORK
	mkdir -p "$work"
	trap 'rm -rf "$bin" "$work"/*/merged "$work"/*/.merged.merge-*' EXIT
else
	work=$(mktemp -d /tmp/rlbench-merge-scale.XXXXXX)
	trap 'rm -rf "$bin" "$work"' EXIT
fi
if [ -n "${RLBENCH:-}" ]; then cp "$RLBENCH" "$bin/rlbench"; else CGO_ENABLED=0 go build -o "$bin/rlbench" ./cmd/rlbench; fi
[ -z "${BEFORE:-}" ] || cp "$BEFORE" "$bin/before"
go build -o "$bin/evgen" ./bench/evgen
R=$bin/rlbench

# timed OUT CMD...: runs CMD under /usr/bin/time -v (its output to OUT.log),
# prints "wall_s rss_kb exit".
timed() {
	local out=$1 rc=0
	shift
	/usr/bin/time -v "$@" >"$out.log" 2>"$out.time" || rc=$?
	awk -v rc="$rc" '
		/Elapsed \(wall clock\)/ { n = split($NF, t, ":"); s = t[n] + (n > 1 ? t[n-1] * 60 : 0) + (n > 2 ? t[n-2] * 3600 : 0) }
		/Maximum resident set size/ { m = $NF }
		END { printf "%.2f %d %d\n", s, m, rc }' "$out.time"
}

echo "# $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.1f GB", $2 / 1048576 }' /proc/meminfo), load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-8s %-9s | %-9s | %-14s | %-9s | %-10s | %-15s | %s\n' shards ids total "merge s" "merge RSS MB" "B/request" "analyze s" "analyze RSS MB" verdict
for size in $SIZES; do
	n=${size%x*} m=${size#*x}
	d=$work/$size
	if [ ! -f "$d/ev/backend/scenario.json" ]; then
		rm -rf "$d"
		"$bin/evgen" -shards "$n" -n "$m" -out "$d/ev" ${RECEIPTS_PER_SHARD:+-receipts-per-shard}
	fi
	total=$((n * m))
	if [ -n "${BEFORE:-}" ]; then # the other binary's merge, same data, same run
		rm -rf "$d/merged"
		load=$(cut -d' ' -f1 /proc/loadavg)
		read -r mw mrss mrc < <(timed "$d/merge-before" "$bin/before" merge "$d/ev" --out "$d/merged")
		printf '%-6s %-8s %-9s | %-9s | %-14.1f | %-9.1f | %-10s | %-15s | %s (load %s)\n' "$n" "$m" "$total" "$mw" "$(awk -v k="$mrss" 'BEGIN { print k / 1024 }')" \
			"$(awk -v k="$mrss" -v t="$total" 'BEGIN { print k * 1024 / t }')" - - "BEFORE merge, exit $mrc" "$load"
	fi
	rm -rf "$d/merged"
	load=$(cut -d' ' -f1 /proc/loadavg)
	read -r mw mrss mrc < <(timed "$d/merge" "$R" merge "$d/ev" --out "$d/merged")
	if [ "$mrc" != 0 ]; then
		echo "merge $size failed (exit $mrc):" >&2
		tail -5 "$d/merge.log" >&2
		continue
	fi
	aw=- arss=- verdict=-
	if [ "$ANALYZE" = 1 ]; then
		read -r aw arss arc < <(timed "$d/analyze" "$R" analyze "$d/merged")
		arss=$(awk -v k="$arss" 'BEGIN { printf "%.1f", k / 1024 }')
		verdict=$(grep -o 'Verdict: [A-Z_]*' "$d/analyze.log" | tail -1 || true)
		[ -n "$verdict" ] || verdict="exit $arc"
	fi
	printf '%-6s %-8s %-9s | %-9s | %-14.1f | %-9.1f | %-10s | %-15s | %s (load %s)\n' "$n" "$m" "$total" "$mw" "$(awk -v k="$mrss" 'BEGIN { print k / 1024 }')" \
		"$(awk -v k="$mrss" -v t="$total" 'BEGIN { print k * 1024 / t }')" "$aw" "$arss" "${verdict#Verdict: }" "$load"
	rm -rf "$d/merged"
done
