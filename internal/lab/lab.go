// Package lab assembles rlbench's in-process rate limit lab on 127.0.0.1:
// one receipt-recording backend (internal/lab/backend) with one or more
// endpoints (backend-0, backend-1, ...: the upstream hosts of every proxy's
// cluster) behind N Envoy-like proxies (internal/lab/proxy) named proxy-a,
// proxy-b, ..., each with its own local token buckets (per-process buckets,
// as with N Envoy replicas), its own router, circuit breakers and outlier
// detector, and/or a global rate limit filter calling a rate limit service:
// the lab RLS (internal/lab/rls), started here, or one the lab does not
// start (the real envoyproxy/ratelimit, a shared deployment).
//
// It is the only place that puts a lab together: `rlbench lab`, the plan
// runner (`rlbench run`, `rlbench demo`) and the tests all describe the lab
// they want with Options and call Start, so names, caps and defaults are
// decided here once.
package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	labrls "github.com/rlbench/rlbench/internal/lab/rls"
)

// MaxProxies bounds ProxiesOptions.Count: the proxies are named proxy-a .. proxy-z.
const MaxProxies = 26

// DefaultProxies is ProxiesOptions.Count when 0; it is also the default of
// `rlbench lab --proxies` and of a plan's lab.proxies.
const DefaultProxies = 2

// The fixed-port layout of Options.ListenBase: every part of the lab binds
// 127.0.0.1:ListenBase+offset, the offsets leaving room for MaxProxies
// proxies and backend.MaxEndpoints endpoints.
const (
	// ProxyPortOffset: proxy i (proxy-a is 0) listens on base+ProxyPortOffset+i.
	ProxyPortOffset = 0
	// AdminPortOffset: proxy i's admin (/stats) listens on base+AdminPortOffset+i.
	AdminPortOffset = 100
	// BackendPortOffset: backend endpoint j listens on base+BackendPortOffset+j.
	BackendPortOffset = 200
	// RLSPortOffset: the lab RLS (when started) listens on base+RLSPortOffset.
	RLSPortOffset = 300
	// MaxListenBase is the highest base whose layout fits below port 65536.
	MaxListenBase = 65535 - RLSPortOffset
)

// Options describe a whole lab, one struct per part, so that a new knob of a
// part is a new field of that part's own options (backend.Options,
// proxy.Config, labrls.Options) and reaches the lab without new wiring.
type Options struct {
	// Backend configures the backend. Listen defaults to 127.0.0.1:0 and Now
	// to Options.Now. Its receipts file (ReceiptsFile) is sealed when the
	// lab closes; a Receipts writer stays the caller's.
	Backend backend.Options
	// Proxies configures the proxies in front of the backend.
	Proxies ProxiesOptions
	// RLS is the rate limit service of the proxies' global filter.
	RLS RLSOptions
	// Now is the clock of every part; default time.Now.
	Now func() time.Time
	// ListenBase, when not 0 (1..MaxListenBase), puts every part on a fixed
	// port of 127.0.0.1 instead of a free one: proxy i on
	// ListenBase+ProxyPortOffset+i, its admin on ListenBase+AdminPortOffset+i,
	// backend endpoint j on ListenBase+BackendPortOffset+j and the lab RLS
	// on ListenBase+RLSPortOffset (base 10000: proxies 10000.., admins
	// 10100.., backend 10200.., RLS 10300). Backend.Listen and the lab RLS's
	// Listen must then be left empty. A port that is taken fails Start with
	// an error wrapping syscall.EADDRINUSE that names the port and the
	// layout.
	ListenBase int
}

