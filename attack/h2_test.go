package attack

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/rlbench/rlbench/evidence"
)

// h2Recorder is an HTTP/2 test backend (TLS with ALPN h2, or h2c with
// prior knowledge) that counts each ID and the streams open at once on
// each connection.
type h2Recorder struct {
	*httptest.Server
	mu        sync.Mutex
	seen      map[string]int
	proto     map[string]int
	active    map[string]int // remote addr -> streams in the handler now
	maxActive int
	remotes   map[string]bool
	hold      func() // called in the handler, outside the lock
}

func newH2Recorder(t *testing.T, tlsOn bool, maxStreams int, hold func()) *h2Recorder {
	h := &h2Recorder{seen: map[string]int{}, proto: map[string]int{}, active: map[string]int{}, remotes: map[string]bool{}, hold: hold}
	h.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen[r.Header.Get(evidence.IDHeader)]++
		h.proto[r.Proto]++
		h.remotes[r.RemoteAddr] = true
		h.active[r.RemoteAddr]++
		h.maxActive = max(h.maxActive, h.active[r.RemoteAddr])
		h.mu.Unlock()
		if h.hold != nil {
			h.hold()
		}
		h.mu.Lock()
		h.active[r.RemoteAddr]--
		h.mu.Unlock()
		io.WriteString(w, "h2")
	}))
	h.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: maxStreams}
	if tlsOn {
		h.EnableHTTP2 = true
		h.StartTLS()
	} else {
		h.Config.Protocols = new(http.Protocols)
		h.Config.Protocols.SetHTTP1(true)
		h.Config.Protocols.SetUnencryptedHTTP2(true)
		h.Start()
	}
	t.Cleanup(h.Close)
	return h
}

func (h *h2Recorder) tlsConfig() *tls.Config {
	return h.Client().Transport.(*http.Transport).TLSClientConfig
}

// TestRunH2: bursts and paced attacks over HTTP/2 with TLS (ALPN h2) and
// cleartext (h2c): every request arrives once over HTTP/2 and every line
// says HTTP/2.0.
func TestRunH2(t *testing.T) {
	for _, proto := range []string{ProtoH2, ProtoH2C} {
		t.Run(proto, func(t *testing.T) {
			h := newH2Recorder(t, proto == ProtoH2, 0, nil)
			o := Options{Targets: []Target{{Name: "s", URL: h.URL}}, Protocol: proto, TLSConfig: h.tlsConfig()}
			o.Flows = []Flow{{Name: "burst", IDs: IDs(40, "b")}, {Name: "paced", IDs: IDs(30, "p"), Rate: vegeta.Rate{Freq: 300, Per: time.Second}},
				{Name: "post", IDs: IDs(5, "x"), Method: "POST", Body: []byte("body"), Concurrency: 2}}
			sum, err, lines := runToLines(t, context.Background(), o)
			if err != nil || !sum.Complete || len(lines) != 75 || sum.CodesByTarget["s"]["200"] != 75 {
				t.Fatalf("err %v summary %+v", err, sum)
			}
			for _, l := range lines {
				if l.Proto != "HTTP/2.0" || l.Body != "h2" || l.Code != 200 {
					t.Errorf("line %+v", l)
				}
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.seen) != 75 || h.proto["HTTP/2.0"] != 75 {
				t.Fatalf("server saw %d IDs, protos %v", len(h.seen), h.proto)
			}
			for id, n := range h.seen {
				if n != 1 {
					t.Errorf("%s received %d times", id, n)
				}
			}
			if b := sum.Flows[0].Burst; b.WarmConnections < 1 || sum.Flows[1].Pacing.WarmConnections < 1 || sum.Config.Protocol != proto {
				t.Errorf("burst %+v pacing %+v protocol %q", b, sum.Flows[1].Pacing, sum.Config.Protocol)
			}
		})
	}
}

