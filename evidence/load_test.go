package evidence

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func lines[T any](t *testing.T, vs []T) string {
	t.Helper()
	var b strings.Builder
	for _, v := range vs {
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// odd request lines the scanner leaves to the full decoder: each must load
// exactly as encoding/json decodes it.
var oddRequests = []string{
	`{"ID":"upper-key","target":"proxy-a","code":200,"sent_ns":5,"latency_ns":1}`,
	`{"id":"esc\u0061ped","target":"proxy-b","code":429,"body":"local_rate_limited","sent_ns":6,"latency_ns":1}`,
	`{"id":"esc-body-429","target":"proxy-b","code":429,"body":"local_rate_limited \"x\"","sent_ns":7,"latency_ns":1}`,
	`{"id":"float-ish","target":"proxy-a","code":200,"sent_ns":8,"latency_ns":1,"extra":[1.5e3,{"a":null},true]}`,
	`  {"id":"spaces" , "target" : "proxy-a" , "code" : 500 , "bytes_in" : 0 , "sent_ns" : 9 , "latency_ns" : 1 }  `,
	`{"id":"hdr-case","target":"proxy-a","code":429,"headers":{"X-Envoy-Ratelimited":"true"},"sent_ns":10,"latency_ns":1}`,
	`{"id":"big","target":"proxy-a","code":200,"sent_ns":9223372036854775807,"latency_ns":0}`,
	`{"id":"nul","target":null,"code":200,"sent_ns":11,"latency_ns":1}`,
}

// TestLoadChunksAgreeWithSequentialDecode loads a requests.jsonl of ordinary
// and odd lines, split into many small chunks, and compares every column
// with what a sequential encoding/json decode gives.
func TestLoadChunksAgreeWithSequentialDecode(t *testing.T) {
	old := chunkBytes
	chunkBytes = 397
	defer func() { chunkBytes = old }()
	dir := t.TempDir()
	var want []Request
	var b strings.Builder
	for i := 0; i < 300; i++ {
		r := Request{ID: fmt.Sprintf("id-%03d", i), Target: []string{"proxy-a", "proxy-b"}[i%2], URL: "http://x/", Method: "GET",
			SentNs: int64(1e18) + int64(i), LatencyNs: 1000, Code: []int{200, 429, 500, 0}[i%4], Phase: []string{"", "p1"}[i/150],
			Flow: []string{"", "alice", "bob"}[i%3], Conn: fmt.Sprintf("127.0.0.1:%d/%d", 40000+i%5, i%5+1)}
		if r.Code == 429 {
			r.Body, r.BytesIn = "local_rate_limited", 18
		}
		j, _ := json.Marshal(r)
		b.Write(j)
		b.WriteByte('\n')
		if i%37 == 0 {
			b.WriteString("\n") // blank lines count as lines
		}
		if i%50 == 0 {
			odd := oddRequests[(i/50)%len(oddRequests)]
			odd = strings.Replace(odd, `"id":"`, fmt.Sprintf(`"id":"%d-`, i), 1)
			odd = strings.Replace(odd, `"ID":"`, fmt.Sprintf(`"ID":"%d-`, i), 1)
			b.WriteString(odd + "\n")
			var o Request
			if err := json.Unmarshal([]byte(odd), &o); err != nil {
				t.Fatal(err)
			}
			want = append(want, r, o)
			continue
		}
		want = append(want, r)
	}
	writeFile(t, Dir(dir).Requests(), b.String())
	writeFile(t, Dir(dir).Receipts(), lines(t, []Receipt{{ID: &want[0].ID, RecvNs: want[0].SentNs + 3}, {RecvNs: 4}, {ID: ptr("ghost"), RecvNs: 5}}))
	s := LoadScenario(context.Background(), dir, false)
	var problems []string
	for _, p := range s.Problems {
		if p.File == RequestsFile || p.File == ReceiptsFile {
			problems = append(problems, p.Msg)
		}
	}
	if len(problems) > 0 {
		t.Fatalf("problems %v", problems)
	}
	r := &s.Requests
	if r.Len() != len(want) {
		t.Fatalf("%d requests, want %d", r.Len(), len(want))
	}
	for i, w := range want {
		got := fmt.Sprint(r.IDs.ID(i), r.Targets[r.Target[i]], r.Phases[r.PhaseAt(i)], r.Flows[r.FlowAt(i)], r.ConnOf(i), r.URLOf(i), r.SentNs.At(i), r.EndNs.At(i), r.Code[i], r.Class[i])
		exp := fmt.Sprint(w.ID, w.Target, w.Phase, w.Flow, w.Conn, w.URL, w.SentNs, w.EndNs(), w.Code, w.Classify())
		if got != exp {
			t.Fatalf("request %d: got %s, want %s", i, got, exp)
		}
		if j, ok := r.IDs.Lookup(w.ID); !ok || j != i {
			t.Fatalf("Lookup(%q) = %d %v, want %d", w.ID, j, ok, i)
		}
	}
	rc := &s.Receipts
	if !reflect.DeepEqual(rc.Request, []int32{0, NoID, Phantom}) || !reflect.DeepEqual(rc.PhantomIDs, []string{"ghost"}) ||
		!reflect.DeepEqual(rc.RecvNs.AppendTo(nil), []int64{want[0].SentNs + 3, 4, 5}) {
		t.Fatalf("receipts %+v", rc)
	}
}

func ptr[T any](v T) *T { return &v }

// TestLoadRepeatedIDAcrossChunks: a repeated ID is reported with both lines
// and skipped, wherever the chunk boundaries fall.
func TestLoadRepeatedIDAcrossChunks(t *testing.T) {
	for _, cb := range []int64{64, 200, 16 << 20} {
		old := chunkBytes
		chunkBytes = cb
		dir := t.TempDir()
		reqs := []Request{{ID: "a", Code: 200}, {ID: "b", Code: 200}, {ID: "c", Code: 200}, {ID: "a", Code: 429}, {ID: "d", Code: 200}}
		writeFile(t, Dir(dir).Requests(), lines(t, reqs))
		s := LoadScenario(context.Background(), dir, false)
		chunkBytes = old
		if s.Requests.Len() != 4 || s.Requests.Class[0] != ClassAdmitted {
			t.Fatalf("chunk %d: %d requests", cb, s.Requests.Len())
		}
		want := fmt.Sprintf("%s:4: id %q recorded again (first on line 1)", Dir(dir).Requests(), "a")
		if ps := problemsOf(s, RequestsFile); len(ps) != 1 || ps[0] != want {
			t.Fatalf("chunk %d: problems %+v, want %s", cb, s.Problems, want)
		}
	}
}

// TestLoadTruncatedLastLine: an interrupted writer leaves a last line
// without newline that does not decode; Load keeps the lines before and
// reports the file and line as truncated.
func TestLoadTruncatedLastLine(t *testing.T) {
	dir := t.TempDir()
	full := lines(t, []Request{{ID: "a", Code: 200}, {ID: "b", Code: 200}, {ID: "c", Code: 200}})
	writeFile(t, Dir(dir).Requests(), full[:len(full)-9])
	writeFile(t, Dir(dir).Receipts(), "")
	s := LoadScenario(context.Background(), dir, false)
	if s.Requests.Len() != 2 || !s.HasRequests {
		t.Fatalf("%d requests", s.Requests.Len())
	}
	want := Dir(dir).Requests() + ":3: truncated last line: "
	if ps := problemsOf(s, RequestsFile); len(ps) != 1 || !strings.HasPrefix(ps[0], want) {
		t.Fatalf("problems %+v, want %s...", s.Problems, want)
	}
	// A bad line in the middle stops the read there: later lines are not loaded.
	writeFile(t, Dir(dir).Requests(), `{"id":"a"}`+"\n{bad\n"+`{"id":"c"}`+"\n")
	s = LoadScenario(context.Background(), dir, false)
	if ps := problemsOf(s, RequestsFile); s.Requests.Len() != 1 || len(ps) != 1 || !strings.HasPrefix(ps[0], Dir(dir).Requests()+":2: ") ||
		strings.Contains(ps[0], "truncated") {
		t.Fatalf("%d requests, problems %+v", s.Requests.Len(), s.Problems)
	}
}

// TestLoadMissingFiles: each missing file is a Problem in layout order (or,
// for requests.jsonl, HasRequests false); absent optional files are not.
func TestLoadMissingFiles(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, Dir(dir).Scenario(), `{"schema":"rlbench.scenario/v1","name":"x"}`)
	s := LoadScenario(context.Background(), dir, true)
	if s.HasRequests || !s.HasScenario || s.HasDecisions || s.RLSLog {
		t.Fatalf("%+v", s)
	}
	var files []string
	for _, p := range s.Problems {
		files = append(files, p.File)
	}
	if !reflect.DeepEqual(files, []string{AttackFile, ReceiptsFile}) {
		t.Fatalf("problems %+v", s.Problems)
	}
	if !strings.Contains(s.Problems[0].Msg, "missing (the attack did not finish writing its summary)") {
		t.Fatalf("attack problem %q", s.Problems[0].Msg)
	}
	// In a run directory, scenario.json is required.
	other := t.TempDir()
	writeFile(t, Dir(other).Requests(), "")
	s = LoadScenario(context.Background(), other, true)
	if s.Problems[0].File != ScenarioFile || !strings.Contains(s.Problems[0].Msg, "missing (every scenario of a run has one)") {
		t.Fatalf("problems %+v", s.Problems)
	}
}

// TestLoadRunDirAndScenarioDir: a run directory yields its scenario
// directories relative to it (a NOT_RUN one included, stats/ and rls/ never
// searched) and the manifest's absent ones; a scenario directory alone is ".".
func TestLoadRunDirAndScenarioDir(t *testing.T) {
	run := t.TempDir()
	m := Manifest{Schema: ManifestSchema, ScenarioDirs: []string{"01-a/1", "02-b/1", "03-c/1"}}
	if err := WriteJSONFile(Dir(run).Manifest(), m); err != nil {
		t.Fatal(err)
	}
	a := Dir(filepath.Join(run, "01-a", "1"))
	writeFile(t, a.Scenario(), `{"schema":"rlbench.scenario/v1","name":"a"}`)
	writeFile(t, a.Requests(), lines(t, []Request{{ID: "x", Code: 200}}))
	writeFile(t, a.Path(StatsDir+"/"+ScenarioFile), "{}") // not a scenario: under stats/
	b := Dir(filepath.Join(run, "02-b", "1"))
	if err := WriteNotRun(b, "target unreachable\n"); err != nil {
		t.Fatal(err)
	}
	bundle, err := Load(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	if bundle.Manifest == nil || len(bundle.Scenarios) != 2 || !reflect.DeepEqual(bundle.Missing, []string{"03-c/1"}) {
		t.Fatalf("bundle %+v", bundle)
	}
	s0, s1 := bundle.Scenarios[0], bundle.Scenarios[1]
	if s0.Dir != filepath.Join("01-a", "1") || !s0.InRun || s0.Requests.Len() != 1 || s0.Scenario.Name != "a" {
		t.Fatalf("scenario 0 %+v", s0)
	}
	if s1.Dir != filepath.Join("02-b", "1") || !s1.NotRun || s1.NotRunReason != "target unreachable" {
		t.Fatalf("scenario 1 %+v", s1)
	}
	one, err := Load(context.Background(), string(a))
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Scenarios) != 1 || one.Scenarios[0].Dir != "." || one.Scenarios[0].InRun || one.Manifest != nil {
		t.Fatalf("scenario dir %+v", one)
	}
	// A manifest that does not decode (here cut short) is a Problem of the
	// bundle naming it and its line, not an error: the scenarios found
	// still load, as those of a run.
	writeFile(t, Dir(run).Manifest(), "{\n\"schema\": \"rlbench.manifest/v1\",\n\"scenario_dirs\": [\"01-a/1\",")
	bundle, err = Load(context.Background(), run)
	if err != nil {
		t.Fatalf("truncated manifest: %v", err)
	}
	want := Dir(run).Manifest() + ": line 3: unexpected end of JSON input"
	if bundle.Manifest != nil || len(bundle.Problems) != 1 || bundle.Problems[0].File != ManifestFile || bundle.Problems[0].Msg != want ||
		len(bundle.Scenarios) != 2 || !bundle.Scenarios[0].InRun {
		t.Fatalf("truncated manifest: problems %+v, want %q; %d scenarios", bundle.Problems, want, len(bundle.Scenarios))
	}
	if _, err := Load(context.Background(), a.Scenario()); err == nil {
		t.Fatal("a file is not an evidence directory")
	}
}

// TestDecodeAttackEveryShape: attack.json of v2, of the runner's v1 (with
// phases) and of `rlbench attack`'s v1 (a bare summary) all load.
func TestDecodeAttackEveryShape(t *testing.T) {
	sum := AttackSummary{Schema: AttackSummarySchema, Config: AttackConfig{IDs: 3}, Sent: 3, Recorded: 3, Complete: true, StartNs: 5, EndNs: 9}
	v2, _ := json.Marshal(NewAttack(&sum))
	bare, _ := json.Marshal(sum)
	runnerV1 := `{"schema":"rlbench.attack/v1","complete":false,"interrupted":true,"sent":3,"recorded":3,"start_ns":5,"end_ns":9,"phases":[` + string(bare) + `]}`
	for name, b := range map[string]string{"v2": string(v2), "bare v1": string(bare), "runner v1": runnerV1} {
		a, err := DecodeAttack([]byte(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if a.Sent != 3 || len(a.Phases) != 1 || a.Phases[0].Config.IDs != 3 || a.StartNs != 5 || a.EndNs != 9 {
			t.Fatalf("%s: %+v", name, a)
		}
		if name == "runner v1" && (a.Complete || !a.Interrupted) || name != "runner v1" && !a.Complete {
			t.Fatalf("%s: complete %v interrupted %v", name, a.Complete, a.Interrupted)
		}
	}
	if a := NewAttack(&sum); a.Schema != AttackSchema {
		t.Fatalf("schema %s", a.Schema)
	}
}

// TestLoadRLSMetricsShapes: an RLSMetrics file, a bare RLSCounters (older
// collect) and a broken file.
func TestLoadRLSMetricsShapes(t *testing.T) {
	dir := t.TempDir()
	d := Dir(dir)
	writeFile(t, d.Requests(), "")
	m := RLSMetrics{Schema: RLSMetricsSchema, Label: "before", TimeNs: 7, Process: 1, Counters: &RLSCounters{Keys: map[string]RLSKeyCounters{"d.k": {TotalHits: 2}}}}
	if err := WriteRLSMetrics(d, &m, []byte("# raw\n")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, d.RLSMetrics("after", ".json"), `{"source":"x","keys":{"d.k":{"total_hits":5}}}`)
	writeFile(t, d.RLSMetrics("zz", ".json"), "{\n nope")
	s := LoadScenario(context.Background(), dir, false)
	if len(s.RLSMetrics) != 3 {
		t.Fatalf("%+v", s.RLSMetrics)
	}
	after, before, zz := s.RLSMetrics[0], s.RLSMetrics[1], s.RLSMetrics[2]
	if after.Label != "after" || !after.Stable || after.Counters.Keys["d.k"].TotalHits != 5 {
		t.Fatalf("bare counters %+v", after)
	}
	if before.TimeNs != 7 || before.Counters.Keys["d.k"].TotalHits != 2 {
		t.Fatalf("metrics %+v", before)
	}
	if zz.Label != "zz" || !strings.Contains(zz.Error, d.RLSMetrics("zz", ".json")+": line 2") {
		t.Fatalf("broken %+v", zz)
	}
	if _, err := os.Stat(d.RLSMetrics("before", ".prom")); err != nil {
		t.Fatal(err)
	}
}

func TestStatusLineRoundTrip(t *testing.T) {
	ls := []StatusLine{NewStatusLine("two local buckets", 0, Pass, "ok  (3 checks)"), NewStatusLine("r", 2, NotRun, "incomplete:\nx"),
		NewStatusLine("RLS stopped, deny", 3, Fail, "x"), NewStatusLine(`a "b"#4`, 0, Pass, "y"), NewStatusLine("", 0, NotRun, "z")}
	var b strings.Builder
	if err := WriteStatus(&b, ls); err != nil {
		t.Fatal(err)
	}
	if b.String() != `"two local buckets" PASS ok (3 checks)`+"\nr#2 NOT_RUN incomplete: x\n"+`"RLS stopped, deny"#3 FAIL x`+"\n"+
		`"a \"b\"#4" PASS y`+"\n"+`"" NOT_RUN z`+"\n" {
		t.Fatalf("%q", b.String())
	}
	got, err := ReadStatus(strings.NewReader(b.String()), "status.txt")
	if err != nil || !reflect.DeepEqual(got, ls) {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := ReadStatus(strings.NewReader("a PASS x\nb MAYBE y\n"), "s"); err == nil || !strings.HasPrefix(err.Error(), "s:2: ") {
		t.Fatalf("bad status: %v", err)
	}
	for _, bad := range []string{`"unterminated PASS x`, `"a"x PASS y`, `"a"#0 PASS y`} {
		if _, err := ParseStatusLine(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	// status.txt written before names were quoted still reads, '_' kept.
	old, err := ReadStatus(strings.NewReader("two_local_buckets PASS ok\nshared_RLS#2 FAIL x y\n"), "old")
	if err != nil || len(old) != 2 || old[0].Scenario != "two_local_buckets" || old[1].Scenario != "shared_RLS" || old[1].Repeat != 2 || old[1].Reason != "x y" {
		t.Fatalf("old status.txt: %+v %v", old, err)
	}
}

func problemsOf(s *ScenarioEvidence, file string) []string {
	var out []string
	for _, p := range s.Problems {
		if p.File == file {
			out = append(out, p.Msg)
		}
	}
	return out
}

// TestReceiptsAddKeepsColumnsAligned: receipts added by hand keep one
// x-request-id per receipt once any has one.
func TestReceiptsAddKeepsColumnsAligned(t *testing.T) {
	var reqs Requests
	reqs.Add(&Request{ID: "a", Code: 200})
	var recs Receipts
	recs.Add(&reqs, &Receipt{ID: ptr("a")})
	recs.Add(&reqs, &Receipt{ID: ptr("zz"), Headers: map[string]string{"X-Request-Id": "r2"}})
	recs.Add(&reqs, &Receipt{})
	if !reflect.DeepEqual(recs.XRequestID, []string{"", "r2", ""}) || !reflect.DeepEqual(recs.Request, []int32{0, Phantom, NoID}) ||
		!reflect.DeepEqual(recs.PhantomIDs, []string{"zz"}) {
		t.Fatalf("%+v", recs)
	}
}

// TestLoadRefusesFIFO: a requests.jsonl that is a FIFO (or a device) would
// block the read forever and swallow the first SIGTERM; Load refuses it at
// once, naming the file, and the scenario is incomplete, not PASS.
func TestLoadRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, RequestsFile), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, ScenarioFile), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan *Bundle, 1)
	go func() {
		b, _ := Load(context.Background(), dir)
		done <- b
	}()
	select {
	case b := <-done:
		if b == nil || len(b.Scenarios) != 1 {
			t.Fatalf("bundle %+v", b)
		}
		s := b.Scenarios[0]
		var msgs []string
		for _, p := range s.Problems {
			msgs = append(msgs, p.Msg)
		}
		all := strings.Join(msgs, "\n")
		if !strings.Contains(all, ScenarioFile) || !strings.Contains(all, "FIFO") && !strings.Contains(all, "fifo") && !strings.Contains(all, "not a regular") {
			t.Errorf("problems do not name the FIFO: %q", all)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Load blocked on a FIFO")
	}
}
