#!/usr/bin/env bash
# Sharded attacks on one machine, measured (issue 24 item 5): for each shard
# count N and ID count M, N `rlbench attack --shard K/N` processes held until
# one --start-at instant send M IDs (unpaced: every shard bursts) to one
# `rlbench backend` on loopback; then `rlbench collect receipts` and
# `rlbench merge`. One line per (N, M):
#   shards ids | start spread | max late | send window | achieved rate | clocks | clock bound | merge wall | merge RSS
# start spread and max late are merge.json's (latest shard start minus
# earliest; the latest lateness against --start-at); the send window is the
# last send minus the first over all shards; the achieved rate is M over the
# first send to the last response end; clocks and clock bound are
# merge.json's clocks and the largest |offset| their bounds allow
# (MergeRecord.ClockBound); merge wall and peak RSS come from /usr/bin/time.
#
# Then the offset clock: one more 4-shard run in which shard 0's times are
# moved OFFSET_MS later (its sent_ns in requests.jsonl, rewritten in place with
# the same width so its seal still holds, and its attack.json starts), as if
# its machine's clock ran ahead by that much. The true offset of the backend's
# clock against shard 0 is then exactly -OFFSET_MS (one machine: the clocks are
# otherwise one), and the line says whether merge's bound for shard 0's clock
# holds it. Each shard names a node of its own (RLBENCH_NODE_NAME=sim-node-K),
# as on four machines: with one clock for all four, merge would find their
# bounds disjoint and report it. (libfaketime cannot do this: rlbench is a static Go binary, which
# reads the clock through the vDSO without libc, and LD_PRELOAD does not apply
# to a static executable.)
#
# At scale (16 shards × 1 M requests, generated rather than sent): bench/merge-scale.sh.
#
# Usage: bench/shards.sh                      # SHARDS="4 8 16" IDS="4000 16000" OFFSET_MS=250
# RLBENCH=/path/to/rlbench times that binary instead of building ./cmd/rlbench.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || { echo "shards.sh: /usr/bin/time missing (apt-get install time)" >&2; exit 2; }
SHARDS=${SHARDS:-4 8 16}
IDS=${IDS:-4000 16000}
OFFSET_MS=${OFFSET_MS:-250}
LEAD=${LEAD:-10} # seconds to --start-at: more than --warm-ahead (5 s), so warming ends before the instant
work=$(mktemp -d)
backend_pid=""
trap '[ -n "$backend_pid" ] && kill "$backend_pid" 2>/dev/null; rm -rf "$work"' EXIT
if [ -n "${RLBENCH:-}" ]; then cp "$RLBENCH" "$work/rlbench"; else CGO_ENABLED=0 go build -o "$work/rlbench" ./cmd/rlbench; fi
R=$work/rlbench

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run N M DIR [SHIFT_NS [NODE_PREFIX]]: the sharded attack, receipts and merge
# into DIR/merged; prints the merge's "wall rss_kb". With NODE_PREFIX, shard K
# names node NODE_PREFIX<K> (RLBENCH_NODE_NAME): each shard a clock of its own,
# as on N machines.
run() {
	local n=$1 m=$2 d=$3 shift_ns=${4:-0} prefix=${5:-} port
	port=$(free_port)
	mkdir -p "$d/ev"
	"$R" backend --listen "127.0.0.1:$port" --receipts "$d/backend-receipts.jsonl" --replica bench-backend >"$d/backend.log" 2>&1 &
	backend_pid=$!
	for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
	local at pids=""
	at=$(date -u -d "+$LEAD sec" +%Y-%m-%dT%H:%M:%SZ)
	for k in $(seq 0 $((n - 1))); do
		RLBENCH_NODE_NAME=${prefix:+$prefix$k} "$R" attack --target "proxy=http://127.0.0.1:$port" --ids "$m" --shard "$k/$n" --start-at "$at" --out "$d/ev/shard-$k" -q &
		pids="$pids $!"
	done
	for p in $pids; do wait "$p"; done
	"$R" collect receipts --url "http://127.0.0.1:$port" --out "$d/ev/backend" >/dev/null 2>&1
	kill "$backend_pid"; wait "$backend_pid" 2>/dev/null || true; backend_pid=""
	if [ "$shift_ns" != 0 ]; then
		python3 - "$d/ev/shard-0" "$shift_ns" <<'PY'
import json, re, sys
d, shift = sys.argv[1], int(sys.argv[2])
p = d + "/requests.jsonl"
b = open(p, "rb").read()
def sh(mo):
    v = str(int(mo.group(2)) + shift).encode()
    assert len(v) == len(mo.group(2)), "the shift changed the width"
    return mo.group(1) + v
b2 = re.sub(rb'("(?:sent|intended)_ns":)(\d+)', sh, b)
assert len(b2) == len(b)
open(p, "wb").write(b2)
a = json.load(open(d + "/attack.json"))
for o in [a] + a["phases"]:
    for k in ("start_ns", "end_ns", "first_send_ns", "last_send_ns"):
        if o.get(k):
            o[k] += shift
json.dump(a, open(d + "/attack.json", "w"))
PY
	fi
	/usr/bin/time -f "%e %M" -o "$d/merge.time" "$R" merge "$d/ev" --out "$d/merged" >"$d/merge.log" 2>&1 || true
	cat "$d/merge.time"
}

