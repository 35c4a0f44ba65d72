package evidence

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// oddStrings are the cases where JSON escaping differs between encoders.
var oddStrings = []string{
	"", "plain", `quote " and \ backslash`, "<script>&amp;</script>", "tab\tnl\ncr\rbs\bff\f",
	"\x00\x01\x1f\x7f", "é ü 漢字 🚀", "\u2028\u2029", "bad \xff\xfe utf8 \xc3", "\xed\xa0\x80 surrogate",
	strings.Repeat("x", 300),
}

func randString(rng *rand.Rand) string {
	if rng.IntN(3) == 0 {
		return oddStrings[rng.IntN(len(oddStrings))]
	}
	n := rng.IntN(40)
	b := make([]byte, n)
	for i := range b {
		switch rng.IntN(4) {
		case 0:
			b[i] = byte(rng.IntN(0x20)) // control
		case 1:
			b[i] = byte(0x80 + rng.IntN(0x80)) // high bytes, often invalid UTF-8
		default:
			b[i] = byte(0x20 + rng.IntN(0x60))
		}
	}
	return string(b)
}

func randRequest(rng *rand.Rand) *Request {
	r := &Request{
		ID: randString(rng), Target: randString(rng), URL: randString(rng), Method: randString(rng),
		SentNs: rng.Int64() - rng.Int64(), LatencyNs: rng.Int64N(1 << 40), Code: rng.IntN(600) - 1,
		BytesIn: rng.Uint64(), Phase: randString(rng), IntendedNs: int64(rng.IntN(3)) * rng.Int64(),
		NotSent: rng.IntN(2) == 0,
	}
	if rng.IntN(2) == 0 {
		r.Flow = randString(rng)
	}
	if rng.IntN(2) == 0 {
		r.Proto = randString(rng)
	}
	if rng.IntN(2) == 0 {
		r.Conn = randString(rng)
	}
	if rng.IntN(2) == 0 {
		r.Error = randString(rng)
	}
	if rng.IntN(2) == 0 {
		r.Body = randString(rng)
	}
	switch rng.IntN(3) {
	case 0:
		r.Headers = map[string]string{} // empty map: omitted like nil
	case 1:
		r.Headers = map[string]string{}
		for range rng.IntN(12) {
			r.Headers[randString(rng)] = randString(rng)
		}
	}
	return r
}

func checkSame(t *testing.T, r *Request) {
	t.Helper()
	want, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got := AppendRequestJSON(nil, r)
	if !bytes.Equal(got, want) {
		t.Fatalf("record %#v\n got %s\nwant %s", r, got, want)
	}
	var back Request
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatalf("output does not decode: %v", err)
	}
}

func TestAppendRequestJSONMatches(t *testing.T) {
	checkSame(t, &Request{})
	checkSame(t, &Request{ID: "a", Headers: map[string]string{"server": "envoy", "x-ratelimit-limit": "10, 10;w=60"}, NotSent: true, IntendedNs: 5})
	rng := rand.New(rand.NewPCG(14, 10))
	for range 5000 {
		checkSame(t, randRequest(rng))
	}
	// Appends to what is there.
	if got := AppendRequestJSON([]byte("x"), &Request{ID: "1"}); !bytes.HasPrefix(got, []byte(`x{"id":"1"`)) {
		t.Fatalf("got %s", got)
	}
}

func TestAppendRequestJSONAllocs(t *testing.T) {
	r := &Request{ID: "req-0001", Target: "proxy-a", URL: "http://127.0.0.1:10000/p", Method: "GET", SentNs: 1, LatencyNs: 2,
		Code: 429, Error: "429 Too Many Requests", BytesIn: 18, Body: "local_rate_limited",
		Headers: map[string]string{"server": "envoy", "x-ratelimit-limit": "10", "x-ratelimit-remaining": "0"}}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = AppendRequestJSON(buf[:0], r) }); n != 0 {
		t.Fatalf("%v allocations per encode, want 0", n)
	}
}

func checkSameReceipt(t *testing.T, rc *Receipt) {
	t.Helper()
	want, err := json.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	if got := AppendReceiptJSON(nil, rc); !bytes.Equal(got, want) {
		t.Fatalf("receipt %#v\n got %s\nwant %s", rc, got, want)
	}
}