// TestRunH2MaxConcurrentStreams: with the server's
// SETTINGS_MAX_CONCURRENT_STREAMS at 4, a burst of 20 opens at least 5
// warm connections, never more than 4 streams on one, and all 20
// requests are in the handler together (none waits for a stream slot).
func TestRunH2MaxConcurrentStreams(t *testing.T) {
	const n, limit = 20, 4
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	hold := func() {
		mu.Lock()
		arrived++
		if arrived == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(5 * time.Second): // bound only: the check below fails
		}
	}
	h := newH2Recorder(t, false, limit, hold)
	sum, err, lines := runToLines(t, context.Background(), Options{IDs: IDs(n, "m"), Targets: []Target{{URL: h.URL}}, Protocol: ProtoH2C})
	if err != nil || !sum.Complete || len(lines) != n {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	select {
	case <-all:
	default:
		t.Fatal("the 20 requests were never in the handler together")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.maxActive > limit || len(h.remotes) < n/limit || sum.Burst.WarmConnections < n/limit {
		t.Fatalf("max streams on a connection %d (limit %d), %d connections, %d warm", h.maxActive, limit, len(h.remotes), sum.Burst.WarmConnections)
	}
}

// TestRunH2NoALPN: a TLS server without HTTP/2 is not spoken to: every
// request is not sent, and says why.
func TestRunH2NoALPN(t *testing.T) {
	rec := newRecorder()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rec.add(r) }))
	defer srv.Close()
	cfg := srv.Client().Transport.(*http.Transport).TLSClientConfig
	sum, err, lines := runToLines(t, context.Background(), Options{IDs: IDs(3, "n"), Targets: []Target{{URL: srv.URL}}, Protocol: ProtoH2, TLSConfig: cfg})
	if err != nil || sum.NotSent != 3 || sum.Complete || len(rec.snapshot()) != 0 {
		t.Fatalf("err %v summary %+v", err, sum)
	}
	for _, l := range lines {
		// Go's server refuses the handshake (no_application_protocol); a
		// server that completes it without h2 is refused by rlbench.
		if !l.NotSent || !strings.Contains(l.Error, "did not negotiate HTTP/2") && !strings.Contains(l.Error, "no application protocol") {
			t.Errorf("line %+v", l)
		}
	}
}

// h2Killer is a raw HTTP/2 (h2c) server written on the frame layer: it
// counts every request's HEADERS by ID and, on each connection, answers
// every odd request and kills every even one, in turn (shifted by the
// connection's number): it refuses the stream (RST_STREAM REFUSED_STREAM;
// the connection lives on), sends GOAWAY with the previous stream as the
// last processed and closes, or closes the TCP connection mid-stream. These
// are the cases in which x/net/http2's Transport retries a request itself
// (shouldRetryRequest/canRetryError: REFUSED_STREAM, GOAWAY).
type h2Killer struct {
	addr   string
	mu     sync.Mutex
	conns  int
	seen   map[string]int
	killed map[string]string // id -> how
}

func newH2Killer(t *testing.T) *h2Killer {
	k := &h2Killer{seen: map[string]int{}, killed: map[string]string{}}
	k.addr = serveRaw(t, func(c net.Conn) {
		preface := make([]byte, len(http2.ClientPreface))
		if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
			return
		}
		k.mu.Lock()
		conn := k.conns
		k.conns++
		k.mu.Unlock()
		fr := http2.NewFramer(c, c)
		fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 100})
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		n := 0
		var last uint32
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					fr.WriteSettingsAck()
				}
			case *http2.PingFrame:
				if !f.IsAck() {
					fr.WritePing(true, f.Data)
				}
			case *http2.MetaHeadersFrame:
				id := ""
				for _, hf := range f.Fields {
					if hf.Name == strings.ToLower(evidence.IDHeader) {
						id = hf.Value
					}
				}
				n++
				how := ""
				if n%2 == 0 {
					how = [...]string{"refused", "goaway", "closed"}[(n/2-1+conn)%3]
				}
				k.mu.Lock()
				k.seen[id]++
				if how != "" {
					k.killed[id] = how
				}
				k.mu.Unlock()
				switch how {
				case "":
					hb.Reset()
					enc.WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
					enc.WriteField(hpack.HeaderField{Name: "content-length", Value: "0"})
					fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
					last = f.StreamID
				case "refused":
					fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream)
				case "goaway":
					fr.WriteGoAway(last, http2.ErrCodeNo, nil)
					return
				case "closed":
					return
				}
			}
		}
	})
	return k
}

