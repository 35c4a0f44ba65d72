#!/usr/bin/env bash
# The event-loop sender against the goroutine engine and wrk (issue 28
# item 3): closed loop, 50 connections, against a private nginx (return 200
# "ok\n", one worker, access_log off; the config of bench/compare.sh).
# Interleaved runs: rlbench attack with N IDs on its event loops (the
# default, attack/evloop_linux.go), the same with --engine goroutines,
# wrk -t2 -c50 -d2s. Per run:
# user, system and total CPU per request (µs, /usr/bin/time: the whole
# process, start-up included), requests per second (rlbench: the attack's
# own, attack.json sent/(end-start); wrk: its Requests/sec), and the
# 1-minute load average when the run began. Prints the medians per tool.
#
# Usage: bench/evloop.sh   Environment: RUNS (default 6), N (default 200000),
# TOOLS (default "goroutine evloop wrk"),
# RESULTS=FILE keeps the raw rows (tool user_us sys_us cpu_us per_sec load1).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-6}
N=${N:-200000}
TOOLS=${TOOLS:-goroutine evloop wrk}
work=$(mktemp -d /tmp/evloop.XXXXXX)
npid=""
cleanup() { [ -n "$npid" ] && kill "$npid" 2>/dev/null; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
go build -o "$work/rlbench" ./cmd/rlbench
go build -o "$work/measure" ./bench/measure

. bench/lib/nginx.sh
start_ok_nginx "$work/nginx" "$("$work/measure" freeport)" || exit 1
npid=$NGINX_PID url=$NGINX_URL
echo "nginx on $url; $(nproc) cores; $RUNS runs of each, $N IDs" >&2

rows="$work/rows"
: >"$rows"
# one TOOL: a run; appends "tool user_us sys_us cpu_us per_sec load1".
one() {
	local t=$1 ld reqs rate
	ld=$(cut -d' ' -f1 /proc/loadavg)
	case $t in
	goroutine | evloop)
		rm -rf "$work/ev"
		/usr/bin/time -f '%e %U %S' -o "$work/time" \
			"$work/rlbench" attack --target t="$url" --ids "$N" --concurrency 50 --out "$work/ev" \
			$([ "$t" = goroutine ] && echo --engine goroutines) >/dev/null 2>&1
		"$work/measure" jsonl "$work/ev" >"$work/s.json"
		[ "$(jq -r .complete "$work/s.json")" = true ] || { echo "$t: attack incomplete" >&2; exit 1; }
		rate=$(jq -r .attack_per_sec "$work/s.json") reqs=$N ;;
	wrk)
		/usr/bin/time -f '%e %U %S' -o "$work/time" wrk -t2 -c50 -d2s "$url/" >"$work/wrk.out"
		rate=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.out") reqs=$(awk '/requests in/ {print $1}' "$work/wrk.out") ;;
	esac
	read -r _ u s <"$work/time"
	awk -v t="$t" -v u="$u" -v s="$s" -v n="$reqs" -v r="$rate" -v l="$ld" \
		'BEGIN { printf "%s %.3f %.3f %.3f %.0f %s\n", t, u*1e6/n, s*1e6/n, (u+s)*1e6/n, r, l }' | tee -a "$rows" >&2
}
for rep in $(seq "$RUNS"); do
	for t in $TOOLS; do one "$t"; done
done
[ -n "${RESULTS:-}" ] && cp "$rows" "$RESULTS"

median() { sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2] + a[NR/2+1]) / 2 }'; }
col() { awk -v t="$1" -v c="$2" '$1 == t { print $c }' "$rows" | median; }
printf '%-10s %8s %8s %8s %10s %6s   (medians of %s runs; µs CPU per request)\n' tool user sys total req/s load1 "$RUNS"
for t in $TOOLS; do
	printf '%-10s %8s %8s %8s %10s %6s\n' "$t" "$(col "$t" 2)" "$(col "$t" 3)" "$(col "$t" 4)" "$(col "$t" 5)" "$(col "$t" 6)"
done
# Each tool against wrk in the same repetition (the machine's other load
# drifts between repetitions): medians of the per-repetition ratios.
if [[ " $TOOLS " == *" wrk "* ]]; then
	nt=$(wc -w <<<"$TOOLS")
	printf '\n%-10s %12s %12s   (medians of per-repetition ratios to wrk)\n' tool cpu/wrk req_s/wrk
	for t in $TOOLS; do
		[ "$t" = wrk ] && continue
		r() { awk -v t="$t" -v nt="$nt" -v c="$1" '{ rep = int((NR-1)/nt); v[$1, rep] = $c } END { for (k = 0; k <= rep; k++) if (v["wrk", k] > 0) print v[t, k] / v["wrk", k] }' "$rows" | median; }
		printf '%-10s %12.3f %12.3f\n' "$t" "$(r 4)" "$(r 5)"
	done
fi
