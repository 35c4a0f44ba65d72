package evidence

import (
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// TestStatsSnapshotLabelMatchesName: a before snapshot saved as
// <proxy>.after.json (its "label" says "before") was read as the after
// snapshot and the scenario PASSed. A label or proxy other than the file
// name's is an error naming the file and line; matching and absent ones
// (older files) read.
func TestStatsSnapshotLabelMatchesName(t *testing.T) {
	d := Dir(t.TempDir())
	write := func(proxy, label string, s envoyrec.Snapshot) {
		t.Helper()
		s.Schema = envoyrec.SnapshotSchema
		if err := WriteJSONFile(d.StatsSnapshot(proxy, label, ".json"), s); err != nil {
			t.Fatal(err)
		}
	}
	write("p", LabelBefore, envoyrec.Snapshot{Proxy: "p", Label: LabelBefore})
	write("p", LabelAfter, envoyrec.Snapshot{Proxy: "p", Label: LabelBefore})
	write("q", LabelBefore, envoyrec.Snapshot{})
	write("q", LabelAfter, envoyrec.Snapshot{Proxy: "p", Label: LabelAfter})
	snaps, problems := readStats(d, nil, nil)
	if len(snaps) != 2 || len(problems) != 0 {
		t.Fatalf("%+v %v", snaps, problems)
	}
	p, q := snaps[0], snaps[1]
	if p.Before == nil || p.BeforeErr != "" || q.Before == nil || q.BeforeErr != "" {
		t.Fatalf("matching or absent names refused: %+v %+v", p, q)
	}
	if want := d.StatsSnapshot("p", LabelAfter, ".json") + `: line 4: label "before", but the file name says "after"`; p.After != nil || !strings.Contains(p.AfterErr, want) {
		t.Fatalf("after %+v: %q, want %q", p.After, p.AfterErr, want)
	}
	if want := `: line 3: proxy "p", but the file name says "q"`; q.After != nil || !strings.Contains(q.AfterErr, want) {
		t.Fatalf("after %+v: %q, want %q", q.After, q.AfterErr, want)
	}
}