func randReceipt(rng *rand.Rand) *Receipt {
	rc := &Receipt{RecvNs: rng.Int64() - rng.Int64(), RecvTime: randString(rng), Method: randString(rng), Path: randString(rng),
		Remote: randString(rng)}
	if rng.IntN(3) > 0 {
		id := randString(rng)
		rc.ID = &id
	}
	pick := func() string {
		if rng.IntN(2) == 0 {
			return ""
		}
		return randString(rng)
	}
	rc.Query, rc.Endpoint, rc.Fault, rc.Replica = pick(), pick(), pick(), pick()
	if rng.IntN(2) == 0 {
		rc.Status = rng.IntN(700) - 1
	}
	if rng.IntN(2) == 0 {
		rc.DelayNs = rng.Int64() - rng.Int64()
	}
	if rng.IntN(2) == 0 {
		rc.Headers = map[string]string{}
		for range rng.IntN(12) {
			rc.Headers[randString(rng)] = randString(rng)
		}
	}
	return rc
}

func TestAppendReceiptJSONMatches(t *testing.T) {
	checkSameReceipt(t, &Receipt{})
	id := "req-1"
	checkSameReceipt(t, &Receipt{ID: &id, RecvNs: 1, RecvTime: "2026-12-01T15:00:00.000000001Z", Method: "GET", Path: "/",
		Remote: "127.0.0.1:5", Headers: map[string]string{"x-envoy-attempt-count": "2"}, Endpoint: "backend-0", Status: 200})
	rng := rand.New(rand.NewPCG(14, 11))
	for range 5000 {
		checkSameReceipt(t, randReceipt(rng))
	}
}

func TestAppendReceiptJSONAllocs(t *testing.T) {
	id := "req-0001"
	rc := &Receipt{ID: &id, RecvNs: 1, RecvTime: "2026-12-01T15:00:00.000000001Z", Method: "GET", Path: "/p", Remote: "127.0.0.1:5",
		Headers: map[string]string{"x-request-id": "abc"}, Endpoint: "backend-0", Status: 200}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = AppendReceiptJSON(buf[:0], rc) }); n != 0 {
		t.Fatalf("%v allocations per encode, want 0", n)
	}
}

func FuzzAppendReceiptJSON(f *testing.F) {
	for _, s := range oddStrings {
		f.Add(s, s, s, int64(1), 200, true)
	}
	f.Fuzz(func(t *testing.T, id, path, hk string, recv int64, status int, hasID bool) {
		rc := &Receipt{RecvNs: recv, RecvTime: path + hk, Method: hk, Path: path, Query: id, Remote: hk, Endpoint: path,
			Status: status, Fault: id, DelayNs: -recv, Replica: hk}
		if hasID {
			rc.ID = &id
		}
		if hk != "" {
			rc.Headers = map[string]string{hk: path, path: id}
		}
		checkSameReceipt(t, rc)
	})
}

func FuzzAppendRequestJSON(f *testing.F) {
	for _, s := range oddStrings {
		f.Add(s, s, s, int64(1), 200, s, s)
	}
	f.Fuzz(func(t *testing.T, id, url, errs string, sent int64, code int, hk, hv string) {
		r := &Request{ID: id, Target: hv, URL: url, Method: hk, SentNs: sent, LatencyNs: -sent, Code: code, Error: errs,
			BytesIn: uint64(sent), Body: hk + hv, Phase: errs, IntendedNs: sent / 3, NotSent: code%2 == 0, Flow: hv, Proto: url}
		if hk != "" {
			r.Headers = map[string]string{hk: hv, hv: id, "server": errs}
		}
		checkSame(t, r)
	})
}

func BenchmarkAppendRequestJSON(b *testing.B) {
	r := &Request{ID: "req-0000001", Target: "proxy-a", URL: "http://127.0.0.1:10000/inventory", Method: "GET", SentNs: 1764580000000000000,
		LatencyNs: 412345, Code: 200, BytesIn: 2, Body: "ok", Headers: map[string]string{"server": "envoy"}, Phase: "burst"}
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 512)
		for b.Loop() {
			buf = AppendRequestJSON(buf[:0], r)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
