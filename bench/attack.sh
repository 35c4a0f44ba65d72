#!/bin/sh
# Benchmarks of the attack library (in-process loopback backend, bounded).
# Usage: bench/attack.sh [extra go test flags]   (run from anywhere)
# Reports: req/s and CPU/request of attack.Run vs bare vegeta (50 workers,
# keep-alive), Run with keep-alives off (2000 requests only: each leaves a
# TIME_WAIT socket), the send spread of a 20-ID burst, and pacing error at
# 200/s for 1 s. CPU/request includes the in-process backend.
set -eu
cd "$(dirname "$0")/.."
go test -run '^$' -bench 'Throughput/(run|bare-vegeta)$' -benchtime 20000x -count 3 "$@" ./attack/
go test -run '^$' -bench 'Throughput/run-nokeepalive$' -benchtime 2000x -count 1 "$@" ./attack/
go test -run '^$' -bench 'BurstSpread' -benchtime 50x -count 1 "$@" ./attack/
go test -run '^$' -bench 'Pacing' -benchtime 3x -count 1 "$@" ./attack/