echo "# $(nproc) CPUs, load average at start: $(cut -d' ' -f1-3 /proc/loadavg); LEAD ${LEAD}s"
printf '%-6s %-7s | %-12s | %-12s | %-12s | %-12s | %-6s | %-12s | %-9s | %s\n' shards ids "start spread" "max late" "send window" "rate /s" clocks "clock bound" "merge s" "merge RSS MB"
for m in $IDS; do
	for n in $SHARDS; do
		d=$work/n$n-m$m
		read -r wall rss < <(run "$n" "$m" "$d")
		python3 - "$d/merged" "$n" "$m" "$wall" "$rss" <<'PY'
import json, sys
d, n, m, wall, rss = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
mg = json.load(open(d + "/merge.json"))
first = last = end = None
cnt = 0
for line in open(d + "/requests.jsonl"):
    q = json.loads(line)
    s = q["sent_ns"]; e = s + q.get("latency_ns", 0)
    first = s if first is None else min(first, s)
    last = s if last is None else max(last, s)
    end = e if end is None else max(end, e)
    cnt += 1
bound = 0
for c in mg.get("clocks", []):
    for o in c["offsets"]:
        bound = max(bound, abs(o["min_ns"]), abs(o["max_ns"]))
ms = lambda ns: "%.3f ms" % (ns / 1e6)
probs = "" if not mg["problems"] else "  PROBLEMS: " + "; ".join(mg["problems"])[:200]
print("%-6s %-7d | %-12s | %-12s | %-12s | %-12.0f | %-6d | %-12s | %-9.2f | %.1f%s" % (n, m, ms(mg["start_spread_ns"]), ms(mg["max_late_ns"]),
      ms(last - first), cnt / ((end - first) / 1e9), len(mg.get("clocks", [])), ms(bound), wall, rss / 1024, probs))
PY
	done
done

# The offset clock.
d=$work/offset
shift_ns=$((OFFSET_MS * 1000000))
read -r wall rss < <(run 4 4000 "$d" "$shift_ns" sim-node-)
python3 - "$d/merged" "$shift_ns" <<'PY'
import json, sys
d, shift = sys.argv[1], int(sys.argv[2])
mg = json.load(open(d + "/merge.json"))
s0 = [s for s in mg["shards"] if s["index"] == 0][0]
o = s0["offsets"][0]
truth = -shift
inside = o["bounded"] and o["min_ns"] <= truth <= o["max_ns"]
print("offset clock: shard 0 moved %+.3f ms; its bound against %s: [%+.3f, %+.3f] ms (%d pairs); true offset %+.3f ms: %s" % (
    shift / 1e6, o["replica"], o["min_ns"] / 1e6, o["max_ns"] / 1e6, o["pairs"], truth / 1e6, "INSIDE" if inside else "OUTSIDE"))
for c in mg.get("clocks", []):
    print("  clock %s shards %s: %s" % (c["name"], c["shards"], ", ".join("[%+.3f, %+.3f] ms" % (x["min_ns"] / 1e6, x["max_ns"] / 1e6) for x in c["offsets"])))
for p in mg["problems"]:
    print("  merge problem: " + p)
PY
