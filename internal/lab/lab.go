// Package lab starts an in-process rate limit lab on 127.0.0.1: one
// receipt-recording backend (internal/lab/backend) behind N Envoy-like
// proxies (internal/lab/proxy) named proxy-a, proxy-b, ..., each with its own
// local token bucket (per-process buckets, as with N Envoy replicas) and an
// optional global rate limit filter calling an external RLS address.
package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/rlbench/rlbench/internal/lab/proxy"
)

// MaxProxies bounds Options.Proxies (names proxy-a .. proxy-z).
const MaxProxies = 26

// Options configures a Lab.
type Options struct {
	// Proxies is the number of proxies, 1..MaxProxies; 0 means 1.
	Proxies int
	// Local, if non-nil, is copied into every proxy: each gets its own bucket.
	Local *proxy.LocalRateLimit
	// Global, if non-nil, is copied into every proxy; Global.RLS is the
	// address of an already running RLS ("grpc://127.0.0.1:PORT").
	Global *proxy.GlobalRateLimit
	// BackendReceipts, if non-nil, receives receipts.jsonl lines (see
	// backend.Options.Receipts); it is flushed on Close, never closed.
	BackendReceipts io.Writer
	// AccessLog, if non-nil, receives every proxy's JSON access log lines
	// (AccessLogEntry.Proxy tells them apart).
	AccessLog io.Writer
	// Cluster is the proxies' upstream cluster name; default "backend".
	Cluster string
	// BackendStatus is the backend's reply status; default 200.
	BackendStatus int
	// Now is the clock for proxies and backend; default time.Now.
	Now func() time.Time
}

// Lab is a running backend and its proxies.
type Lab struct {
	// Backend is the receipt-recording upstream of every proxy.
	Backend *backend.Backend
	// Proxies are proxy-a, proxy-b, ... in order.
	Proxies []*proxy.Proxy
	rls     string
}

// Addresses lists every endpoint of a Lab; it marshals to JSON as
// {"backend":"http://..","proxies":[{"name":"proxy-a","url":"http://..","admin_url":"http://.."}],"rls":".."}.
type Addresses struct {
	// Backend is the backend URL.
	Backend string `json:"backend"`
	// Proxies lists the proxies in name order.
	Proxies []ProxyAddress `json:"proxies"`
	// RLS is Options.Global.RLS, empty without a global filter.
	RLS string `json:"rls,omitempty"`
}

// ProxyAddress is one proxy's name, listener URL and admin URL.
type ProxyAddress struct {
	// Name is the proxy name, e.g. "proxy-a".
	Name string `json:"name"`
	// URL is the proxy listener, "http://127.0.0.1:PORT".
	URL string `json:"url"`
	// AdminURL is the Envoy-like admin listener, "http://127.0.0.1:PORT".
	AdminURL string `json:"admin_url"`
}

// ProxyName returns the name of the i-th proxy (0-based): proxy-a, proxy-b, ...
func ProxyName(i int) string { return fmt.Sprintf("proxy-%c", 'a'+i) }

// Start starts the backend and opts.Proxies proxies, all on 127.0.0.1:0.
// On any error it closes what it started and returns the error (naming the
// proxy). Everything stops on Close or when ctx is done.
func Start(ctx context.Context, opts Options) (*Lab, error) {
	n := opts.Proxies
	if n == 0 {
		n = 1
	}
	if n < 1 || n > MaxProxies {
		return nil, fmt.Errorf("lab: proxies = %d, want 1..%d", opts.Proxies, MaxProxies)
	}
	be, err := backend.Start(ctx, backend.Options{Receipts: opts.BackendReceipts, Status: opts.BackendStatus, Now: opts.Now})
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	l := &Lab{Backend: be}
	if opts.Global != nil {
		l.rls = opts.Global.RLS
	}
	for i := range n {
		cfg := proxy.Config{Name: ProxyName(i), Upstream: be.URL(), Cluster: opts.Cluster, AccessLog: opts.AccessLog, Now: opts.Now}
		if opts.Local != nil {
			lc := *opts.Local
			cfg.Local = &lc
		}
		if opts.Global != nil {
			gc := *opts.Global
			gc.Actions = append([]proxy.Action(nil), opts.Global.Actions...)
			cfg.Global = &gc
		}
		p, err := proxy.Start(ctx, cfg)
		if err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("lab: %s: %w", cfg.Name, err)
		}
		l.Proxies = append(l.Proxies, p)
	}
	return l, nil
}

// Addresses returns every endpoint of the lab.
func (l *Lab) Addresses() Addresses {
	a := Addresses{Backend: l.Backend.URL(), RLS: l.rls, Proxies: make([]ProxyAddress, 0, len(l.Proxies))}
	for _, p := range l.Proxies {
		a.Proxies = append(a.Proxies, ProxyAddress{Name: p.Name(), URL: p.URL(), AdminURL: p.AdminURL()})
	}
	return a
}

// Close stops the proxies first (so no request is mid-way), then the
// backend, flushing its receipts. It returns the joined errors.
func (l *Lab) Close() error {
	var errs []error
	for _, p := range l.Proxies {
		errs = append(errs, p.Close())
	}
	errs = append(errs, l.Backend.Close())
	return errors.Join(errs...)
}
