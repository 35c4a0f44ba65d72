// Package snapshot is the one shell of the collections that GET one page and
// keep it raw and parsed: `rlbench collect envoy` (an Envoy admin /stats
// page), `rlbench collect prometheus` (envoyproxy/ratelimit's /metrics) and
// `rlbench collect nginx-status` (nginx's stub_status). Take builds the HTTP
// client bounded by the timeout, fetches once, and writes the raw body and
// the parsed page into an evidence directory under the names
// evidence/layout.go gives them; on a failed fetch it keeps the raw body read
// so far and returns the fetch's error. The pages (EnvoyStats, RLSPrometheus,
// NginxStubStatus) say how each kind is fetched and parsed (collect/envoy,
// collect/rls, collect/nginx own that) and which evidence writer keeps it.
//
// Like the rest of collect/, the package never prints and never exits: it
// takes a context and Options and returns the parsed page and errors.
package snapshot

import (
	"context"
	"net/http"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// Options say where one snapshot comes from and where it is kept.
type Options struct {
	// URL is the page's URL; for EnvoyStats the admin listener's base URL
	// (http://127.0.0.1:9901), to which the stats path is added.
	URL string
	// Name is the proxy the page belongs to (its attack target name), part
	// of the file names of EnvoyStats and NginxStubStatus; it must pass
	// evidence.CheckName. RLSPrometheus does not use it.
	Name string
	// Label names the snapshot, "before" or "after"; it must pass
	// evidence.CheckName.
	Label string
	// Out is the evidence directory the files go into.
	Out evidence.Dir
	// Timeout bounds the whole GET, reading the body included
	// (http.Client.Timeout); 0 means no bound.
	Timeout time.Duration
	// Client, when not nil, replaces the client Take builds from Timeout.
	Client *http.Client
	// Now stamps the pages that record when they were taken (RLS metrics'
	// time_ns); nil means time.Now.
	Now func() time.Time
}

// now is o.Now, or time.Now.
func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Page is one kind of page: how it is fetched and parsed, and how its raw
// body and parsed form are kept.
type Page[T any] struct {
	// Fetch GETs url with client and parses the body; raw is the body read,
	// also when err is not nil (what the server said, kept by KeepRaw).
	Fetch func(ctx context.Context, client *http.Client, url string) (raw []byte, page T, err error)
	// KeepRaw keeps the raw body of a failed fetch (it may be empty) in
	// o.Out.
	KeepRaw func(o Options, raw []byte) error
	// Write keeps the raw body and the parsed page in o.Out; it may stamp
	// the page first (proxy, label, redacted URL) and returns it as kept.
	Write func(o Options, raw []byte, page T) (T, error)
}

// Take fetches o.URL once with p.Fetch (with o.Client, or a client bounded
// by o.Timeout) and keeps what it got in o.Out. On success it writes the raw
// body and the parsed page (p.Write) and returns the page as written. When
// the fetch or the parse fails it keeps the raw body read so far
// (p.KeepRaw) and returns the fetch's error, or KeepRaw's error when
// keeping failed.
func Take[T any](ctx context.Context, o Options, p Page[T]) (T, error) {
	var zero T
	client := o.Client
	if client == nil {
		client = &http.Client{Timeout: o.Timeout}
	}
	raw, page, err := p.Fetch(ctx, client, o.URL)
	if err != nil {
		if werr := p.KeepRaw(o, raw); werr != nil {
			return zero, werr
		}
		return zero, err
	}
	page, err = p.Write(o, raw, page)
	if err != nil {
		return zero, err
	}
	return page, nil
}
