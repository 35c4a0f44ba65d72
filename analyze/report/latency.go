package report

// Latency is the client-side latency of a scenario's requests by response
// class: over all targets, per target, per attack phase when the scenario
// has more than one, and per named flow of multi-flow attacks. A request's latency is requests.jsonl's
// latency_ns (evidence.Request.LatencyNs: from the send until the body was
// read, or until the error), taken from the Bundle's columns as EndNs − SentNs.
//
// Quantiles come from an HDR histogram (github.com/HdrHistogram/hdrhistogram-go)
// recording microseconds from 1 µs to 1 h with 3 significant digits, so a
// quantile is within 0.1% (or 1 µs) of the exact value; a latency above 1 h
// counts as 1 h in the quantiles. Max and mean are exact.
type Latency struct {
	// Classes holds one entry per class with requests, all targets together,
	// in class order (evidence.Class).
	Classes []ClassLatency `json:"classes"`
	// Targets holds the classes per target, sorted by target.
	Targets []TargetLatency `json:"targets"`
	// Phases holds the classes per attack phase, in send order; empty when
	// the scenario has a single phase.
	Phases []PhaseLatency `json:"phases"`
	// Flows holds the classes per named flow (evidence.Request.Flow), in
	// first-seen order; empty when no request names a flow.
	Flows []FlowLatency `json:"flows"`
	// RLS is the rate limit service call latency where the evidence gives it
	// (see RLSLatency); empty otherwise.
	RLS []RLSLatency `json:"rls"`
}

// ClassLatency summarises the latency of the requests of one class, in ns.
type ClassLatency struct {
	// Class is a class name (see the Class constants).
	Class string `json:"class"`
	// Count is the number of requests of the class.
	Count int `json:"count"`
	// P50Ns, P90Ns, P99Ns and P999Ns are the 50th, 90th, 99th and 99.9th
	// percentiles, ns (HDR histogram, 3 significant digits).
	P50Ns  int64 `json:"p50_ns"`
	P90Ns  int64 `json:"p90_ns"`
	P99Ns  int64 `json:"p99_ns"`
	P999Ns int64 `json:"p999_ns"`
	// MaxNs is the largest latency, exact, ns.
	MaxNs int64 `json:"max_ns"`
	// MeanNs is the mean latency, exact (rounded down), ns.
	MeanNs int64 `json:"mean_ns"`
}

// TargetLatency is the latency by class of the requests sent to one target.
type TargetLatency struct {
	// Target is the target (proxy) name.
	Target string `json:"target"`
	// Classes holds one entry per class with requests, in class order.
	Classes []ClassLatency `json:"classes"`
}

// PhaseLatency is the latency by class of the requests one attack phase sent.
type PhaseLatency struct {
	// Phase is the attack phase (plan step) name.
	Phase string `json:"phase"`
	// Classes holds one entry per class with requests, in class order.
	Classes []ClassLatency `json:"classes"`
}

// FlowLatency is the latency by class of the requests of one named flow.
type FlowLatency struct {
	// Flow is the flow's name.
	Flow string `json:"flow"`
	// Classes holds one entry per class with requests, in class order.
	Classes []ClassLatency `json:"classes"`
}
