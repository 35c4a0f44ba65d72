// Package slurm holds the Slurm example (README.md: sbatch scripts for the
// receipt backend, the attack shards as a job array, and the
// collect/merge/analyze job) and its integration test (build tag
// integration), which starts Debian's slurm-wlm on this machine.
package slurm
