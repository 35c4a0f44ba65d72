package evidence

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// harnessScenario writes a minimal scenario directory (scenario.json,
// attack.json, one request and its receipt) with harness.json holding text, or without it
// when text is "".
func harnessScenario(t *testing.T, text string) Dir {
	t.Helper()
	d := Dir(t.TempDir())
	writeFile(t, d.Scenario(), `{"schema":"rlbench.scenario/v1","name":"h"}`)
	writeFile(t, d.Attack(), `{"schema":"rlbench.attack/v2","start_ns":1,"end_ns":100,"sent":1,"complete":true}`)
	writeFile(t, d.Requests(), `{"id":"a","target":"proxy-a","code":200,"sent_ns":5,"latency_ns":1}`+"\n")
	writeFile(t, d.Receipts(), `{"id":"a","recv_ns":6,"method":"GET","path":"/"}`+"\n")
	if text != "" {
		writeFile(t, d.Harness(), text)
	}
	return d
}

// harnessProblems returns the Problems of HarnessFile.
func harnessProblems(s *ScenarioEvidence) []string {
	var out []string
	for _, p := range s.Problems {
		if p.File == HarnessFile {
			out = append(out, p.Msg)
		}
	}
	return out
}

// TestHarnessLoads: harness.json is read into ScenarioEvidence.Harness by
// Load and LoadScenario, field for field.
func TestHarnessLoads(t *testing.T) {
	d := harnessScenario(t, `{"schema":"rlbench.harness/v1","start_ns":1796032800000000000,"end_ns":1796032801000000000,"cpus":2,
"steal_ns":30000000,"load1_start":3.5,"load1_end":16.25,
"probe":{"interval_ns":1000000,"samples":912,"max_late_ns":41000000,"p99_late_ns":2600000,
"stalls":[{"at_ns":1796032800100000000,"late_ns":41000000},{"at_ns":1796032800500000000,"late_ns":2100000}]}}
`)
	want := &Harness{Schema: HarnessSchema, StartNs: 1796032800000000000, EndNs: 1796032801000000000, CPUs: 2, StealNs: 30000000,
		Load1Start: 3.5, Load1End: 16.25, Probe: HarnessProbe{IntervalNs: 1000000, Samples: 912, MaxLateNs: 41000000, P99LateNs: 2600000,
			Stalls: []HarnessStall{{AtNs: 1796032800100000000, LateNs: 41000000}, {AtNs: 1796032800500000000, LateNs: 2100000}}}}
	b, err := Load(context.Background(), string(d))
	if err != nil {
		t.Fatal(err)
	}
	s := b.Scenarios[0]
	if !reflect.DeepEqual(s.Harness, want) || len(harnessProblems(s)) != 0 {
		t.Fatalf("harness %+v, problems %v", s.Harness, s.Problems)
	}
	if s := LoadScenario(context.Background(), string(d), false); !reflect.DeepEqual(s.Harness, want) {
		t.Fatalf("LoadScenario: harness %+v", s.Harness)
	}
}

// TestHarnessAbsentOrMalformed: evidence without harness.json (an earlier
// release's) loads as before with a nil Harness and no problem; a file that
// does not decode, or is of another schema, is a Problem of HarnessFile
// naming the file, and the line where the decoder gives one.
func TestHarnessAbsentOrMalformed(t *testing.T) {
	s := LoadScenario(context.Background(), string(harnessScenario(t, "")), false)
	if s.Harness != nil || len(s.Problems) != 0 {
		t.Fatalf("no harness.json: harness %+v, problems %v", s.Harness, s.Problems)
	}
	for _, c := range []struct{ name, text, want string }{
		{"truncated", `{"schema":"rlbench.harness/v1",` + "\n" + `"start_ns":`, ""},
		{"syntax", `{"schema":"rlbench.harness/v1",` + "\n\n" + `"cpus":2,,}`, "line 3"},
		{"type", `{"schema":"rlbench.harness/v1",` + "\n" + `"steal_ns":"many"}`, "line 2"},
		{"schema", `{"schema":"rlbench.merge/v1","cpus":2}`, `want schema "rlbench.harness/v1"`},
		{"not an object", `[1,2]`, ""},
	} {
		d := harnessScenario(t, c.text)
		s := LoadScenario(context.Background(), string(d), false)
		ps := harnessProblems(s)
		if s.Harness != nil || len(ps) != 1 || !strings.HasPrefix(ps[0], filepath.Join(string(d), HarnessFile)+": ") || !strings.Contains(ps[0], c.want) {
			t.Errorf("%s: harness %+v, problems %q, want one naming %s and %q", c.name, s.Harness, ps, HarnessFile, c.want)
		}
	}
}

// TestHarnessSchemaOf: harness.json is part of the layout, with HarnessSchema.
func TestHarnessSchemaOf(t *testing.T) {
	for _, rel := range []string{HarnessFile, "run/01-a/1/" + HarnessFile} {
		if id, ok := SchemaOf(rel); !ok || id != HarnessSchema {
			t.Errorf("SchemaOf(%q) = %q, %v", rel, id, ok)
		}
	}
}
