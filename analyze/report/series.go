package report

// Limits of the Series' size, whatever the number of requests.
const (
	// MaxBins is the most bins a Series has.
	MaxBins = 120
	// MaxLatencyPoints is the most points of one LatencySeries.
	MaxLatencyPoints = 1000
	// BoundConfigured names the configured limiters' bound line.
	BoundConfigured = "configured bound"
)

// DistributionPercents are the percents of a LatencyDistribution's points:
// dense towards the tail, as HdrHistogram percentile plots.
var DistributionPercents = []float64{0, 10, 20, 30, 40, 50, 55, 60, 65, 70, 75, 80, 85, 90, 92.5, 95, 96, 97, 98, 99, 99.5, 99.9, 99.95, 99.99, 99.999, 100}

// Series is a scenario's time series for plots (the HTML report), computed
// by Judge from the Bundle's columns when Options.Series is set (nil
// otherwise). Every count series has Bins entries: entry k counts what
// happened in [StartNs + k×BinNs, StartNs + (k+1)×BinNs). The axis covers the
// first send (or fault, or receipt) to the last response (or fault end, or
// receipt), so requests, receipts and FaultWindows share it. A large run is
// downsampled: counts are aggregated per bin, and the per-request latency
// points by LTTB (vegeta's lib/lttb) to at most MaxLatencyPoints per line.
type Series struct {
	// StartNs is the axis origin, unix ns (a multiple of BinNs).
	StartNs int64 `json:"start_ns"`
	// BinNs is the bin width, ns: 1, 2 or 5 × 10^k ns, chosen from the run's
	// length so that there are at most MaxBins bins.
	BinNs int64 `json:"bin_ns"`
	// Bins is the number of bins.
	Bins int `json:"bins"`
	// Targets are the per-target series, sorted by target.
	Targets []TargetSeries `json:"targets"`
	// Receipts counts every backend receipt per bin by its receive time,
	// those without an ID or with an ID never sent included.
	Receipts []int `json:"receipts"`
	// AdmittedCumulative is the number of admitted requests (all targets)
	// sent before each bin's end.
	AdmittedCumulative []int `json:"admitted_cumulative"`
	// Bounds are cumulative bound lines to compare AdmittedCumulative with:
	// entry k is the most admissions allowed from StartNs to the end of bin
	// k. The configured limiters' bound (Bound) is the line named
	// BoundConfigured; other producers (a model's bound per window or key)
	// add their own lines with their own names.
	Bounds []BoundSeries `json:"bounds"`
	// Latency holds, per target and class, each request's latency against
	// its send time, downsampled by LTTB.
	Latency []LatencySeries `json:"latency"`
	// Distributions are the latency percentile curves per target and class
	// (from the same HDR histograms as Latency).
	Distributions []LatencyDistribution `json:"distributions"`
}

// TargetSeries counts one target's requests per bin by their send time.
type TargetSeries struct {
	// Target is the target (proxy) name.
	Target string `json:"target"`
	// Admitted counts 2xx responses.
	Admitted []int `json:"admitted"`
	// Rejected counts responses a limiter produced without forwarding the
	// request (evidence.Class.ProxyRejected: local 429, global 429, RLS-error 500).
	Rejected []int `json:"rejected"`
	// Errors counts every other outcome: other 4xx/5xx, 1xx/3xx and no response.
	Errors []int `json:"errors"`
	// Receipts counts the backend receipts of this target's IDs per bin by
	// their receive time.
	Receipts []int `json:"receipts"`
}

// BoundSeries is one cumulative bound line (see Series.Bounds).
type BoundSeries struct {
	// Name says whose bound it is (BoundConfigured for the configured limiters).
	Name string `json:"name"`
	// Allowed has Series.Bins entries.
	Allowed []int `json:"allowed"`
}

// LatencySeries is one line of per-request latency points of a target and class.
type LatencySeries struct {
	// Target is the target (proxy) name.
	Target string `json:"target"`
	// Class is the response class name (see the Class constants).
	Class string `json:"class"`
	// Count is the number of requests the line stands for (before downsampling).
	Count int `json:"count"`
	// OffsetNs is each point's send time minus Series.StartNs, ns, increasing.
	OffsetNs []int64 `json:"offset_ns"`
	// LatencyNs is each point's latency, ns.
	LatencyNs []int64 `json:"latency_ns"`
}

// LatencyDistribution is a latency percentile curve: the latency at each of
// DistributionPercents.
type LatencyDistribution struct {
	// Target is the target (proxy) name.
	Target string `json:"target"`
	// Class is the response class name (see the Class constants).
	Class string `json:"class"`
	// Count is the number of requests of the curve.
	Count int `json:"count"`
	// Percents are the percents (0..100) of the curve's points.
	Percents []float64 `json:"percents"`
	// LatencyNs is the latency at each percent, ns.
	LatencyNs []int64 `json:"latency_ns"`
}
