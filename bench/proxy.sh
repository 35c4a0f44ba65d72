#!/usr/bin/env bash
# The lab-proxy hop of issue 14, side by side with nginx as a plain reverse
# proxy, on loopback: wrk (1 thread, 50 connections, 5 s) against
#   direct       the upstream itself (a private nginx answering 200 "ok")
#   nginx        a second private nginx proxying to it (keepalive upstream)
#   lab-before   one lab proxy built from BEFORE_REV (default main)
#   lab-after    one lab proxy built from this checkout
#   lab-after+rl the same with the local rate limit filter on (a bucket that
#                never empties) and its JSON access log written to a file,
#                as `rlbench run` uses it
# For each proxy it reads the proxy process's CPU (utime+stime from
# /proc/PID/stat, all its threads; nginx: master and worker) over the run and
# prints CPU µs per request, req/s, and the ratio to nginx. Runs alternate,
# REPS times (default 5), and the table shows medians (min..max), with the
# 1-minute load average and the steal time (the CPU the hypervisor took
# from this virtual machine, /proc/stat) over each target's runs.
#
# The target of issue 28 item 5: the lab proxy's CPU per request for a
# local-token-bucket hop (lab-after+rl) at most 1.5x nginx's, median
# against median of this run; the last line says MET or NOT MET
# (LIMIT=1.5 by default).
#
# Usage: bench/proxy.sh            (run from anywhere; about 3 minutes)
# Environment: BEFORE_REV (default main; "none" skips it), REPS, DURATION
# (wrk -d, default 5s), CONNS (default 50), KEEP=1 keeps the work directory.
# Needs wrk and nginx (Debian packages wrk, nginx-light); both nginx
# processes are private (own prefix, config, pid file, loopback port) and
# are stopped by PID. The machine's other load shows in every figure:
# compare the ratios of one run, not absolute numbers. RESULTS_JSONL=FILE
# appends the raw runs in bench/compare.sh's format (see the end).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
BEFORE_REV=${BEFORE_REV:-main}
REPS=${REPS:-5}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-50}
LIMIT=${LIMIT:-1.5}
command -v wrk >/dev/null || { echo "proxy.sh: wrk not installed (apt-get install wrk)" >&2; exit 2; }
[ -x /usr/sbin/nginx ] || { echo "proxy.sh: /usr/sbin/nginx not installed (apt-get install nginx-light)" >&2; exit 2; }
work="$(mktemp -d /tmp/rlbench-proxy.XXXXXX)"
pids=()
lab_pid=""
trap 'echo "proxy.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR
cleanup() {
	[ -n "$lab_pid" ] && kill -TERM "$lab_pid" 2>/dev/null
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [ "${KEEP:-0}" = 1 ]; then echo "work directory kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
log() { echo "== $*" >&2; }

log "building labproxy (after: this checkout; before: $BEFORE_REV)"
go build -o "$work/lab-after" ./bench/labproxy
tools="lab-after lab-after+rl"
if [ "$BEFORE_REV" != none ]; then
	mkdir -p "$work/before-src"
	git -C "$repo" archive "$BEFORE_REV" | tar -x -C "$work/before-src"
	# The helper itself comes from this checkout: it uses only proxy.Config
	# fields that both revisions have (Name, Upstream, Local, AccessLog).
	mkdir -p "$work/before-src/bench/labproxy"
	cp bench/labproxy/main.go "$work/before-src/bench/labproxy/main.go"
	(cd "$work/before-src" && go build -o "$work/lab-before" ./bench/labproxy)
	tools="lab-before $tools"
fi
freeport() { "$work/lab-after" freeport; }

# listening PORT PID: PID (or one of its children) listens on 127.0.0.1:PORT.
listening() {
	local port=$1 pid=$2 p
	for p in "$pid" $(pgrep -P "$pid" || true); do
		ss -ltnpH "sport = :$port" 2>/dev/null | grep -q "pid=$p," && return 0
	done
	return 1
}

# nginx NAME PORT SERVERBLOCK: start a private nginx (bench/lib/nginx.sh),
# wait until it listens.
. bench/lib/nginx.sh
start_nginx() {
	local name=$1 port=$2 body=$3 dir="$work/$1"
	private_nginx "$dir" "$body"
	local pid=$NGINX_PID
	pids+=("$pid")
	for _ in $(seq 100); do listening "$port" "$pid" && break; sleep 0.05; done
	listening "$port" "$pid" || { cat "$dir/logs/error.log" >&2; echo "proxy.sh: nginx $name did not listen on $port" >&2; exit 1; }
	eval "${name//-/_}_pid=$pid"
}

up_port=$(freeport)
start_nginx upstream "$up_port" "server { listen 127.0.0.1:$up_port; location / { return 200 \"ok\\n\"; } }"
upstream="http://127.0.0.1:$up_port"
ng_port=$(freeport)
start_nginx nginxproxy "$ng_port" "upstream up { server 127.0.0.1:$up_port; keepalive 64; }
    server { listen 127.0.0.1:$ng_port; location / { proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
log "upstream nginx pid $upstream_pid on $upstream, proxy nginx pid $nginxproxy_pid on :$ng_port; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"

# cpu_ticks PID: utime+stime of PID and its children processes, in clock ticks.
cpu_ticks() {
	local total=0 p
	for p in "$1" $(pgrep -P "$1" || true); do
		total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat")))
	done
	echo "$total"
}
hz=$(getconf CLK_TCK)
results="$work/results.txt"
# steal_ticks: the CPU time the hypervisor took from this virtual machine
# so far (/proc/stat, all CPUs, clock ticks).
steal_ticks() { awk '/^cpu / { print $9 }' /proc/stat; }

# run TOOL URL PID: one wrk run, appends "TOOL rps cpu_us_per_request
# load1 steal_ms".
run() {
	local tool=$1 url=$2 pid=$3 c0 c1 s0 s1 out n rps
	curl -fsS "$url/" >/dev/null || { echo "proxy.sh: $tool at $url does not answer 200" >&2; exit 1; }
	c0=$( [ -n "$pid" ] && cpu_ticks "$pid" || echo 0)
	s0=$(steal_ticks)
	out=$(wrk -t1 -c"$CONNS" -d"$DURATION" "$url/")
	c1=$( [ -n "$pid" ] && cpu_ticks "$pid" || echo 0)
	s1=$(steal_ticks)
	n=$(awk '/requests in/ {print $1}' <<<"$out")
	rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
	if grep -q "Non-2xx" <<<"$out"; then echo "proxy.sh: $tool answered non-2xx: $out" >&2; exit 1; fi
	awk -v t="$tool" -v r="$rps" -v n="$n" -v d=$((c1 - c0)) -v hz="$hz" -v l="$(cut -d' ' -f1 /proc/loadavg)" -v st=$((s1 - s0)) \
		'BEGIN { printf "%s %s %.2f %s %.0f\n", t, r, (n > 0 ? d / hz * 1e6 / n : 0), l, st / hz * 1000 }' >>"$results"
}

start_lab() { # TOOL: start a labproxy, sets lab_url and lab_pid
	local bin=$1 args=()
	case $1 in lab-after+rl) bin=lab-after; args=(-local -access-log "$work/access.log") ;; esac
	rm -f "$work/lab.json"
	"$work/$bin" -upstream "$upstream" "${args[@]}" >"$work/lab.json" 2>"$work/lab.err" &
	lab_pid=$!
	for _ in $(seq 400); do [ -s "$work/lab.json" ] && [ -z "$(tail -c1 "$work/lab.json")" ] && break; sleep 0.05; done
	lab_url=$(sed -n 's/.*"url":"\([^"]*\)".*/\1/p' "$work/lab.json")
	[ -n "$lab_url" ] || { echo "proxy.sh: labproxy $1 did not start" >&2; cat "$work/lab.err" >&2; exit 1; }
}

for rep in $(seq "$REPS"); do
	log "rep $rep/$REPS"
	run direct "$upstream" ""
	run nginx "http://127.0.0.1:$ng_port" "$nginxproxy_pid"
	for t in $tools; do
		start_lab "$t"
		run "$t" "$lab_url" "$lab_pid"
		kill -TERM "$lab_pid"; wait "$lab_pid" 2>/dev/null || true
		lab_pid=""
		rm -f "$work/access.log"
	done
done

echo "proxy hop on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) (per target: mean load1 at its runs' ends, steal over them), wrk -t1 -c$CONNS -d$DURATION, $REPS reps, medians (min..max)"
awk -v limit="$LIMIT" '
function median(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
{ k = $1; n[k]++; r[k, n[k]] = $2; c[k, n[k]] = $3; ld[k] += $4; st[k] += $5; if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
END {
	for (i = 1; i <= m; i++) { k = order[i]
		delete ra; delete ca; rmin = cmin = 1e18; rmax = cmax = 0
		for (j = 1; j <= n[k]; j++) { ra[j] = r[k, j]; ca[j] = c[k, j]
			if (r[k, j] < rmin) rmin = r[k, j]; if (r[k, j] > rmax) rmax = r[k, j]
			if (c[k, j] < cmin) cmin = c[k, j]; if (c[k, j] > cmax) cmax = c[k, j] }
		rm[k] = median(ra, n[k]); cm[k] = median(ca, n[k]); rlo[k] = rmin; rhi[k] = rmax; clo[k] = cmin; chi[k] = cmax }
	printf "%-14s %22s %26s %10s %8s %10s\n", "target", "req/s", "proxy CPU µs/request", "vs nginx", "load1", "steal ms"
	for (i = 1; i <= m; i++) { k = order[i]
		ratio = (k != "direct" && cm["nginx"] > 0) ? sprintf("%.2fx", cm[k] / cm["nginx"]) : "-"
		cpu = (k == "direct") ? "-" : sprintf("%.1f (%.1f..%.1f)", cm[k], clo[k], chi[k])
		printf "%-14s %22s %26s %10s %8.2f %10.0f\n", k, sprintf("%.0f (%.0f..%.0f)", rm[k], rlo[k], rhi[k]), cpu, ratio, ld[k] / n[k], st[k] }
	# Issue 28 item 5: a local-token-bucket hop (the local filter on, its
	# JSON access log written) within limit x nginx CPU per request.
	t = "lab-after+rl"
	if (cm["nginx"] > 0 && (t in cm)) {
		q = cm[t] / cm["nginx"]
		printf "lab proxy local-bucket hop: %.1f µs/request = %.2fx nginx (%.1f µs), target <= %.2fx: %s\n", cm[t], q, cm["nginx"], limit, (q <= limit ? "MET" : "NOT MET")
	} else print "lab proxy local-bucket hop: no figure: NOT MET"
}' "$results"

# RESULTS_JSONL=FILE appends every run as compare.sh's rows (group "proxy",
# tool the target above, figures per_sec and cpu_us) for measure table.
if [ -n "${RESULTS_JSONL:-}" ]; then
	awk '{ printf "{\"group\":\"proxy\",\"tool\":\"%s\",\"key\":\"per_sec\",\"value\":%s}\n", $1, $2
		if ($1 != "direct") printf "{\"group\":\"proxy\",\"tool\":\"%s\",\"key\":\"cpu_us\",\"value\":%s}\n", $1, $3 }' "$results" >>"$RESULTS_JSONL"
	printf '{"group":"proxy","tool":"machine","key":"load1","value":%s}\n' "$(cut -d' ' -f1 /proc/loadavg)" >>"$RESULTS_JSONL"
fi