// ProxiesOptions describe the lab's proxies: Count copies of one Config.
type ProxiesOptions struct {
	// Count is the number of proxies, 1..MaxProxies; 0 means DefaultProxies.
	Count int
	// Config is what every proxy starts from. The lab sets Name (ProxyName),
	// Upstreams (the backend's endpoints) and Global.RLS (from Options.RLS);
	// those, Upstream and Listen/AdminListen (each proxy binds 127.0.0.1:0)
	// must be left empty. Local and Global are copied into every proxy, so each proxy has
	// its own token bucket, as N Envoy processes do. Lab defaults, applied
	// once here: Cluster proxy.DefaultCluster; Local.TokensPerFill 0 means 1
	// (Envoy's token_bucket default); Local.FilterEnabled and
	// Local.FilterEnforced nil mean 100% (the lab's bucket is enabled and
	// enforced unless told otherwise: point them at 0 for shadow mode);
	// Now is Options.Now; a non-zero Seed gives proxy i the seed Seed+i
	// (each its own sequence, reproducible).
	Config proxy.Config
	// AccessLog, if non-nil, gives each proxy its own access log writer,
	// called with the proxy's name before it starts; it replaces
	// Config.AccessLog. The lab never closes these writers.
	AccessLog func(proxyName string) (io.Writer, error)
	// None starts no proxy: the lab is its backend (and lab RLS) only, for
	// proxies started outside it in front of the backend's endpoints (the
	// runner's private nginx). Count must then be 0 and Config carry no
	// filter, router or cluster setting.
	None bool
}

// RLSOptions select the rate limit service the global filter calls: the lab
// RLS (Lab) or an address (Address), not both. Without a global filter
// neither is needed; a lab RLS may still be started (for faults on it).
type RLSOptions struct {
	// Lab, if non-nil, starts the lab RLS before the proxies with these
	// options; Listen defaults to 127.0.0.1:0, WindowStart to
	// evidence.WindowAligned, Now to Options.Now. Its decision writer stays
	// the caller's.
	Lab *labrls.Options
	// Address is an RLS that the lab does not start, "grpc://host:port"
	// (the real envoyproxy/ratelimit, a shared deployment).
	Address string
}

// Lab is a running lab. Close stops it.
type Lab struct {
	// Backend is the receipt-recording upstream of every proxy.
	Backend *backend.Backend
	// Proxies are proxy-a, proxy-b, ... in order.
	Proxies []*proxy.Proxy
	// RLS is the lab RLS, nil when Options.RLS.Lab was nil. Stop and
	// Restart on it are the RLS faults of a plan.
	RLS *labrls.Server
	// ProxiesStartNs is the time (unix ns, Options.Now) just before the
	// first proxy started: every proxy's token bucket was full then.
	ProxiesStartNs int64

	opts    Options
	rlsAddr string
}

// Addresses lists every endpoint of a lab. It is the JSON line `rlbench lab`
// prints (README "The same result as demo, by hand"):
// {"backend":"http://..","endpoints":[{"name":"backend-0","url":..},..],"receipts":"..","rls":"grpc://..","proxies":[{"name":"proxy-a","url":"http://..","admin":"http://.."}]}
// ("endpoints" only with several backend endpoints).
type Addresses struct {
	// Backend is the backend URL, "http://127.0.0.1:PORT" (its first
	// endpoint).
	Backend string `json:"backend"`
	// Endpoints lists every backend endpoint (name and URL) when there are
	// several.
	Endpoints []backend.Endpoint `json:"endpoints,omitempty"`
	// Receipts is the file the backend's receipts go to, when the caller
	// writes them to a file (Lab.Addresses leaves it empty: the lab only
	// sees a writer; `rlbench lab` fills in its --receipts).
	Receipts string `json:"receipts,omitempty"`
	// RLS is the address the global filter calls, "grpc://host:port",
	// redacted (evidence.RedactURL: a printed address holds no
	// credential); empty without an RLS.
	RLS string `json:"rls,omitempty"`
	// Proxies lists the proxies in name order.
	Proxies []ProxyAddress `json:"proxies"`
}

