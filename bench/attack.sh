#!/bin/sh
# Go benchmarks of the attack library and the requests.jsonl encoder
# (in-process loopback backends, bounded).
# Usage: bench/attack.sh [extra go test flags]   (run from anywhere)
# Reports: the client's cost per request (allocs/op, B/op, CPU) of attack.Run
# vs a hey-like loop on net/http's Transport and bare vegeta against an
# allocation-free backend; req/s and CPU/request of Run vs bare vegeta
# against a net/http backend (50 workers, keep-alive); Run with keep-alives
# off (2000 requests only: each leaves a TIME_WAIT socket); the send spread
# of a 20-ID burst; pacing error at 200/s for 1 s; the JSONL encoder vs
# encoding/json. CPU/request includes the in-process backend. The
# side-by-side benchmark against other tools is bench/compare.sh.
set -eu
cd "$(dirname "$0")/.."
go test -run '^$' -bench 'RequestCost' -benchtime 50000x -count 3 "$@" ./attack/
go test -run '^$' -bench 'Throughput/(run|bare-vegeta)$' -benchtime 20000x -count 3 "$@" ./attack/
go test -run '^$' -bench 'Throughput/run-nokeepalive$' -benchtime 2000x -count 1 "$@" ./attack/
go test -run '^$' -bench 'BurstSpread' -benchtime 50x -count 1 "$@" ./attack/
go test -run '^$' -bench 'Pacing' -benchtime 3x -count 1 "$@" ./attack/
go test -run '^$' -bench 'AppendRequestJSON' -count 3 "$@" ./evidence/
