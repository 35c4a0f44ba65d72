package report

import (
	"time"
)

// ArrivalWindows are the sliding windows every arrival section reports a
// peak for: 1 ms, 10 ms, 100 ms and 1 s.
var ArrivalWindows = []time.Duration{time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second}

// Arrivals is what the backend really saw, in time: the receipts' arrival
// peaks per sliding window and their inter-arrival distribution, the same
// for the admissions the clients saw, and, for each declared limiter with a
// model, the peak its semantic predicts for the clients' sends and the most
// it lets through in a window over every schedule. A limit can hold on
// average and still let a burst through at once: a token bucket that sat
// idle forwards its capacity in one go, a leaky bucket (nginx limit_req
// without nodelay) at its rate.
type Arrivals struct {
	// Receipts are every receipt's recv_ns (the backend's clock).
	Receipts ArrivalStats `json:"receipts"`
	// Admissions are the admitted (2xx) responses as the clients saw them:
	// each at its send time plus its latency (the clients' clock).
	Admissions ArrivalStats `json:"admissions"`
	// Targets splits both by the attack target the requests were sent to
	// (a receipt by its ID's target), sorted by target; empty with one target.
	Targets []TargetArrivals `json:"targets"`
	// Endpoints splits the receipts by the backend endpoint that received
	// them (Receipt.Endpoint), sorted; empty unless receipts name several.
	Endpoints []EndpointArrivals `json:"endpoints"`
	// Expected has one entry per declared limiter whose model bounds its
	// peaks (see model.PeakBound).
	Expected []ExpectedPeaks `json:"expected"`
	// Forwards has one entry per target whose limiter logged its own
	// forward times (nginx's access log), sorted by target; absent when
	// none did.
	Forwards []ForwardArrivals `json:"forwards,omitempty"`
	// Senders are the arrivals of each shard of a sharded attack (rlbench
	// attack --senders N or --shard K/N, merged; a plan's attack step with
	// senders), in shard order; absent for an attack of one process.
	Senders []SenderArrivals `json:"senders,omitempty"`
}

// ForwardArrivals are one limiter's forwards as its own log times them,
// and the path from it to the backend.
type ForwardArrivals struct {
	// Target is the attack target whose limiter logged them; Source the
	// log read, relative to the scenario directory.
	Target string `json:"target"`
	Source string `json:"source"`
	// ResolutionNs is the resolution of the logged times, ns (nginx: 1 ms).
	ResolutionNs int64 `json:"resolution_ns"`
	// Forwards are the figures of the forward times, by the limiter's
	// clock (nginx: $msec minus the tries' $upstream_response_time).
	Forwards ArrivalStats `json:"forwards"`
	// Unplaced counts the target's received requests that have no forward
	// time in Source (the limiter's forwards are then incomplete).
	Unplaced int `json:"unplaced"`
	// PathJoined counts the requests whose earliest receipt joins a
	// forward; PathLagMinNs and PathLagMaxNs bound the receipt minus the
	// forward time over them, ns (the clocks' offset included: their
	// difference is the path's measured jitter).
	PathJoined   int   `json:"path_joined"`
	PathLagMinNs int64 `json:"path_lag_min_ns"`
	PathLagMaxNs int64 `json:"path_lag_max_ns"`
}

// ArrivalStats are the arrival figures of one set of times.
type ArrivalStats struct {
	// Count is the number of arrivals.
	Count int `json:"count"`
	// FirstNs and LastNs are the first and last arrival, unix ns (0 when none).
	FirstNs int64 `json:"first_ns"`
	LastNs  int64 `json:"last_ns"`
	// Peaks has one entry per window (ArrivalWindows, then the windows the
	// expectations name), in increasing window order.
	Peaks []WindowPeak `json:"peaks"`
	// InterArrival is the distribution of the gaps between consecutive
	// arrivals (in time order); Count is one less than the arrivals.
	InterArrival GapStats `json:"inter_arrival"`
}

// WindowPeak is the fullest half-open sliding window [t, t+window) of a
// set of arrivals, computed exactly (model.PeakAt over the sorted times).
type WindowPeak struct {
	// WindowNs is the window's length, ns.
	WindowNs int64 `json:"window_ns"`
	// Peak is the most arrivals in any such window.
	Peak int `json:"peak"`
	// AtNs is the first arrival of the first fullest window, unix ns.
	AtNs int64 `json:"at_ns"`
	// RatePerSec is Peak over the window: the instant rate the peak implies,
	// per second.
	RatePerSec float64 `json:"rate_per_sec"`
}

