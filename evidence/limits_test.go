package evidence

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// manifestDirs returns n scenario directory names of one scenario's repeats.
func manifestDirs(n int) []string {
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = fmt.Sprintf("01-x/%d", i+1)
	}
	return dirs
}

// TestLoadRefusesManifestOverCap: a manifest.json listing more than
// MaxRunScenarios scenario directories is an error naming the file, the
// field and the cap; at the cap every absent directory is Missing, in the
// manifest's order, without reading any of them.
func TestLoadRefusesManifestOverCap(t *testing.T) {
	run := t.TempDir()
	a := Dir(filepath.Join(run, "01-x", "2"))
	if err := WriteNotRun(a, "target unreachable"); err != nil {
		t.Fatal(err)
	}
	dirs := manifestDirs(MaxRunScenarios)
	if err := WriteJSONFile(Dir(run).Manifest(), Manifest{Schema: ManifestSchema, ScenarioDirs: dirs}); err != nil {
		t.Fatal(err)
	}
	b, err := Load(context.Background(), run)
	if err != nil {
		t.Fatalf("at the cap: %v", err)
	}
	want := append([]string{dirs[0]}, dirs[2:]...)
	if len(b.Scenarios) != 1 || !b.Scenarios[0].NotRun || !reflect.DeepEqual(b.Missing, want) {
		t.Fatalf("at the cap: %d scenarios, %d missing (first %v)", len(b.Scenarios), len(b.Missing), b.Missing[:min(3, len(b.Missing))])
	}

	if err := WriteJSONFile(Dir(run).Manifest(), Manifest{Schema: ManifestSchema, ScenarioDirs: manifestDirs(MaxRunScenarios + 1)}); err != nil {
		t.Fatal(err)
	}
	_, err = Load(context.Background(), run)
	wantErr := Dir(run).Manifest() + ": scenario_dirs: more than 10000 scenario directories (10001), the most one run has"
	if err == nil || err.Error() != wantErr {
		t.Fatalf("over the cap: got %v, want %q", err, wantErr)
	}
}