// ProxyAddress is one proxy's name, listener URL and Envoy-like admin URL.
type ProxyAddress struct {
	// Name is the proxy name, e.g. "proxy-a": the attack target name and
	// the name of its stats snapshots.
	Name string `json:"name"`
	// URL is the proxy listener, "http://127.0.0.1:PORT".
	URL string `json:"url"`
	// Admin is the admin listener with /stats, "http://127.0.0.1:PORT".
	Admin string `json:"admin"`
}

// startProxy is proxy.Start; a test replaces it to fail a given proxy.
var startProxy = proxy.Start

// ProxyName returns the name of the i-th proxy (0-based): proxy-a, proxy-b, ...
func ProxyName(i int) string { return fmt.Sprintf("proxy-%c", 'a'+i) }

// withDefaults returns o with the lab's defaults applied (see the field docs);
// o is not modified: the filters it changes are copies. The nested
// configuration it leaves alone (descriptors, rate_limits, retry policy,
// breakers, outlier detection, faults) is shared, and only read.
func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Backend.Listen == "" {
		o.Backend.Listen = o.listenAddr(BackendPortOffset)
	}
	if o.Backend.Now == nil {
		o.Backend.Now = o.Now
	}
	p := &o.Proxies
	if p.Count == 0 && !p.None {
		p.Count = DefaultProxies
	}
	if p.Config.Cluster == "" {
		p.Config.Cluster = proxy.DefaultCluster
	}
	if p.Config.Now == nil {
		p.Config.Now = o.Now
	}
	if l := p.Config.Local; l != nil {
		lc := *l
		if lc.TokensPerFill == 0 {
			lc.TokensPerFill = 1
		}
		if lc.FilterEnabled == nil {
			lc.FilterEnabled = percent(100)
		}
		if lc.FilterEnforced == nil {
			lc.FilterEnforced = percent(100)
		}
		p.Config.Local = &lc
	}
	if g := p.Config.Global; g != nil {
		gc := *g
		gc.Actions = append([]descriptor.RateLimitAction(nil), g.Actions...)
		p.Config.Global = &gc
	}
	if r := o.RLS.Lab; r != nil {
		rc := *r
		if rc.Listen == "" {
			rc.Listen = o.listenAddr(RLSPortOffset)
		}
		if rc.WindowStart == "" {
			rc.WindowStart = evidence.WindowAligned
		}
		if rc.Now == nil {
			rc.Now = o.Now
		}
		o.RLS.Lab = &rc
	}
	return o
}

// Effective returns o with the lab's defaults applied, as Start runs it
// (withDefaults): what a simulation of the lab declares without starting it.
func (o Options) Effective() Options { return o.withDefaults() }

func percent(v float64) *float64 { return &v }

// listenAddr is the 127.0.0.1 address of the part at offset of the
// ListenBase layout, or a free port ("127.0.0.1:0") without a base.
func (o Options) listenAddr(offset int) string {
	if o.ListenBase == 0 {
		return "127.0.0.1:0"
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(o.ListenBase+offset))
}

// portTaken adds the ListenBase layout to a bind error for a taken port, so
// the message says which fixed port collided and what to change.
func (o Options) portTaken(err error) error {
	if o.ListenBase == 0 || !errors.Is(err, syscall.EADDRINUSE) {
		return err
	}
	b := o.ListenBase
	return fmt.Errorf("%w: that port of listen base %d is taken (the layout: proxies on %d.., their admins on %d.., the backend on %d.., the lab RLS on %d); stop what holds it or choose another base",
		err, b, b+ProxyPortOffset, b+AdminPortOffset, b+BackendPortOffset, b+RLSPortOffset)
}

