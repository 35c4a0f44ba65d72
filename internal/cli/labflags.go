package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/evidence/descriptor"
	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/rlbench/rlbench/internal/lab/proxy"
	"github.com/spf13/pflag"
)

// Flag values of the lab's data path (rate_limits entries, local
// descriptors, backend faults, optional thresholds), parsed at the
// boundary by the owners of their syntax (proxy.ParseActions,
// proxy.ParseLocalDescriptor, backend.ParseLatency).

// rateLimitsValue is a repeatable flag, one rate_limits entry per use in
// proxy.ParseActions' syntax.
type rateLimitsValue struct {
	p    *[]descriptor.RateLimitEntry
	name string
}

func (v *rateLimitsValue) String() string {
	var parts []string
	for _, rl := range *v.p {
		parts = append(parts, proxy.FormatActions(rl.Actions))
	}
	return strings.Join(parts, " ")
}
func (v *rateLimitsValue) Type() string { return "actions" }
func (v *rateLimitsValue) Set(s string) error {
	as, err := proxy.ParseActions(s)
	if err != nil {
		return usageErrorf("--%s: %v", v.name, err)
	}
	*v.p = append(*v.p, descriptor.RateLimitEntry{Actions: as})
	return nil
}

func rateLimitsFlag(fs *pflag.FlagSet, p *[]descriptor.RateLimitEntry, name, usage string) {
	fs.Var(&rateLimitsValue{p: p, name: name}, name, usage)
}

// localDescriptorsValue is a repeatable --local-descriptor.
type localDescriptorsValue struct {
	p    *[]proxy.LocalDescriptor
	name string
}

func (v *localDescriptorsValue) String() string {
	var parts []string
	for _, d := range *v.p {
		var es []string
		for _, e := range d.Entries {
			es = append(es, e.Key+"="+e.Value)
		}
		tb := d.TokenBucket
		parts = append(parts, fmt.Sprintf("%s:%d:%d:%s", strings.Join(es, ","), tb.MaxTokens, tb.TokensPerFill, tb.FillInterval))
	}
	return strings.Join(parts, " ")
}
func (v *localDescriptorsValue) Type() string { return "descriptor" }
func (v *localDescriptorsValue) Set(s string) error {
	d, err := proxy.ParseLocalDescriptor(s)
	if err != nil {
		return usageErrorf("--%s: %v", v.name, err)
	}
	*v.p = append(*v.p, d)
	return nil
}

// latencyValue is --latency in backend.ParseLatency's syntax.
type latencyValue struct {
	p    **backend.Latency
	name string
}

func (v *latencyValue) String() string {
	if *v.p == nil {
		return ""
	}
	return (*v.p).String()
}
func (v *latencyValue) Type() string { return "latency" }
func (v *latencyValue) Set(s string) error {
	l, err := backend.ParseLatency(s)
	if err != nil {
		return usageErrorf("--%s: %v", v.name, err)
	}
	*v.p = l
	return nil
}

// u32Value is an optional uint32 (unset leaves the pointer nil, so the
// owner's default applies).
type u32Value struct {
	p    **uint32
	name string
}

func (v *u32Value) String() string {
	if *v.p == nil {
		return ""
	}
	return strconv.FormatUint(uint64(**v.p), 10)
}
func (v *u32Value) Type() string { return "uint32" }
func (v *u32Value) Set(s string) error {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 32)
	if err != nil {
		return usageErrorf("--%s must be a count >= 0, not %q", v.name, s)
	}
	u := uint32(n)
	*v.p = &u
	return nil
}

// f64Value is an optional float64.
type f64Value struct {
	p    **float64
	name string
}

func (v *f64Value) String() string {
	if *v.p == nil {
		return ""
	}
	return strconv.FormatFloat(**v.p, 'g', -1, 64)
}
func (v *f64Value) Type() string { return "number" }
func (v *f64Value) Set(s string) error {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return usageErrorf("--%s must be a number, not %q", v.name, s)
	}
	*v.p = &f
	return nil
}

func u32Flag(fs *pflag.FlagSet, p **uint32, name, usage string) {
	fs.Var(&u32Value{p: p, name: name}, name, usage)
}
func f64Flag(fs *pflag.FlagSet, p **float64, name, usage string) {
	fs.Var(&f64Value{p: p, name: name}, name, usage)
}

// backendFaultFlags adds the backend fault flags to fs, each name
// prefixed (the lab's are "backend-latency", ...; `rlbench backend`'s
// "latency", ...). Faults.Validate checks the combination.
func backendFaultFlags(fs *pflag.FlagSet, f *backend.Faults, prefix string) {
	fs.Var(&latencyValue{p: &f.Latency, name: prefix + "latency"}, prefix+"latency",
		"added latency before each answer: 50ms, uniform:10ms..50ms, exp:20ms or normal:50ms,10ms (seeded)")
	fs.IntVar(&f.ErrorStatus, prefix+"error-status", 0, "answer this status (400..599) instead of 200")
	f64Flag(fs, &f.ErrorProbability, prefix+"error-probability", "share 0..1 of requests answered --"+prefix+"error-status (default all)")
	fs.IntVar(&f.MaxConcurrent, prefix+"max-concurrent", 0, "cap on requests answered at once (0: none)")
	fs.StringVar(&f.OverCapacity, prefix+"over-capacity", "", "above the cap: 503 (default) or refuse (reset the connection)")
	fs.Float64Var(&f.ResetProbability, prefix+"reset-probability", 0, "share 0..1 of requests whose connection is reset after reading them")
}