// GapStats summarises inter-arrival gaps, ns. Quantiles come from the same
// HDR histogram as the latency (1 µs resolution, 3 significant digits,
// clamped to the exact minimum and maximum); Min, Max and Mean are exact.
type GapStats struct {
	Count  int   `json:"count"`
	MinNs  int64 `json:"min_ns"`
	P50Ns  int64 `json:"p50_ns"`
	P90Ns  int64 `json:"p90_ns"`
	P99Ns  int64 `json:"p99_ns"`
	P999Ns int64 `json:"p999_ns"`
	MaxNs  int64 `json:"max_ns"`
	MeanNs int64 `json:"mean_ns"`
}

// TargetArrivals are the arrivals of the requests sent to one target.
type TargetArrivals struct {
	Target     string       `json:"target"`
	Receipts   ArrivalStats `json:"receipts"`
	Admissions ArrivalStats `json:"admissions"`
}

// SenderArrivals are the requests of one shard (one sender process) of a
// merged attack: when it sent them and when the backend received them.
type SenderArrivals struct {
	// Shard is K of the shard K/N (evidence.MergeShard.Index).
	Shard int `json:"shard"`
	// Phase is the plan step whose sender it was ("" for a merged shard
	// set).
	Phase string `json:"phase,omitempty"`
	// Requests is its lines.
	Requests int `json:"requests"`
	// FirstSendNs and LastSendNs are its first and last send (unix ns, the
	// sender's clock; 0 when it sent none); SendWidthNs their difference.
	FirstSendNs int64 `json:"first_send_ns"`
	LastSendNs  int64 `json:"last_send_ns"`
	SendWidthNs int64 `json:"send_width_ns"`
	// Receipts are the backend's receipts of its requests; LandedWidthNs is
	// their last minus their first (0 with fewer than two).
	Receipts      ArrivalStats `json:"receipts"`
	LandedWidthNs int64        `json:"landed_width_ns"`
	// AtLimiter is the number of its sent requests whose arrival the
	// limiter's own logs record (the sources of the landed_within check:
	// an Envoy or lab proxy access log's entry, else nginx's access log
	// record, to the ms); LimiterWidthNs is the widest, over those logs'
	// clocks, of its last arrival minus its first, in ns (on nginx's 1 ms
	// grid an upper bound: records k ms apart give (k+1) ms - 1 ns). Both
	// are 0 (absent) without such logs. Unlike LandedWidthNs it counts the
	// requests the limiter rejected.
	AtLimiter      int   `json:"at_limiter,omitempty"`
	LimiterWidthNs int64 `json:"limiter_width_ns,omitempty"`
}

// EndpointArrivals are the receipts of one backend endpoint.
type EndpointArrivals struct {
	Endpoint string       `json:"endpoint"`
	Receipts ArrivalStats `json:"receipts"`
}

// ExpectedPeaks is what one declared limiter predicts for the backend's
// peaks (model): a leaky bucket smooths, a token bucket does not.
type ExpectedPeaks struct {
	// Limiter names the declared limiter; Model says its semantic.
	Limiter string `json:"limiter"`
	Model   string `json:"model"`
	// Targets are the attack targets whose requests meet it (empty: all).
	Targets []string `json:"targets"`
	// Instances is the number of independent states (one per target for a
	// per-proxy bucket, 1 when shared): bounds add up over them.
	Instances int `json:"instances"`
	// Windows has one entry per window of ArrivalStats.Peaks.
	Windows []ExpectedWindow `json:"windows"`
}

// ExpectedWindow is a limiter's prediction for one window length.
type ExpectedWindow struct {
	WindowNs int64 `json:"window_ns"`
	// Simulated is the peak of the model's forward times (model.Simulate,
	// ForwardTimes, PeakCount) with every request decided at its send time:
	// what the backend would see if forwarding took no time.
	Simulated int `json:"simulated"`
	// Bound is model.PeakBound times Instances: the most the limiter lets
	// through in such a window over every arrival schedule.
	Bound int `json:"bound"`
}

// PeakOf returns the peak of st for window w.
func (st *ArrivalStats) PeakOf(w time.Duration) (WindowPeak, bool) {
	for _, p := range st.Peaks {
		if p.WindowNs == int64(w) {
			return p, true
		}
	}
	return WindowPeak{}, false
}