// Validate checks o without starting anything, after applying the defaults:
// the proxy count, the proxy template (proxy.Config.Validate) and the fields
// the lab sets itself, the RLS choice, and the lab RLS options
// (labrls.Options.Validate). Start calls it first; a CLI calls it to report
// misuse before it creates any file.
func (o Options) Validate() error {
	if err := o.validateListen(); err != nil {
		return err
	}
	o = o.withDefaults()
	if err := o.Proxies.validate(); err != nil {
		return err
	}
	if n := o.Backend.Endpoints; n < 0 || n > backend.MaxEndpoints {
		return fmt.Errorf("lab: backend: %d endpoints, want 1..%d", n, backend.MaxEndpoints)
	}
	if err := o.Backend.Faults.Validate(); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	if c := o.Proxies.Config; c.Global != nil && c.Global.RLS != "" {
		return fmt.Errorf("lab: give the RLS in Options.RLS, not in Config.Global.RLS (%q)", c.Global.RLS)
	}
	if err := o.Proxies.Config.Validate(); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return o.RLS.validate(o.Proxies.Config.Global != nil)
}

// validateListen checks the listen base (before the defaults): in range,
// and not given together with a backend or lab RLS address.
func (o Options) validateListen() error {
	if p := o.Proxies; p.None {
		c := p.Config
		if p.Count != 0 || c.Local != nil || c.Global != nil || c.Retry != nil || c.CircuitBreakers != nil || c.OutlierDetection != nil {
			return errors.New("lab: no proxies (Proxies.None), but a proxy count or proxy settings are given")
		}
	}
	if o.ListenBase == 0 {
		return nil
	}
	if o.ListenBase < 1 || o.ListenBase > MaxListenBase {
		return fmt.Errorf("lab: listen base %d, want 1..%d (its layout reaches base+%d)", o.ListenBase, MaxListenBase, RLSPortOffset)
	}
	if o.Backend.Listen != "" {
		return fmt.Errorf("lab: backend Listen %q and a listen base %d: give one", o.Backend.Listen, o.ListenBase)
	}
	if o.RLS.Lab != nil && o.RLS.Lab.Listen != "" {
		return fmt.Errorf("lab: lab RLS Listen %q and a listen base %d: give one", o.RLS.Lab.Listen, o.ListenBase)
	}
	return nil
}

// validate checks the proxy count (after the defaults) and that the fields
// the lab chooses itself are left empty in the template.
func (p ProxiesOptions) validate() error {
	if !p.None && (p.Count < 1 || p.Count > MaxProxies) {
		return fmt.Errorf("lab: %d proxies, want 1..%d", p.Count, MaxProxies)
	}
	c := p.Config
	for _, f := range [...]struct{ name, v string }{{"Name", c.Name}, {"Upstream", c.Upstream}, {"Upstreams", strings.Join(c.Upstreams, ",")},
		{"Listen", c.Listen}, {"AdminListen", c.AdminListen}} {
		if f.v != "" {
			return fmt.Errorf("lab: proxy Config.%s is chosen by the lab, leave it empty (have %q)", f.name, f.v)
		}
	}
	return nil
}

// validate checks the RLS choice: the lab RLS or an address (grpc://),
// not both, one of them when the proxies have a global filter, and the lab
// RLS's options (labrls.Options.Validate).
func (r RLSOptions) validate(global bool) error {
	if r.Lab != nil && r.Address != "" {
		return fmt.Errorf("lab: RLS: give the lab RLS or an address (%q), not both", r.Address)
	}
	if global && r.Lab == nil && r.Address == "" {
		return errors.New("lab: the global rate limit filter needs an RLS: the lab RLS or an address")
	}
	if r.Address != "" && !strings.HasPrefix(r.Address, "grpc://") {
		return fmt.Errorf("lab: RLS address %q: want grpc://host:port", r.Address)
	}
	if r.Lab != nil {
		return r.Lab.Validate()
	}
	return nil
}