func (k *h2Killer) counts() (map[string]int, map[string]string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	seen, killed := map[string]int{}, map[string]string{}
	for id, n := range k.seen {
		seen[id] = n
	}
	for id, how := range k.killed {
		killed[id] = how
	}
	return seen, killed
}

// TestH2TransportResends is the control: x/net/http2's Transport.RoundTrip
// sends some IDs twice to the killing server (it retries refused streams
// and requests cut by a GOAWAY). If this stops failing the no-resend test
// below no longer exercises the retry path.
func TestH2TransportResends(t *testing.T) {
	k := newH2Killer(t)
	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	for _, id := range IDs(12, "ctl") {
		req, _ := http.NewRequest("GET", "http://"+k.addr+"/", nil)
		req.Header.Set(evidence.IDHeader, id)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if resp, err := tr.RoundTrip(req.WithContext(ctx)); err == nil {
			resp.Body.Close()
		}
		cancel()
	}
	seen, _ := k.counts()
	twice := 0
	for _, n := range seen {
		if n > 1 {
			twice++
		}
	}
	if twice == 0 {
		t.Fatalf("the Transport re-sent nothing (seen %v): the killing server does not trigger its retry", seen)
	}
	t.Logf("http2.Transport: %d of 12 IDs received twice", twice)
}

// TestRunH2NeverResends: against the killing server, over HTTP/2, each ID
// reaches the server at most once — one stream at a time and many at once
// — and each killed request is recorded with code 0 (indeterminate: its
// HEADERS were written), never re-sent.
func TestRunH2NeverResends(t *testing.T) {
	for _, conc := range []int{1, 4} {
		t.Run("concurrency "+string(rune('0'+conc)), func(t *testing.T) {
			k := newH2Killer(t)
			ids := IDs(60, "once")
			sum, err, lines := runToLines(t, context.Background(), Options{IDs: ids, Targets: []Target{{Name: "k", URL: "http://" + k.addr}},
				Protocol: ProtoH2C, Concurrency: conc, Timeout: 5 * time.Second})
			if err != nil || len(lines) != len(ids) || sum.Resent != 0 {
				t.Fatalf("err %v summary %+v", err, sum)
			}
			seen, killed := k.counts()
			hows := map[string]int{}
			for _, l := range lines {
				if seen[l.ID] > 1 {
					t.Errorf("%s received %d times", l.ID, seen[l.ID])
				}
				how, wasKilled := killed[l.ID]
				if wasKilled {
					hows[how]++
					if l.Code != 0 || l.NotSent || l.Error == "" {
						t.Errorf("%s killed (%s) but recorded %+v", l.ID, how, l)
					}
				}
				if l.Code == 200 && (seen[l.ID] != 1 || wasKilled) {
					t.Errorf("%s: 200 but seen %d killed %v", l.ID, seen[l.ID], wasKilled)
				}
				if l.Code == 0 && !l.NotSent && seen[l.ID] == 0 {
					t.Logf("%s: written to a connection the server had closed, never received: %s", l.ID, l.Error)
				}
			}
			if hows["refused"] == 0 || hows["goaway"] == 0 || hows["closed"] == 0 {
				t.Fatalf("kills by kind %v: not every kind was exercised", hows)
			}
			t.Logf("concurrency %d: kills %v, none re-sent", conc, hows)
		})
	}
}
