// Package model holds rlbench's limiter models and the checker that judges
// a recorded run against them, request by request.
//
// # Models
//
// A Spec (JSON, as in scenario.json, decoded strictly) declares a limiter;
// New builds its Model. Each kind follows a public source, cited on its
// type:
//
//   - envoy_local: Envoy's HTTP local rate limit filter. From 1.31 the
//     AtomicTokenBucket refills lazily and continuously
//     (source/common/common/token_bucket_impl.cc); up to 1.30 a timer adds
//     tokens_per_fill every fill_interval. Descriptor buckets are consumed
//     in ascending fill rate, the first without a token rejecting, the
//     earlier ones staying charged; the default bucket last, iff no
//     descriptor matched or always_consume_default_token_bucket
//     (source/extensions/filters/common/local_ratelimit/local_ratelimit_impl.cc
//     requestAllowed). Wildcard descriptors keep an LRU of
//     max_dynamic_descriptors buckets. filter_enabled and filter_enforced
//     below 100 % are modelled (unchecked requests, shadow rejections).
//   - fixed_window: envoyproxy/ratelimit (epoch-aligned windows of the unit,
//     every hit counted including over-limit ones, OK iff the count after
//     the hit is <= the limit; shadow_mode; unlimited) or rlbench's lab RLS
//     with windows starting at a key's first hit.
//   - nginx_limit_req: ngx_http_limit_req_module.c exactly: milli-request
//     rate with integer division (1r/m is 16), excess in milli-requests on
//     nginx's millisecond clock, burst+1 at one instant for a new key,
//     rejected requests changing nothing, nodelay / delay=N / the default
//     delay, dry run, several zones (the first BUSY charges none).
//   - token_bucket: golang.org/x/time/rate Allow to the ns (its truncated
//     wait admits up to 1ns early) and Redis+Lua buckets.
//   - sliding_log and sliding_counter: the exact log and the two-counter
//     approximation (HAProxy freq_ctr, Cloudflare), counting admitted or all
//     requests.
//   - gcra: the generic cell rate algorithm as go-redis/redis_rate runs it
//     (lua.go allowN): emission interval T = period/rate_per_period,
//     tolerance τ = burst × T, a request passing iff TAT - t <= τ - T. Its
//     admissions are a token bucket's of burst tokens at rate/period.
//
// A Request carries a Key (the limiter instance whose state it uses: proxy,
// worker, downstream connection, descriptor value, user, nginx zone key)
// and, for Envoy, its descriptors. Model.NewSimulator gives an exact state
// machine (Simulate runs a slice): feed requests at their decision times,
// get admit/reject and, for nginx, the forwarding delay (ForwardTimes and
// PeakCount give the backend arrivals a leaky bucket produces). rlbench
// simulate and the property tests of this package use them.
//
// # Time: intervals, not instants
//
// The checker never knows when a request reached the limiter, only an
// interval: it cannot have been decided before it was sent nor after its
// response arrived, nor after the backend received it. A caller maps
// evidence to an Event as follows:
//
//	Key = Events.AddKey(the key of the limiter instance, as Request.Key)
//	Req = the request's position in the caller's evidence (Events.Name
//	      names it in violations and findings)
//	Lo = send_ns (the client's clock, taken just before the request was written)
//	Hi = send_ns + latency_ns (response fully read); for a request the backend
//	     received, also Hi <= recv_ns of its receipt (for nginx without nodelay
//	     the receipt comes after the delay, so it only bounds Hi loosely)
//	Outcome = Admitted (a receipt, or a response that came from upstream),
//	          Rejected (the limiter answered), ShadowRejected (passed, but the
//	          limiter logged that it would have rejected), Unknown (no response:
//	          it may or may not have reached the limiter, and may have passed)
//
// A request with no response gets Hi = its deadline (send + timeout). A
// clock offset between the clients and the limiter goes in Options.Widen.
// nginx decides on a cached millisecond clock of its own (monotonic, its
// ticks offset from the clients' clock by an unknown fraction of a ms): the
// checker turns each interval into [floor(Lo), floor(Hi)+1] milliseconds, so
// the truncation, the offset and the event-loop lag (which lies inside
// [send, send+latency]) are covered.
//
// For a limiter that does not enforce every rejection (nginx dry run, an RLS
// rule in shadow_mode, Envoy's filter_enforced below 100 %), give the
// limiter's own decision when the evidence shows it (ShadowRejected, and
// Options.ShadowVisible): otherwise an Admitted request may have been
// rejected by the limiter's state, and a must-reject one is reported under
// Result.Shadow (would have rejected), not as a violation.
//
// # Soundness: "either", never a false FAIL
//
// For each request Check computes must admit / must reject / either from the
// OTHER requests' observed outcomes and the model, over every schedule the
// intervals allow; a request's own outcome never enters its verdict. Exact
// checking over all orderings is NP-hard, so the checker uses relaxations
// that are sound (a violation it reports cannot happen in any schedule
// consistent with the model) and exact when intervals do not overlap near a
// decision boundary; where timing could decide either way the verdict is
// "either". A token bucket's level is L(t) = min over s of
// (C + F(s,t] - A(s,t]) (F the refill, A the admissions after s):
//
//   - must reject j iff an upper bound of L over j's interval is below the
//     threshold, using only admissions surely before j (Hi_i < Lo_j, and
//     after s) and the most refill up to Hi_j;
//   - must admit j iff a lower bound is at least the threshold, counting
//     every request that may have been charged before j (its interval meets
//     (s, Hi_j]; no response counts as possibly charged, never as surely)
//     and the least refill up to Lo_j.
//
// Both are a sweep with a segment tree over the candidate s points: O(n log
// n) per bucket. An admission judged over-admitted is not counted as a sure
// charge for later requests, and a rejection judged under-admitted counts
// as a possible charge for requests surely after it, so one wrong decision
// is reported once, not as a cascade. Fixed windows count a hit surely in a
// window only if its whole interval lies in it; sliding windows count hits
// surely or possibly inside (t-W, t]. A request of several buckets (Envoy
// descriptors and the default bucket) is surely rejected if one of them
// surely has no room and surely admitted if all surely have; a rejected
// request's charges of the buckets before the one that refused it are
// possible, not sure.
//
// Simultaneous bursts leave every request "either", so Check also checks
// counts: the admissions surely inside any window [a, b] must fit in
// C + F(a, b) (token buckets), limit (fixed window, sliding log span), and
// the admitted count of each bucket, window and the run must lie within the
// model's bounds over all schedules of the offered arrivals (Result.Buckets,
// WindowBounds, Total). The lower bound (a fresh bucket of C admits min(N, C)
// of N requests arriving together) makes a limiter that rejects everything
// FAIL. Findings name the excess admissions (latest possible arrivals) or
// the rejections that should have passed.
//
// Verdicts are relative to the other requests' outcomes: when a burst is
// admitted short, every rejected request of it had room given the others'
// outcomes and is named under-admitted, while the count finding gives the
// shortfall itself.
//
// What the checker leaves to "either" (sound, not exact): an Envoy wildcard
// descriptor with more distinct values than max_dynamic_descriptors (an
// eviction may refill a bucket at any time, so no upper bound is derived for
// it); an nginx key idle for 60 s or more in a zone with several keys (it
// may have been freed and come back full); the timing of Envoy's refill timer
// beyond its phase (a lagging timer is covered by Options.Widen); nginx with
// several workers, whose zones are not updated atomically across limit_req
// directives; the order of Envoy descriptors of equal fill rate, which Envoy
// leaves unspecified (both orders are allowed); an event whose key is not
// known (Event.KeyUnknown: built from a request attribute the evidence does
// not hold), which is a possible charge of every bucket and never judged.
//
// Result.Validity gives Jepsen's tri-valued verdict: invalid with reasons,
// valid, or unknown when nothing was observed. Result.Uncertainty reports
// the interval widths and how many "either" verdicts exact times would have
// decided.
package model
