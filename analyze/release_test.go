package analyze

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/analyze/report"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/schemas"
)

// The deliberate differences from the previous release's reports (issue 9),
// the only ones TestPreviousReleaseEvidence accepts:
//   - each limiter's model check (checks "limiter <name>: ...") replaces
//     "admitted within configured bound", which only bounded admissions from
//     above and was switched off by any fault;
//   - new checks of the limits' engagement, fail-open admissions against the
//     fault windows, not_limited, shadow counts and rate-limit headers;
//   - a scenario that asks nothing is NOT_RUN "nothing to check", never PASS:
//     the bare `rlbench attack` directory (no scenario.json) PASSed with the
//     receipt integrity checks alone;
//   - on incomplete evidence (the truncated requests.jsonl) the model check
//     is inconclusive: one more "inconclusive: limiter ..." reason;
//   - "receipts = admitted" says what it counted when the IDs hold more
//     receipts than IDs (issue 21): the tampered receipts' re-send (gotChanges);
//   - after a cut client record (the truncated requests.jsonl), a receipt of
//     an ID of the plan's ID set that the record lacks has its sent status
//     unknown, no longer phantom (issue 27): its own check and reason
//     "receipts with sent status unknown (client record cut)" (sentUnknown).
var (
	// sentUnknown maps "<case>/<scenario dir>" to the previous release's
	// phantom receipts now of sent status unknown (all of its phantoms).
	sentUnknown = map[string]string{"manual/02-truncated/1": "20261201T091558Z-1-s1r1-attack-14"}

	// gotChanges maps "<case>/<scenario dir>/<check name>" to the check's
	// new got text (want and status unchanged).
	gotChanges         = map[string]string{"manual/05-tampered/1/receipts = admitted": "10 IDs with receipts (11 receipts: 1 client re-send)"}
	removedChecks      = map[string]bool{"admitted within configured bound": true}
	addedCheckPrefixes = []string{"limiter ", "limit engaged", "limit never engaged", "fail-open admissions", "leak: ", "not limited", "shadow",
		"rate-limit headers", "receipts with sent status unknown (client record cut)"}
	addedReasonPrefixes = []string{"inconclusive: limiter ", "inconclusive: receipts with sent status unknown (client record cut): "}
	// statusChanges maps "<case>/<scenario dir>" to the reason of the
	// NOT_RUN that replaces the previous release's verdict.
	statusChanges = map[string]string{"bare/.": "nothing to check: no scenario.json (no expectation, no configured limit): give --expect-admitted N or --intended-limit N, or declare expect, intended_limit or limiters in scenario.json (in a plan: a scenario's expect, intended_limit, lab.local or lab.global)"}
)

