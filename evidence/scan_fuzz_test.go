package evidence

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	goccy "github.com/goccy/go-json"
)

// seedLines adds every line of the previous release's evidence files named
// name (analyze/testdata/v1-release) to the corpus.
func seedLines(f *testing.F, name string) {
	paths, _ := filepath.Glob(filepath.Join("..", "analyze", "testdata", "v1-release", "*", "*", "*", name))
	more, _ := filepath.Glob(filepath.Join("..", "analyze", "testdata", "v1-release", "*", name))
	if len(paths)+len(more) == 0 {
		f.Fatalf("no %s under analyze/testdata/v1-release", name)
	}
	for _, p := range append(paths, more...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for n := 0; sc.Scan() && n < 8; n++ {
			f.Add(append([]byte(nil), sc.Bytes()...))
		}
	}
}

// FuzzScanRequest checks the request field scanner against encoding/json
// (and goccy/go-json, the full decoder Load falls back on): whenever the
// scanner accepts a line, both decoders accept it too and give the same
// fields and class.
func FuzzScanRequest(f *testing.F) {
	seedLines(f, RequestsFile)
	for _, s := range oddRequests {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"id":"x","code":429,"headers":{"x-envoy-ratelimited":"true","content-type":"text/plain"},"bytes_in":18}`))
	f.Add([]byte(`{"id":"x","code":-1,"sent_ns":-5,"headers":{}}`))
	// Request's fields the scanner keeps nothing of, with a wrong type or
	// spelled in another case
	f.Add([]byte(`{"id":"x","intended_ns":"5","proto":1}`))
	f.Add([]byte(`{"id":"x","intended_ns":5,"proto":"HTTP/1.1","Intended_NS":6}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var sc reqScan
		if !scanRequest(line, &sc) {
			return
		}
		for name, unmarshal := range map[string]func([]byte, any) error{"encoding/json": json.Unmarshal, "goccy": goccy.Unmarshal} {
			var r Request
			if err := unmarshal(line, &r); err != nil {
				t.Fatalf("scanner accepted %q, %s rejects it: %v", line, name, err)
			}
			if string(sc.id) != r.ID || string(sc.target) != r.Target || string(sc.phase) != r.Phase || sc.sent != r.SentNs ||
				sc.latency != r.LatencyNs || sc.code != int64(r.Code) || sc.bytesIn != r.BytesIn || string(sc.url) != r.URL || string(sc.conn) != r.Conn {
				t.Fatalf("%q: scanner %q %q %q %d %d %d %d %q %q, %s %+v", line, sc.id, sc.target, sc.phase, sc.sent, sc.latency, sc.code, sc.bytesIn, sc.url, sc.conn, name, r)
			}
			gotRate, gotOK := ParseRateHeaders(sc.rateHeaderByName)
			wantRate, wantOK := ParseRateHeaders(r.header)
			if gotOK != wantOK || gotRate != wantRate {
				t.Fatalf("%q: scanner rate-limit headers %v %v, %s %v %v", line, gotRate, gotOK, name, wantRate, wantOK)
			}
			if sc.bodyEsc && needsBody(sc.code, false) {
				continue // Load decodes such a line in full
			}
			if got, want := sc.marks().Classify(), r.Classify(); got != want {
				t.Fatalf("%q: scanner class %s, %s class %s", line, got, name, want)
			}
		}
	})
}

