package cli

import (
	"testing"
)

// TestAttackOptionsErrors: the usage errors of `rlbench attack` that
// TestNewAttackCmd does not reach, and the order of the concerns: the
// targets, --out, the flows or the IDs, the transport, the shard,
// --warm-ahead (the first wins).
func TestAttackOptionsErrors(t *testing.T) {
	t.Setenv("RLBENCH_TEST_SHARD_INDEX", "7")
	testCmd(t, NewAttackCmd, []cmdCase[AttackOptions]{
		{name: "flow and targets file", argv: append(argv("--targets-file t --out ev"), "--flow", "name=A,ids=2"), err: "give --flow or --targets-file, not both"},
		{name: "negative duration", argv: argv("--target a=http://x --out ev --rate 5/1s --duration -1s"), err: "--duration must be positive, not -1s"},
		{name: "duration and ids", argv: argv("--target a=http://x --out ev --rate 5/1s --duration 1s --ids 3"), err: "give --duration or --ids/--ids-file, not both"},
		{name: "duration and ids file", argv: argv("--target a=http://x --out ev --rate 5/1s --duration 1s --ids-file f"), err: "give --duration or --ids/--ids-file, not both"},
		{name: "rate x duration no request", argv: argv("--target a=http://x --out ev --rate 1/1h --duration 1s"), err: "--rate 1/1h0m0s for --duration 1s is no request"},
		{name: "shard and shard env", argv: argv("--target a=http://x --ids 3 --out ev --shard 1/4 --shard-from-env RLBENCH_TEST_SHARD_INDEX --shards 3"), err: "give --shard K/N or --shard-from-env VAR --shards N, not both"},
		{name: "shard env out of range", argv: argv("--target a=http://x --ids 3 --out ev --shard-from-env RLBENCH_TEST_SHARD_INDEX --shards 3"), err: `--shard-from-env RLBENCH_TEST_SHARD_INDEX="7": want an index 0..2 for --shards 3`},
		{name: "negative warm ahead", argv: argv("--target a=http://x --ids 3 --out ev --warm-ahead -1s"), err: "--warm-ahead must be >= 0, not -1s"},
		{name: "targets file and split", argv: argv("--targets-file t --out ev --split sticky --body x"), err: "--body does not go with --targets-file"},
		// Order: the first concern wins.
		{name: "no out before no ids", argv: argv("--target a=http://x"), err: "--out DIR is required"},
		{name: "ids before transport", argv: argv("--target a=http://x --out ev --http2 --h2c"), err: "give exactly one of --ids N or --ids-file FILE"},
		{name: "transport before shard", argv: argv("--target a=http://x --ids 3 --out ev --cert c --shards 2"), err: "--cert and --key go together"},
		{name: "shard before warm ahead", argv: argv("--target a=http://x --ids 3 --out ev --shards 2 --warm-ahead -1s"), err: "--shard-from-env VAR needs --shards N"},
		{name: "concurrency before targets file flags", argv: argv("--targets-file t --out ev --concurrency -1 --path /x"), err: "--concurrency must be >= 0, not -1"},
	})
}
