package senders

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// fakeSender is a stand-in for `rlbench attack`: it writes its arguments
// to DIR/args (DIR from --out), then acts on the shard it was given:
// shard 1 exits 3 with a message on stderr and writes nothing, shard 2
// exits 0 without attack.json, the others copy $FAKE_ATTACK to
// DIR/attack.json.
const fakeSender = `#!/bin/sh
out=""; shard=""
prev=""
for a in "$@"; do
	case "$prev" in --out) out="$a" ;; --shard) shard="$a" ;; esac
	prev="$a"
done
mkdir -p "$out"
printf '%s\n' "$0" "$@" >"$out/args"
case "$shard" in
1/*) echo "warming" >&2; echo "rlbench: dial tcp: connection refused" >&2; exit 3 ;;
2/*) exit 0 ;;
esac
cp "$FAKE_ATTACK" "$out/attack.json"
`

// TestRunSenders: every sender gets the attack's arguments, its own shard
// K/N, the one start instant and its directory; a sender that exits
// non-zero and one that writes no attack.json are failed senders, named
// with their shard and directory (and the last line of the failing one's
// stderr), while the others' summaries are read.
func TestRunSenders(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "fake-rlbench")
	if err := os.WriteFile(exe, []byte(fakeSender), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := evidence.AttackSummary{Sent: 5, Config: evidence.AttackConfig{IDs: 5}, Complete: true}
	att := filepath.Join(dir, "attack.json")
	if err := evidence.WriteJSONFile(att, evidence.NewAttack(&sum)); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	at := time.Now().Add(time.Hour).Truncate(time.Second)
	res, err := Run(context.Background(), Options{Exe: exe, Args: []string{"--target=b=http://127.0.0.1:1", "--ids=20"}, N: 4, Out: out,
		StartAt: at, Env: []string{"FAKE_ATTACK=" + att}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.StartAt.Equal(at) || len(res.Senders) != 4 {
		t.Fatalf("result %+v", res)
	}
	for k, s := range res.Senders {
		if s.Index != k || s.Dir != SenderDir(out, k) {
			t.Fatalf("sender %d: %+v", k, s)
		}
		args, err := os.ReadFile(filepath.Join(s.Dir, "args"))
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Join([]string{"attack", "--target=b=http://127.0.0.1:1", "--ids=20", "--shard", strconv.Itoa(k) + "/4",
			"--start-at", strconv.FormatInt(at.UnixNano(), 10), "--out", s.Dir, "--quiet"}, "\n")
		if got := strings.SplitN(strings.TrimSpace(string(args)), "\n", 2)[1]; got != want {
			t.Errorf("sender %d: arguments\n%s\nwant\n%s", k, got, want)
		}
		switch k {
		case 1:
			if s.Err == nil || !strings.Contains(s.Err.Error(), "sender 1/4 ("+s.Dir+"): exit status 3: rlbench: dial tcp: connection refused") {
				t.Errorf("sender 1: error %v", s.Err)
			}
		case 2:
			if s.Err == nil || !strings.Contains(s.Err.Error(), "sender 2/4") || !strings.Contains(s.Err.Error(), "no attack.json") || s.Summary != nil {
				t.Errorf("sender 2: error %v, summary %v", s.Err, s.Summary)
			}
		default:
			if s.Err != nil || s.Summary == nil || s.Summary.Sent != 5 {
				t.Errorf("sender %d: error %v, summary %+v", k, s.Err, s.Summary)
			}
		}
	}
	if f := res.Failed(); len(f) != 2 || f[0].Index != 1 || f[1].Index != 2 {
		t.Fatalf("failed %+v", f)
	}
}

// TestRunSendersOptions: no senders, or no executable, is an error before
// anything starts; an executable that cannot start is an error naming
// the sender.
func TestRunSendersOptions(t *testing.T) {
	out := t.TempDir()
	if _, err := Run(context.Background(), Options{Exe: "x", N: 0, Out: out}); err == nil || !strings.Contains(err.Error(), "0 senders") {
		t.Errorf("N 0: %v", err)
	}
	if _, err := Run(context.Background(), Options{N: 2, Out: out}); err == nil || !strings.Contains(err.Error(), "Exe and Out") {
		t.Errorf("no Exe: %v", err)
	}
	if _, err := Run(context.Background(), Options{Exe: filepath.Join(out, "missing"), N: 2, Out: out}); err == nil || !strings.Contains(err.Error(), "start sender 0") {
		t.Errorf("missing Exe: %v", err)
	}
}