// FuzzScanReceipt is FuzzScanRequest for receipt lines.
func FuzzScanReceipt(f *testing.F) {
	seedLines(f, ReceiptsFile)
	f.Add([]byte(`{"id":null,"recv_ns":1,"headers":{"X-Request-Id":"a"}}`))
	f.Add([]byte(`{"id":"a","recv_ns":1,"headers":{"x-request-id":"r","x-request-id":"s"}}`))
	f.Add([]byte(`{"id":"a","recv_ns":1,"headers":{"x-envoy-attempt-count":"3"},"endpoint":"backend-2","status":503,"fault":"error"}`))
	f.Add([]byte(`{"id":"a","recv_ns":1,"headers":{"X-Envoy-Attempt-Count":"x"},"endpoint":"b\u0031"}`))
	// Receipt's fields the scanner keeps nothing of, with a wrong type or
	// spelled in another case: encoding/json refuses the first
	f.Add([]byte(`{"stAtus":""}`))
	f.Add([]byte(`{"id":"a","recv_ns":1,"status":"503","fault":1,"delay_ns":"5","replica":2}`))
	f.Add([]byte(`{"id":"a","recv_ns":1,"status":503,"fault":"delay","delay_ns":5,"replica":"r1","Delay_Ns":6}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, want := range []bool{false, true} {
			sc := recScan{wantHeader: want}
			if !scanReceipt(line, &sc) {
				continue
			}
			for name, unmarshal := range map[string]func([]byte, any) error{"encoding/json": json.Unmarshal, "goccy": goccy.Unmarshal} {
				var r Receipt
				if err := unmarshal(line, &r); err != nil {
					t.Fatalf("scanner accepted %q, %s rejects it: %v", line, name, err)
				}
				if sc.hasID != (r.ID != nil) || r.ID != nil && string(sc.id) != *r.ID || sc.recv != r.RecvNs {
					t.Fatalf("%q: scanner %v %q %d, %s %+v", line, sc.hasID, sc.id, sc.recv, name, r)
				}
				if want && string(sc.xrid) != xRequestID(r.Headers) {
					t.Fatalf("%q: scanner x-request-id %q, %s %q", line, sc.xrid, name, xRequestID(r.Headers))
				}
				if string(sc.endpoint) != r.Endpoint || sc.attempt != attemptCount(r.Headers) {
					t.Fatalf("%q: scanner endpoint %q attempt %d, %s %q %d", line, sc.endpoint, sc.attempt, name, r.Endpoint, attemptCount(r.Headers))
				}
			}
		}
	})
}

// FuzzReadStatus: a status.txt that parses writes back to the same lines.
func FuzzReadStatus(f *testing.F) {
	for _, p := range []string{"e06.status.txt", "manual.status.txt"} {
		b, err := os.ReadFile(filepath.Join("..", "analyze", "testdata", "v1-release", p))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		ls, err := ReadStatus(bytes.NewReader([]byte(s)), "status.txt")
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := WriteStatus(&b, ls); err != nil {
			t.Fatal(err)
		}
		again, err := ReadStatus(&b, "again")
		if err != nil || len(again) != len(ls) {
			t.Fatalf("%q: rewritten %q does not read back: %v", s, b.String(), err)
		}
		for i := range ls {
			if again[i] != ls[i] {
				t.Fatalf("%q: line %d %+v became %+v", s, i, ls[i], again[i])
			}
		}
	})
}

// FuzzDecodeAttack: attack.json in any shape either decodes or errors, and
// a decoded file's totals are its own (no panic on odd shapes).
func FuzzDecodeAttack(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "analyze", "testdata", "v1-release", "*", "*", "*", AttackFile))
	bare, _ := filepath.Glob(filepath.Join("..", "analyze", "testdata", "v1-release", "*", AttackFile))
	for _, p := range append(paths, bare...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		// every release's attack.json has counts that agree (issue 27)
		if _, err := DecodeAttack(b); err != nil {
			f.Fatalf("%s: %v", p, err)
		}
	}
	// issue 27: negative and contradictory counts
	f.Add([]byte(`{"complete":true,"sent":-1}`))
	f.Add([]byte(`{"schema":"rlbench.attack/v1","config":{"ids":2},"sent":3,"codes_by_target":{"a":{"200":4}}}`))
	f.Add([]byte(`{"sent":9223372036854775807,"phases":[{"sent":9223372036854775807},{"sent":9223372036854775807,"shard":{"count":-1}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAttack(b)
		var ce *CountError
		if errors.As(err, &ce) {
			if a == nil || len(ce.Fields) == 0 {
				t.Fatalf("count error %v without the attack or a field", err)
			}
			return
		}
		if err != nil {
			return
		}
		if a == nil {
			t.Fatal("nil attack without error")
		}
		if a.Sent < 0 || a.Recorded < 0 {
			t.Fatalf("negative totals accepted: %+v", a)
		}
		for _, p := range a.Phases {
			if p.Sent < 0 || p.NotSent > p.Sent || p.Recorded > p.Sent || p.Config.IDs > 0 && p.Sent > p.Config.IDs {
				t.Fatalf("contradictory phase accepted: %+v", p)
			}
		}
	})
}

// FuzzLoadRequests loads a requests.jsonl split into chunks of a few dozen
// bytes and compares the result with a plain sequential read (ReadLines):
// the same requests in the same order, the same repeated-ID problems and the
// same stopping error.
func FuzzLoadRequests(f *testing.F) {
	for _, p := range []string{"e06/02-shared-rls/1", "manual/02-truncated/1", "bare"} {
		b, err := os.ReadFile(filepath.Join("..", "analyze", "testdata", "v1-release", p, RequestsFile))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 2000)], uint8(40))
	}
	f.Add([]byte("{\"id\":\"a\"}\n\n{\"id\":\"a\"}\n{\"id\":\"b\",\"code\":429}\n{bad\n{\"id\":\"c\"}\n"), uint8(7))
	f.Fuzz(func(t *testing.T, content []byte, chunk uint8) {
		dir := t.TempDir()
		path := Dir(dir).Requests()
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		old := chunkBytes
		chunkBytes = int64(chunk%64) + 1
		var got Requests
		gotProblems, gotErrs := readRequests(context.Background(), path, nil, false, &got, &Receipts{}, Dir(dir).Receipts(), clockChecks{attackNotSent: -1})
		chunkBytes = old

		var want Requests
		var wantProblems []Problem
		first := map[string]int{}
		wantErr := ReadFile(path, func(line int, r *Request) error {
			if r.ID == "" {
				return &LineError{File: path, Line: line, Err: errors.New("request without id")}
			}
			if err := requestTimesError(r.SentNs, r.LatencyNs); err != nil {
				return &LineError{File: path, Line: line, Err: err}
			}
			if err := requestCodeError(int64(r.Code)); err != nil {
				return &LineError{File: path, Line: line, Err: err}
			}
			if prev, ok := first[r.ID]; ok {
				wantProblems = append(wantProblems, Problem{File: RequestsFile, Msg: fmt.Sprintf("%s:%d: id %q recorded again (first on line %d)", path, line, r.ID, prev)})
				return nil
			}
			first[r.ID] = line
			want.Add(r)
			return nil
		})
		if fmt.Sprint(gotErrs.requests) != fmt.Sprint(wantErr) {
			t.Fatalf("error %v, sequential read %v", gotErrs.requests, wantErr)
		}
		if fmt.Sprint(gotProblems) != fmt.Sprint(wantProblems) {
			t.Fatalf("problems %v, sequential read %v", gotProblems, wantProblems)
		}
		if got.Len() != want.Len() {
			t.Fatalf("%d requests, sequential read %d", got.Len(), want.Len())
		}
		for i := 0; i < got.Len(); i++ {
			g := fmt.Sprint(got.IDs.ID(i), got.Targets[got.Target[i]], got.Phases[got.PhaseAt(i)], got.URLOf(i), got.ConnOf(i), got.SentNs.At(i), got.EndNs.At(i), got.Code[i], got.Class[i])
			w := fmt.Sprint(want.IDs.ID(i), want.Targets[want.Target[i]], want.Phases[want.PhaseAt(i)], want.URLOf(i), want.ConnOf(i), want.SentNs.At(i), want.EndNs.At(i), want.Code[i], want.Class[i])
			if g != w {
				t.Fatalf("request %d: %s, sequential read %s", i, g, w)
			}
		}
		if fmt.Sprint(got.NotSent) != fmt.Sprint(want.NotSent) {
			t.Fatalf("not sent %v, sequential read %v", got.NotSent, want.NotSent)
		}
		if fmt.Sprint(got.Rate) != fmt.Sprint(want.Rate) {
			t.Fatalf("rate-limit headers %v, sequential read %v", got.Rate, want.Rate)
		}
	})
}
