package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/rlbench/rlbench/evidence/merge"
	"github.com/spf13/cobra"
)

// MergeOptions are the inputs of `rlbench merge`.
type MergeOptions struct {
	IO       *IOStreams
	Inputs   []string
	Out      string
	Scenario string
}

// NewMergeCmd is `rlbench merge`. runF, when not nil, receives the parsed
// options instead of merging (tests).
func NewMergeCmd(io *IOStreams, runF func(*MergeOptions) error) *cobra.Command {
	o := &MergeOptions{IO: io}
	cmd := &cobra.Command{
		Use:   "merge SHARD-DIR... --out RUN-DIR",
		Short: "Join the shard directories of one sharded attack, the backends' receipts and the stats into one scenario directory",
		Long: `merge reads the evidence directories of the shards of one attack (rlbench attack
--shard K/N), receipts (receipts.jsonl, or receipts/*.jsonl from rlbench collect
receipts) and stats snapshots (stats/, taken once), or directories whose
sub-directories are such, and writes one scenario directory that analyze
judges as one run: requests from every shard, receipts from every replica
(an identical receipt twice is kept once), attack.json with one phase per
shard and merge.json with each shard's start and clock offset bound against
each backend replica. A missing or duplicated shard, a shard of another
attack or an ID sent by two shards is written to merge.json and makes the
scenario NOT_RUN naming it (exit 4 here too).`,
		Example: `  rlbench merge ev-shard-0 ev-shard-1 ev-shard-2 ev-shard-3 ev-receipts --out ev-run
  rlbench merge evidence/ --out ev-run --scenario scenario.json     # evidence/ holds shard-0 ... shard-3, receipts`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Inputs = args
			if o.Out == "" {
				return usageErrorf("--out is required")
			}
			if err := checkOutputDir("--out", o.Out, true); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runMerge(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Out, "out", "", "the scenario directory to write (new or empty)")
	cmd.Flags().StringVar(&o.Scenario, "scenario", "", "scenario.json to judge the merged run against (else the inputs')")
	return cmd
}

func runMerge(ctx context.Context, o *MergeOptions) error {
	rec, err := merge.Merge(ctx, merge.Options{Inputs: o.Inputs, Out: o.Out, Scenario: o.Scenario})
	if err != nil {
		return err
	}
	requests := 0
	for _, s := range rec.Shards {
		requests += s.Requests
	}
	fmt.Fprintf(o.IO.ErrOut, "merge: %d of %d shards, %d requests, %d receipts (%d identical dropped) from %d source(s), start spread %s, into %s\n",
		len(rec.Shards), rec.Count, requests, rec.ReceiptsRead-rec.ReceiptsIdentical, rec.ReceiptsIdentical, len(rec.Replicas),
		time.Duration(rec.StartSpreadNs), o.Out)
	if len(rec.Problems) > 0 {
		for _, p := range rec.Problems {
			fmt.Fprintf(o.IO.ErrOut, "merge: %s\n", p)
		}
		return &ExitCodeError{Code: ExitNotRun, Msg: fmt.Sprintf("%s: the shards do not hold the attack exactly once: analyze will report NOT_RUN", o.Out)}
	}
	return nil
}
