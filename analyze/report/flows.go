package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FlowReport is one row of the per-flow table: the requests one flow of an
// attack (evidence.Request.Flow) sent and what passed every limiter.
type FlowReport struct {
	// Flow names the flow: its name, prefixed with its attack phase
	// ("phase/flow") when several phases have flows; an attack's unnamed
	// flow is named after its phase.
	Flow  string `json:"flow"`
	Phase string `json:"phase"`
	Sent  int    `json:"sent"`
	// Admitted counts the requests that passed every limiter (Classes.Passed).
	Admitted int `json:"admitted"`
	// AdmittedPct is 100 × Admitted / Sent.
	AdmittedPct float64 `json:"admitted_pct"`
	// ActiveNs runs from the flow's first send to its last send, ns.
	ActiveNs int64 `json:"active_ns"`
	// OfferedPerSec is (Sent-1) / active time: the flow's send rate; 0 when
	// the active time is 0 (one request, or all at once).
	OfferedPerSec float64 `json:"offered_per_sec"`
	// AdmittedPerSec is Admitted / active time (per second); 0 when the
	// active time is 0.
	AdmittedPerSec float64 `json:"admitted_per_sec"`
	// Keys are the buckets its requests used, "<limiter>: <bucket>", sorted.
	Keys []string `json:"keys"`
	// Model is the limiter models' bound on Admitted, summed over the
	// buckets the flow used at the last limiter of each request's path
	// when those buckets are the flow's alone and each request used one of
	// them; nil otherwise (see SharedWith). A plan's configured limits are
	// translated into limiter models (evidence.LimitSpec.Limiter), so they
	// bound flows the same way.
	Model *FlowBound `json:"model,omitempty"`
	// SharedWith names the other flows that used the same buckets (the flow
	// then has no bound of its own: the bucket's is in Keys).
	SharedWith []string `json:"shared_with,omitempty"`
}

// FlowBound is a model bound on one flow's admitted count.
type FlowBound struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// KeyReport is one row of the per-key table: one bucket (a limiter key,
// an Envoy descriptor bucket, an RLS counter) and the flows that used it.
type KeyReport struct {
	Limiter string `json:"limiter"`
	// Bucket is the model's bucket name (LimiterReport.Buckets).
	Bucket string   `json:"bucket"`
	Flows  []string `json:"flows"`
	// Sent counts the requests that used the bucket; Admitted those the
	// limiter admitted (observed), Unknown those without an outcome.
	Sent        int     `json:"sent"`
	Admitted    int     `json:"admitted"`
	Unknown     int     `json:"unknown"`
	AdmittedPct float64 `json:"admitted_pct"`
	// ActiveNs runs from the first to the last send of its requests.
	ActiveNs       int64   `json:"active_ns"`
	OfferedPerSec  float64 `json:"offered_per_sec"`
	AdmittedPerSec float64 `json:"admitted_per_sec"`
	// RatePerSec and Burst are the bucket's limit (model.BucketUse).
	RatePerSec float64 `json:"rate_per_sec"`
	Burst      float64 `json:"burst"`
	// Min..Max is the model's bound on the bucket's admissions.
	Min int `json:"min"`
	Max int `json:"max"`
}

// StarvedFlow is the starved finding: a flow whose offered rate stayed
// within its fair share of a shared bucket (the bucket's rate divided by
// the flows that used it) but which the bucket rejected, while other flows
// that sent above their share consumed it.
type StarvedFlow struct {
	Flow    string `json:"flow"`
	Limiter string `json:"limiter"`
	Bucket  string `json:"bucket"`
	// OfferedPerSec is the flow's send rate into the bucket; FairSharePerSec
	// the bucket's rate / the number of flows that used it.
	OfferedPerSec   float64 `json:"offered_per_sec"`
	FairSharePerSec float64 `json:"fair_share_per_sec"`
	// Sent and Rejected count the flow's requests at the bucket.
	Sent     int `json:"sent"`
	Rejected int `json:"rejected"`
	// ConsumedBy are the flows above their share, with what they got.
	ConsumedBy []FlowShare `json:"consumed_by"`
}

// FlowShare is one flow's use of a shared bucket.
type FlowShare struct {
	Flow          string  `json:"flow"`
	OfferedPerSec float64 `json:"offered_per_sec"`
	Admitted      int     `json:"admitted"`
}

// String renders the finding for check texts.
func (s StarvedFlow) String() string {
	var by []string
	for _, c := range s.ConsumedBy {
		by = append(by, fmt.Sprintf("%s (%s/s, admitted %d)", c.Flow, fmtRate(c.OfferedPerSec), c.Admitted))
	}
	return fmt.Sprintf("%s at %s/s within its fair share %s/s of %s %s: %d of %d rejected, the bucket consumed by %s",
		s.Flow, fmtRate(s.OfferedPerSec), fmtRate(s.FairSharePerSec), s.Limiter, s.Bucket, s.Rejected, s.Sent, strings.Join(by, ", "))
}

func fmtRate(v float64) string {
	if math.IsInf(v, 1) {
		return "all at once"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}