// TestLoadRefusesTooManyScenarioDirs: more scenario directories than the
// walk's cap (MaxRunScenarios; 3 here) below a directory without a
// manifest is an error naming it; at the cap they all load.
func TestLoadRefusesTooManyScenarioDirs(t *testing.T) {
	old := walkCap
	walkCap = 3
	defer func() { walkCap = old }()
	root := t.TempDir()
	for i := range 4 {
		d := filepath.Join(root, fmt.Sprintf("r%d", i/3), fmt.Sprintf("s%d", i))
		if err := WriteNotRun(Dir(d), "not run"); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Load(context.Background(), root)
	want := root + ": more than 3 scenario directories below it, the most one run has (analyze each run directory on its own)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	b, err := Load(context.Background(), filepath.Join(root, "r0"))
	if err != nil || len(b.Scenarios) != 3 {
		t.Fatalf("at the cap: %v", err)
	}
	if walkCap = old; walkCap != MaxRunScenarios {
		t.Fatalf("the walk's cap is %d, not MaxRunScenarios", walkCap)
	}
}

// TestDecodeScenarioProxiesCap: MaxScenarioProxies proxies decode; one more
// is an error naming the field's line and the cap, decided before the
// names are decoded (a later type error is not reached).
func TestDecodeScenarioProxiesCap(t *testing.T) {
	doc := func(n int, extra string) []byte {
		var b strings.Builder
		b.WriteString("{\n\"schema\": \"rlbench.scenario/v1\",\n\"name\": \"x\",\n\"proxies\": [")
		for i := range n {
			if i > 0 {
				b.WriteString(",\n")
			}
			fmt.Fprintf(&b, "%q", fmt.Sprintf("p%d", i))
		}
		b.WriteString(extra + "]\n}\n")
		return []byte(b.String())
	}
	sc, err := DecodeScenario(doc(MaxScenarioProxies, ""))
	if err != nil || len(sc.Proxies) != MaxScenarioProxies || sc.Proxies[MaxScenarioProxies-1] != "p9999" {
		t.Fatalf("at the cap: %d proxies, %v", len(sc.Proxies), err)
	}
	_, err = DecodeScenario(doc(MaxScenarioProxies+1, `, {"not": "a name"}`))
	want := "line 4: proxies: more than 10000 proxies, the most one scenario has"
	if err == nil || err.Error() != want {
		t.Fatalf("over the cap: got %v, want %q", err, want)
	}
	// Through Load, the scenario is NOT_RUN with a Problem naming the file.
	d := Dir(t.TempDir())
	writeFile(t, d.Scenario(), string(doc(MaxScenarioProxies+1, "")))
	s := LoadScenario(context.Background(), string(d), false)
	if s.HasScenario || len(s.Problems) == 0 || s.Problems[0].Msg != d.Scenario()+": "+want {
		t.Fatalf("loaded: %+v", s.Problems)
	}
}

// TestReadStatsProxiesCap: more than MaxScenarioProxies proxies to read
// stats snapshots of is a Problem naming stats/ and the cap; none is read.
// At the cap each is read (here: each missing).
func TestReadStatsProxiesCap(t *testing.T) {
	d := Dir(t.TempDir())
	writeFile(t, d.StatsSnapshot("p0", LabelBefore, ".json"), "{}")
	names := make([]string, MaxScenarioProxies)
	for i := range names {
		names[i] = fmt.Sprintf("p%d", i)
	}
	snaps, problems := readStats(d, names, nil)
	if len(snaps) != MaxScenarioProxies || len(problems) != 0 || snaps[0].BeforeErr == "" || snaps[1].AfterErr == "" {
		t.Fatalf("at the cap: %d snapshots, problems %+v", len(snaps), problems)
	}
	snaps, problems = readStats(d, append(names[1:], "q1"), nil) // and p0 from its file: 10001
	want := d.Stats() + " and scenario.json proxies: more than 10000 proxies, the most one scenario has"
	if len(snaps) != 0 || len(problems) != 1 || problems[0].File != StatsDir || problems[0].Msg != want {
		t.Fatalf("got %d snapshots, problems %+v; want %q", len(snaps), problems, want)
	}
}

// TestLineCounterAgreesWithLineAt: the incremental line count scanKeys
// uses gives lineAt's line for offsets in increasing order, and for an
// offset before the last one asked.
func TestLineCounterAgreesWithLineAt(t *testing.T) {
	b := []byte("{\n\"a\": 1,\n\n\"b\": [\n2,\n3],\r\n\"c\": {}\n}")
	c := &lineCounter{b: b}
	for _, off := range []int{-1, 0, 1, 2, 5, 9, 10, 11, 17, 17, 25, len(b), len(b) + 5, 3, 12} {
		if got, want := c.at(off), lineAt(b, off); got != want {
			t.Fatalf("offset %d: line %d, lineAt says %d", off, got, want)
		}
	}
}

// TestScanKeysLinesManyKeys: with many keys on many lines, each key's line
// is its own (the counter moves forward only).
func TestScanKeysLinesManyKeys(t *testing.T) {
	var b strings.Builder
	b.WriteString("{\n\"limiters\": [\n")
	const n = 2000
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(`{"name": "l"}`)
	}
	b.WriteString("\n],\n\"name\": \"x\"\n}\n")
	k, err := scanKeys([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 999, n - 1} {
		if got := k.lines[fmt.Sprintf("limiters[%d].name", i)]; got != 3+i {
			t.Fatalf("limiters[%d].name on line %d, want %d", i, got, 3+i)
		}
	}
	if got := k.lines["name"]; got != n+4 {
		t.Fatalf("name on line %d, want %d", got, n+4)
	}
}
