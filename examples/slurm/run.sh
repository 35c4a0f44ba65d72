#!/bin/bash
# run.sh — a sharded attack under Slurm: the backend job, an array of N attack
# shards held until one start instant, and the collect/merge/analyze job that
# depends on the array (afterok). Waits for the collect job, cancels the backend,
# prints the verdict and exits 0 on PASS.
#
#   EVIDENCE=/shared/rlbench/run1 ./run.sh            # 4 shards x 4000 IDs
#   SHARDS=16 IDS=100000 LEAD=30 EVIDENCE=... ./run.sh
#
# Environment: EVIDENCE (required; a directory every node sees, created here),
# RLBENCH (the binary, default rlbench on PATH; must be the same path on every
# node), SHARDS (4), IDS (4000), LEAD (seconds from submission to START_AT, 15:
# time for the array to be scheduled and its tasks to start), RLBENCH_LISTEN
# (the backend's address, 0.0.0.0:18080), TARGET (default: the backend on its
# node, http://<node>:<port>), SBATCH_ARGS (more sbatch options for every job,
# e.g. "--partition=batch --account=lab").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${EVIDENCE:?set EVIDENCE to a new directory on a file system every node sees}"
export EVIDENCE RLBENCH=${RLBENCH:-rlbench} SHARDS=${SHARDS:-4} IDS=${IDS:-4000}
export RLBENCH_LISTEN=${RLBENCH_LISTEN:-0.0.0.0:18080}
LEAD=${LEAD:-15}
logs=$EVIDENCE/slurm-logs
mkdir -p "$EVIDENCE" "$logs"
# shellcheck disable=SC2086
sb() { sbatch --parsable ${SBATCH_ARGS:-} "$@"; }

bj=$(sb -o "$logs/backend-%j.out" "$here/backend.sbatch")
bj=${bj%%;*}
trap 'scancel "$bj" 2>/dev/null || true' EXIT
port=${RLBENCH_LISTEN##*:}
node=""
for _ in $(seq 120); do # the backend's node, once it runs
  node=$(squeue -h -j "$bj" -t R -o %N 2>/dev/null || true)
  [ -n "$node" ] && break
  sleep 1
done
[ -n "$node" ] || { echo "run.sh: backend job $bj did not start" >&2; exit 1; }
host=${RLBENCH_LISTEN%:*}
[ "$host" = 0.0.0.0 ] && host=$node
export TARGET=${TARGET:-http://$host:$port}
up=""
for _ in $(seq 60); do # its listener
  if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then up=1; break; fi
  sleep 1
done
[ -n "$up" ] || { echo "run.sh: backend job $bj on $node: nothing listens on $host:$port (see $logs/backend-$bj.out)" >&2; exit 1; }

START_AT=$(date -u -d "+$LEAD sec" +%Y-%m-%dT%H:%M:%SZ)
export START_AT
aj=$(sb --array=0-$((SHARDS - 1)) -o "$logs/attack-%A_%a.out" "$here/attack.sbatch")
aj=${aj%%;*}
cj=$(sb --dependency=afterok:"$aj" --kill-on-invalid-dep=yes -o "$logs/collect-%j.out" "$here/collect.sbatch")
cj=${cj%%;*}
echo "run.sh: backend job $bj on $node ($TARGET), attack array $aj ($SHARDS shards, START_AT $START_AT), collect job $cj"
while squeue -h -j "$cj" 2>/dev/null | grep -q .; do sleep 2; done
cat "$logs/collect-$cj.out" 2>/dev/null || true
# the collect job's exit code: analyze's (0 = PASS)
state=$(scontrol show job "$cj" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p' | head -1)
echo "run.sh: collect job $cj: ${state:-gone}; evidence in $EVIDENCE/run, report $EVIDENCE/report.json"
[ "$state" = COMPLETED ]
