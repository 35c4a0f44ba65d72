package model

import (
	"strings"
	"time"
)

// Entry is one descriptor entry, as Envoy's rate_limits actions build them
// (envoy/extensions/common/ratelimit/v3/ratelimit.proto RateLimitDescriptor.Entry).
type Entry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Descriptor is one ordered list of entries: one request descriptor as the
// HTTP local rate limit filter matches it against its configured descriptors.
type Descriptor []Entry

// String renders d as "k1=v1,k2=v2".
func (d Descriptor) String() string {
	var b strings.Builder
	for i, e := range d {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(e.Key)
		b.WriteByte('=')
		b.WriteString(e.Value)
	}
	return b.String()
}

// Request is what a limiter model sees of one request.
//
// Key names the limiter instance whose state the request uses: the proxy (a
// per-process bucket), the worker, the downstream connection (Envoy's
// local_rate_limit_per_downstream_connection), the descriptor value of an RLS
// rule, the nginx limit_req_zone key ($binary_remote_addr...), a user. Every
// distinct Key has its own state.
//
// Descriptors are the request descriptors of the Envoy local rate limit
// filter (ignored by the other kinds). Vars are named request values that an
// nginx zone with a "key" reads (for example "$host"); a zone without a key
// uses Key. An empty zone key means the zone does not limit the request, as
// in nginx.
type Request struct {
	// At is the time the limiter decides, unix ns (the virtual clock of a
	// simulation).
	At          int64
	Key         string
	Descriptors []Descriptor
	Vars        map[string]string
}

// Decision is a simulator's answer for one request.
type Decision struct {
	// Admit: the request passes the limiter (after Delay for a leaky bucket).
	Admit bool
	// Shadow: the limiter's state rejects the request but it passes anyway
	// (nginx limit_req_dry_run, an RLS rule with shadow_mode, an Envoy
	// filter_enforced below 100 % that did not enforce). Admit is true.
	Shadow bool
	// Delay is nginx limit_req's forwarding delay (0 when forwarded at once
	// or rejected).
	Delay time.Duration
	// By names the bucket, window or zone that rejected (or would have, under
	// Shadow) the request; empty when admitted by all.
	By string
}

// Model is a limiter semantic built from a Spec by New. A Model is immutable
// and safe for concurrent use; its state lives in the Simulators it makes and
// in each Check call.
type Model interface {
	// Spec returns the spec the model was built from, with defaults filled in.
	Spec() Spec
	// NewSimulator returns a fresh exact simulator (every key starts as the
	// source describes: buckets full, counters at zero). seed drives the
	// only random choice, Envoy's filter_enabled/filter_enforced percentages.
	NewSimulator(seed int64) Simulator

	checker(ref int64) checkModel
}

// Simulator is an exact state machine of a model: feed requests at their
// decision times and get each decision. Times should not decrease; where
// they do, each kind does what its source does with a clock going back
// (nginx treats a negative elapsed time as 0, x/time/rate refills nothing,
// Envoy's atomic bucket counts the negative time). A Simulator is not safe
// for concurrent use.
type Simulator interface {
	Offer(r Request) Decision
}

// Simulate runs reqs in order through a fresh simulator of m and returns one
// decision per request.
func Simulate(m Model, reqs []Request, seed int64) []Decision {
	s := m.NewSimulator(seed)
	out := make([]Decision, len(reqs))
	for i, r := range reqs {
		out[i] = s.Offer(r)
	}
	return out
}

// ForwardTimes returns, for every admitted request, the time it leaves the
// limiter: At plus the decision's Delay (nginx limit_req without nodelay
// queues the excess and forwards it at the configured rate). Rejected
// requests are skipped. The result is sorted.
func ForwardTimes(reqs []Request, decisions []Decision) []int64 {
	out := make([]int64, 0, len(reqs))
	for i, d := range decisions {
		if i < len(reqs) && d.Admit {
			out = append(out, reqs[i].At+int64(d.Delay))
		}
	}
	sortInt64(out)
	return out
}

// PeakCount returns the largest number of times (sorted, unix ns) that fall
// in any half-open window [t, t+window): the expected backend peak per window
// of a simulated run.
func PeakCount(times []int64, window time.Duration) int {
	n, _ := PeakAt(times, window)
	return n
}