// Start validates opts (Validate) and starts the lab on 127.0.0.1: the lab
// RLS (when asked for), the backend, then the proxies in name order, each
// on free ports or on the ports of Options.ListenBase. On any error it stops what it started and returns the
// error, which names the part ("lab rls: ...", "lab: backend: ...",
// "lab: proxy-b: ..."). Everything stops on Close, or when ctx is done.
func Start(ctx context.Context, opts Options) (*Lab, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	l := &Lab{opts: o, rlsAddr: o.RLS.Address}
	if o.RLS.Lab != nil {
		srv, err := labrls.Start(ctx, *o.RLS.Lab)
		if err != nil {
			return nil, o.portTaken(err) // labrls errors start with "lab rls: "
		}
		l.RLS = srv
		l.rlsAddr = "grpc://" + srv.Addr()
	}
	be, err := backend.Start(ctx, o.Backend)
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("lab: backend: %w", o.portTaken(err))
	}
	l.Backend = be
	l.ProxiesStartNs = o.Now().UnixNano()
	var hosts []string
	for _, ep := range be.Endpoints() {
		hosts = append(hosts, ep.URL)
	}
	for i := range o.Proxies.Count {
		cfg := o.Proxies.Config
		cfg.Name, cfg.Upstreams = ProxyName(i), hosts
		if o.ListenBase != 0 {
			cfg.Listen, cfg.AdminListen = o.listenAddr(ProxyPortOffset+i), o.listenAddr(AdminPortOffset+i)
		}
		if cfg.Seed != 0 {
			cfg.Seed += uint64(i)
		}
		if cfg.Local != nil {
			lc := *cfg.Local // a bucket of its own
			cfg.Local = &lc
		}
		if cfg.Global != nil {
			gc := *cfg.Global
			gc.Actions = append([]descriptor.RateLimitAction(nil), gc.Actions...)
			gc.RLS = l.rlsAddr
			cfg.Global = &gc
		}
		if o.Proxies.AccessLog != nil {
			if cfg.AccessLog, err = o.Proxies.AccessLog(cfg.Name); err != nil {
				_ = l.Close()
				return nil, fmt.Errorf("lab: %s: access log: %w", cfg.Name, err)
			}
		}
		p, err := startProxy(ctx, cfg)
		if err != nil {
			_ = l.Close()
			return nil, fmt.Errorf("lab: %s: %w", cfg.Name, o.portTaken(err))
		}
		l.Proxies = append(l.Proxies, p)
	}
	return l, nil
}

// Options returns the options the lab runs with: Start's, with the lab's
// defaults applied (Proxies.Count, Proxies.Config.Cluster, Local's
// TokensPerFill and filter percentages, the lab RLS's WindowStart...). The
// pointers are the lab's: do not modify what they point to.
func (l *Lab) Options() Options { return l.opts }

// RLSAddress is the address the proxies' global filter calls,
// "grpc://host:port" (the lab RLS's, or Options.RLS.Address); "" without an RLS.
func (l *Lab) RLSAddress() string { return l.rlsAddr }

// Addresses returns every endpoint of the lab (Receipts left empty).
func (l *Lab) Addresses() Addresses {
	a := Addresses{Backend: l.Backend.URL(), RLS: evidence.RedactURL(l.rlsAddr), Proxies: make([]ProxyAddress, 0, len(l.Proxies))}
	if eps := l.Backend.Endpoints(); len(eps) > 1 {
		a.Endpoints = eps
	}
	for _, p := range l.Proxies {
		a.Proxies = append(a.Proxies, ProxyAddress{Name: p.Name(), URL: p.URL(), Admin: p.AdminURL()})
	}
	return a
}

// Close stops the proxies first (so no request is mid-way), then the
// backend, sealing its receipts, then the lab RLS. It returns the joined
// errors. The writers given in Options stay open: they are the caller's.
func (l *Lab) Close() error {
	var errs []error
	for _, p := range l.Proxies {
		errs = append(errs, p.Close())
	}
	if l.Backend != nil {
		errs = append(errs, l.Backend.Close())
	}
	if l.RLS != nil {
		l.RLS.Stop()
	}
	return errors.Join(errs...)
}