func addedCheck(name string) bool {
	for _, p := range addedCheckPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// compareScenario checks the deliberate differences of one scenario and
// removes checks, reasons and statuses from both maps, so that the rest can
// be compared as it is.
func compareScenario(t *testing.T, key string, got, old map[string]any) {
	t.Helper()
	gs, ost := got["status"].(string), old["status"].(string)
	if why, ok := statusChanges[key]; ok {
		if gs != evidence.NotRun || !reflect.DeepEqual(got["reasons"], []any{why}) {
			t.Errorf("%s: status %s reasons %v, want NOT_RUN %q", key, gs, got["reasons"], why)
		}
		for _, k := range []string{"checks", "reasons", "status"} {
			delete(got, k)
			delete(old, k)
		}
		return
	}
	if gs != ost {
		t.Errorf("%s: status %s, previous release %s", key, gs, ost)
	}
	if id, ok := sentUnknown[key]; ok {
		unPhantom(t, key, old, id)
	}
	oc, gc := checksOf(old), checksOf(got)
	seen := map[string]bool{}
	for _, c := range gc {
		name := c["name"].(string)
		seen[name] = true
		if prev, ok := findCheck(oc, name); ok {
			if now, ok := gotChanges[key+"/"+name]; ok && c["got"] == now {
				prev["got"] = now
			}
			if !reflect.DeepEqual(prev, c) {
				t.Errorf("%s: check %q %v, previous release %v", key, name, c, prev)
			}
			continue
		}
		if !addedCheck(name) {
			t.Errorf("%s: check %q is new and not a deliberate addition", key, name)
		}
		if ost == evidence.Pass && c["status"] != report.CheckPass {
			t.Errorf("%s: new check %v does not pass on evidence that PASSed", key, c)
		}
	}
	for _, c := range oc {
		if name := c["name"].(string); !seen[name] && !removedChecks[name] {
			t.Errorf("%s: check %q of the previous release is gone", key, name)
		}
	}
	or, gr := stringsOf(old["reasons"]), stringsOf(got["reasons"])
	j := 0
	for _, r := range gr {
		if j < len(or) && r == or[j] {
			j++
			continue
		}
		ok := false
		for _, p := range addedReasonPrefixes {
			ok = ok || strings.HasPrefix(r, p)
		}
		if !ok {
			t.Errorf("%s: reason %q is new and not a deliberate addition", key, r)
		}
	}
	if j != len(or) {
		t.Errorf("%s: reasons %q lack the previous release's %q", key, gr, or)
	}
	for _, k := range []string{"checks", "reasons"} {
		delete(got, k)
		delete(old, k)
	}
}

// unPhantom rewrites the previous release's scenario report old, whose one
// phantom receipt was of id, as it is now that id's sent status is unknown:
// no phantom (count, IDs, check and reason); the new check and reason are
// deliberate additions, the new receipts fields are added since.
func unPhantom(t *testing.T, key string, old map[string]any, id string) {
	t.Helper()
	rc := old["receipts"].(map[string]any)
	if rc["phantom"] != float64(1) || !reflect.DeepEqual(rc["phantom_ids"], []any{id}) {
		t.Fatalf("%s: previous release's receipts %v, want the one phantom %s", key, rc, id)
	}
	rc["phantom"], rc["phantom_ids"] = float64(0), []any{}
	c, ok := findCheck(checksOf(old), "phantom receipts (never sent)")
	if !ok {
		t.Fatalf("%s: no phantom check in the previous release's report", key)
	}
	c["status"], c["got"] = report.CheckPass, "0"
	var reasons []any
	for _, r := range stringsOf(old["reasons"]) {
		if r != "phantom receipts (never sent): want 0, got 1 ("+id+")" {
			reasons = append(reasons, r)
		}
	}
	old["reasons"] = reasons
}

func checksOf(m map[string]any) []map[string]any {
	var out []map[string]any
	for _, c := range m["checks"].([]any) {
		out = append(out, c.(map[string]any))
	}
	return out
}

func findCheck(cs []map[string]any, name string) (map[string]any, bool) {
	for _, c := range cs {
		if c["name"] == name {
			return c, true
		}
	}
	return nil, false
}

func stringsOf(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

// TestPreviousReleaseEvidence analyses evidence written by the previous
// release (testdata/v1-release: `rlbench demo`, `rlbench run
// examples/e06/plan.yaml`, two scenarios of examples/real-rls, a bare
// `rlbench attack` directory and a hand-made run directory with a default
// format access log, a truncated requests.jsonl, a NOT_RUN marker, a scenario
// the manifest lists but that is absent, tampered receipts and stats, and a
// real RLS log collected by `rlbench collect rls-log`) and compares the JSON
// report with the one that release produced (<name>.report.json, written by
// `rlbench analyze --format json`), ignoring only generated_at and fields
// added since, and status.txt with <name>.status.txt.
func TestPreviousReleaseEvidence(t *testing.T) {
	base := filepath.Join("testdata", "v1-release")
	five := 5
	cases := []struct {
		name, report string
		opts         Options
	}{
		{"e06", "e06", Options{}},
		{"demo", "demo", Options{}},
		{"real-rls", "real-rls", Options{}},
		{"manual", "manual", Options{}},
		{"bare", "bare", Options{}},
		{"bare", "bare.overrides", Options{Admitted: &evidence.Range{Min: 10, Max: 12}, IntendedLimit: &five}},
	}
	for _, c := range cases {
		t.Run(c.report, func(t *testing.T) {
			rep, err := Analyze(context.Background(), filepath.Join(base, c.name), c.opts)
			must(t, err)
			var got bytes.Buffer
			must(t, report.WriteJSON(&got, rep))
			want, err := os.ReadFile(filepath.Join(base, c.report+".report.json"))
			must(t, err)
			var gm, om map[string]any
			must(t, json.Unmarshal(got.Bytes(), &gm))
			must(t, json.Unmarshal(want, &om))
			// The previous release's report validates against the schema it
			// published (frozen), and its version is the one deliberate
			// difference of the envelope.
			if err := schemas.Validate(schemas.ReportV1, want); err != nil {
				t.Errorf("previous release's report does not match %s: %v", schemas.ReportV1, err)
			}
			if om["schema"] != "rlbench.report/v1" || gm["schema"] != report.ReportSchema {
				t.Errorf("schema %v, previous %v", gm["schema"], om["schema"])
			}
			om["schema"] = report.ReportSchema
			gsc, osc := gm["scenarios"].([]any), om["scenarios"].([]any)
			if len(gsc) != len(osc) {
				t.Fatalf("%d scenarios, previous release %d", len(gsc), len(osc))
			}
			for i := range gsc {
				g, o := gsc[i].(map[string]any), osc[i].(map[string]any)
				key := c.report + "/" + g["dir"].(string)
				if _, changed := statusChanges[key]; changed {
					// the verdict moves; its group and the run follow it
					om["status"] = evidence.NotRun
					for _, gr := range om["groups"].([]any) {
						if gr.(map[string]any)["name"] == o["name"] {
							gr.(map[string]any)["status"] = evidence.NotRun
						}
					}
				}
				compareScenario(t, key, g, o)
			}
			gb, _ := json.Marshal(gm)
			ob, _ := json.Marshal(om)
			if g, w := normalise(t, gb, ob), normalise(t, ob, nil); g != w {
				t.Fatalf("report differs from the previous release's:\n%s", firstDiff(g, w))
			}
			if c.opts.Admitted != nil {
				return
			}
			wantStatus, err := os.ReadFile(filepath.Join(base, c.name+".status.txt"))
			must(t, err)
			// That release wrote spaces in names as '_'; names are now
			// quoted instead. Its file still reads, and every line matches.
			old, err := evidence.ReadStatus(bytes.NewReader(wantStatus), c.name+".status.txt")
			must(t, err)
			var st bytes.Buffer
			must(t, report.WriteStatus(&st, rep))
			now, err := evidence.ReadStatus(&st, "status.txt")
			must(t, err)
			if len(now) != len(old) {
				t.Fatalf("status.txt has %d lines, the previous release's %d", len(now), len(old))
			}
			for i := range now {
				l := now[i]
				l.Scenario = strings.ReplaceAll(l.Scenario, " ", "_")
				// more checks now: the count in "(N checks passed)" grows
				l.Reason = checksPassedRE.ReplaceAllString(l.Reason, "(N checks passed)")
				old[i].Reason = checksPassedRE.ReplaceAllString(old[i].Reason, "(N checks passed)")
				if why, ok := statusChanges[c.name+"/"+rep.Scenarios[i].Dir]; ok {
					old[i].Status, old[i].Reason = evidence.NotRun, why
				}
				if l.Status != evidence.Pass && l.Status == old[i].Status {
					// the reasons of a FAIL or NOT_RUN are compared in the report above
					l.Reason = old[i].Reason
				}
				if l != old[i] {
					t.Errorf("status.txt line %d: %+v, previous release %+v", i+1, now[i], old[i])
				}
			}
		})
	}
}

var checksPassedRE = regexp.MustCompile(`\(\d+ checks passed\)`)

// normalise re-indents a report with generated_at removed. With old (the
// previous release's report), fields the old report lacks are removed too:
// new fields are additive, every old one must keep its value.
func normalise(t *testing.T, b, old []byte) string {
	t.Helper()
	var m map[string]any
	must(t, json.Unmarshal(b, &m))
	if old != nil {
		var o map[string]any
		must(t, json.Unmarshal(old, &o))
		dropAdded(m, o)
	}
	delete(m, "generated_at")
	out, err := json.MarshalIndent(m, "", " ")
	must(t, err)
	return string(out)
}

// dropAdded removes from got the object members old does not have, at any depth.
func dropAdded(got, old any) {
	switch g := got.(type) {
	case map[string]any:
		o, ok := old.(map[string]any)
		if !ok {
			return
		}
		for k, v := range g {
			ov, ok := o[k]
			if !ok {
				delete(g, k)
				continue
			}
			dropAdded(v, ov)
		}
	case []any:
		o, ok := old.([]any)
		if !ok {
			return
		}
		for i := range min(len(g), len(o)) {
			dropAdded(g[i], o[i])
		}
	}
}

// firstDiff shows the first differing line of two texts with some context.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			lo := max(0, i-8)
			return "line " + itoa(i+1) + "\nwant context:\n" + strings.Join(w[lo:min(len(w), i+3)], "\n") +
				"\ngot:  " + gl + "\nwant: " + wl
		}
	}
	return ""
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
