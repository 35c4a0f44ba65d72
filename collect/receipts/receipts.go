// Package receipts pulls the receipts of running rlbench backends (issue
// 15): GET /_rlbench/receipts of each replica, streamed line by line into a
// sealed receipts/<source>.jsonl of an evidence directory, so that the
// receipts of backend replicas in a cluster can be merged with the
// requests of every attack shard (evidence/merge.Merge). It never prints and
// never exits.
package receipts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/boundedio"
)

// DefaultMaxBytes bounds one backend's receipts stream (4 GiB, about ten
// million receipts).
const DefaultMaxBytes int64 = 4 << 30

// Options configure Fetch.
type Options struct {
	// Client does the GET; nil means http.DefaultClient. Its Timeout, if
	// any, bounds the whole stream: prefer the context.
	Client *http.Client
	// MaxBytes bounds the stream; 0 means DefaultMaxBytes. A longer one is
	// an error (*boundedio.SizeError), never a silent truncation.
	MaxBytes int64
}

// Result describes one backend's receipts.
type Result struct {
	// URL is the receipts URL fetched, its password redacted
	// (evidence.RedactURL).
	URL string `json:"url"`
	// Receipts counts the lines written.
	Receipts int `json:"receipts"`
	// Replicas are the distinct Receipt.Replica values seen, sorted ("" for
	// receipts of a backend that records none).
	Replicas []string `json:"replicas"`
}

// ReceiptsURL returns the receipts URL of a backend given by its base URL
// ("http://host:8080": ReceiptsPath is appended) or by the receipts URL
// itself. It fails on a URL that is not http or https or has no host,
// quoting it redacted.
func ReceiptsURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("receipts URL %q: want http://HOST:PORT of an rlbench backend", evidence.RedactURL(base))
	}
	if p := strings.TrimSuffix(u.Path, "/"); p == "" {
		u.Path = evidence.ReceiptsPath
	}
	return u.String(), nil
}

// SourceName is the file name stem (evidence.Dir.CollectedReceipts) for a
// receipts URL: its host and port with every character outside letters,
// digits, '-' and '_' replaced by '_' ("10.0.0.7:8080" → "10_0_0_7_8080").
func SourceName(receiptsURL string) string {
	u, err := url.Parse(receiptsURL)
	host := receiptsURL
	if err == nil {
		host = u.Host
	}
	b := []byte(host)
	for i, c := range b {
		if !(c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			b[i] = '_'
		}
	}
	s := string(b)
	if len(s) > evidence.MaxNameBytes {
		s = s[:evidence.MaxNameBytes]
	}
	if s == "" {
		s = "backend"
	}
	return s
}

// Fetch GETs the receipts of the backend at receiptsURL (see ReceiptsURL)
// and writes each line, decoded as an evidence.Receipt, to w in the
// backend's order. A status other than 200, a line that does not decode
// (a *evidence.LineError naming the redacted URL and the line), a stream
// cut short (the backend serves whole lines with a Content-Length) or
// longer than Options.MaxBytes, and a write error of w are errors; what
// was written before stays in w, whose caller closes it (its seal then
// records the error).
func Fetch(ctx context.Context, receiptsURL string, w *evidence.Writer, opts Options) (Result, error) {
	name := evidence.RedactURL(receiptsURL)
	res := Result{URL: name, Replicas: []string{}}
	client := opts.Client
	if client == nil {
		client = http.DefaultClient
	}
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, receiptsURL, nil)
	if err != nil {
		return res, errors.New(evidence.RedactText(err.Error()))
	}
	resp, err := client.Do(req)
	if err != nil {
		return res, errors.New(evidence.RedactText(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return res, fmt.Errorf("%s: %s (want 200 from an rlbench backend's %s)", name, resp.Status, evidence.ReceiptsPath)
	}
	seen := map[string]bool{}
	err = evidence.ReadLines(boundedio.NewReader(ctx, resp.Body, name, limit), name, func(line int, rc *evidence.Receipt) error {
		if rc.RecvNs <= 0 {
			return &evidence.LineError{File: name, Line: line, Err: errors.New("not a receipt: recv_ns missing")}
		}
		if err := w.Write(rc); err != nil {
			return err
		}
		res.Receipts++
		if !seen[rc.Replica] {
			seen[rc.Replica] = true
			res.Replicas = append(res.Replicas, rc.Replica)
		}
		return nil
	})
	sort.Strings(res.Replicas)
	if err != nil {
		var le *evidence.LineError
		if !errors.As(err, &le) {
			err = fmt.Errorf("%s: after %d receipts: %v", name, res.Receipts, evidence.RedactText(err.Error()))
		}
	}
	return res, err
}
