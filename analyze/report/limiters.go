package report

import (
	"fmt"
	"strconv"
)

// Limiter check statuses (LimiterReport.Status).
const (
	// LimiterChecked: the model judged the requests that reached the limiter.
	LimiterChecked = "checked"
	// LimiterSuspended: every request that reached the limiter lies in a
	// fault window acting on it (or its recovery lag): nothing was judged.
	LimiterSuspended = "suspended"
	// LimiterNotChecked: the limiter could not be judged (Detail says why:
	// a bad RLS configuration, no connection recorded for a per-connection key).
	LimiterNotChecked = "not_checked"
)

// LimiterReport is the model check (model) of one limiter that
// scenario.json declares (or that its limits translate to): the requests
// that reached it, replayed through its model with each one's arrival
// known only within [send, min(response, receipt)].
type LimiterReport struct {
	Name    string   `json:"name"`
	Stage   string   `json:"stage"`
	Key     string   `json:"key"`
	Targets []string `json:"targets"`
	// Model names the semantic: the model kind, or "rls" with the rules matched.
	Model  string `json:"model"`
	Status string `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Offered counts the requests that reached the limiter (those an
	// earlier limiter rejected did not); Suspended those of them judged
	// unknown because they lie in a fault window acting on the limiter or in
	// its recovery lag; Zombies the RLS decisions that reached no request
	// (they count as hits, not as admissions).
	Offered   int `json:"offered"`
	Suspended int `json:"suspended"`
	Zombies   int `json:"zombies,omitempty"`
	// UnknownKey counts the offered requests whose bucket is unknown: their
	// descriptors (or nginx zone key) read a request header they sent
	// whose value the evidence does not hold (UnknownKeyHeaders,
	// lower-case): attack.json names it, scenario.json's request_headers
	// do not give it. The model judges them "either" and counts them as
	// possible hits of every bucket (model.Event.KeyUnknown).
	UnknownKey        int      `json:"unknown_key,omitempty"`
	UnknownKeyHeaders []string `json:"unknown_key_headers,omitempty"`
	// Admitted, Rejected and Unknown are the outcomes observed at the limiter.
	Admitted int `json:"admitted"`
	Rejected int `json:"rejected"`
	Unknown  int `json:"unknown"`
	// MustAdmit and MustReject count the requests the model decided.
	MustAdmit  int `json:"must_admit"`
	MustReject int `json:"must_reject"`
	// Total bounds the limiter's admitted count over every schedule the
	// intervals allow; Buckets per key (and, for Envoy, per descriptor
	// bucket); Windows per fixed window. Late RLS decisions (Zombies) are
	// in them as the hits they were: they took room in their window.
	Total   ModelBound   `json:"total"`
	Buckets []ModelBound `json:"buckets"`
	Windows []ModelBound `json:"windows"`
	// OverAdmitted are admissions the model says it must have rejected;
	// UnderAdmitted rejections it must have admitted; Shadow passes of a
	// limiter that does not enforce every rejection where the model says
	// reject (would have rejected). Lists hold at most SampleIDs; the counts
	// are exact.
	OverAdmitted       []RequestVerdict `json:"over_admitted"`
	OverAdmittedCount  int              `json:"over_admitted_count"`
	UnderAdmitted      []RequestVerdict `json:"under_admitted"`
	UnderAdmittedCount int              `json:"under_admitted_count"`
	Shadow             []RequestVerdict `json:"shadow"`
	ShadowCount        int              `json:"shadow_count"`
	// Findings are count findings that need no single culprit (too many
	// admissions surely inside one window or bucket, too few).
	Findings []string `json:"findings"`
	// Uncertainty is how wide the timing uncertainty was.
	Uncertainty ModelUncertainty `json:"uncertainty"`

	// Units counts the events judged (a request per counter it hit); the
	// checks read it, the JSON form does not carry it.
	Units int `json:"-"`
}

// ModelBound is the model's bound on one admitted count: a bucket (a key),
// a fixed window of it, or the whole limiter (Bucket empty).
type ModelBound struct {
	Bucket string `json:"bucket,omitempty"`
	// FromNs and ToNs bound a window (unix ns); 0 for a bucket or a total.
	FromNs int64 `json:"from_ns,omitempty"`
	ToNs   int64 `json:"to_ns,omitempty"`
	// Offered are the model's events that may have hit it: the requests
	// that may have reached it (one per counter a request hit at an RLS,
	// and per epoch when it was in flight across a state reset) and the
	// RLS decisions that reached no request (LimiterReport.Zombies), which
	// counted without admitting anyone; so it may exceed the requests.
	Offered int `json:"offered"`
	// Min..Max is what the model admits of them over every schedule.
	Min int `json:"min"`
	Max int `json:"max"`
	// Admitted are the observed admissions surely in it; Possible the
	// admissions and requests without outcome that may be in it.
	Admitted int `json:"admitted"`
	Possible int `json:"possible"`
}

// Holds reports whether the observation fits: no more sure admissions
// than Max, no fewer possible ones than Min.
func (b ModelBound) Holds() bool { return b.Admitted <= b.Max && b.Possible >= b.Min }

// String renders "admitted N (model MIN..MAX)".
func (b ModelBound) String() string {
	got := strconv.Itoa(b.Admitted)
	if b.Possible != b.Admitted {
		got += ".." + strconv.Itoa(b.Possible)
	}
	return fmt.Sprintf("admitted %s (model %d..%d)", got, b.Min, b.Max)
}

// RequestVerdict is the model's verdict on one request that contradicts it.
type RequestVerdict struct {
	ID string `json:"id"`
	// Model is "must admit" or "must reject"; Observed "admitted" or "rejected".
	Model    string `json:"model"`
	Observed string `json:"observed"`
	Bucket   string `json:"bucket"`
	Why      string `json:"why"`
}

// ModelUncertainty is model.Uncertainty in ns.
type ModelUncertainty struct {
	MaxWidthNs    int64 `json:"max_width_ns"`
	MedianWidthNs int64 `json:"median_width_ns"`
	P99WidthNs    int64 `json:"p99_width_ns"`
	// Either counts the requests the model left undecided; EitherFromTiming
	// those of them exact arrival times would have decided.
	Either           int `json:"either"`
	EitherFromTiming int `json:"either_from_timing"`
	// WidenNs is how much every interval was widened on each side for
	// clock offsets: the limiter's clock_skew_ns plus, in a merged run,
	// the shards' clock offset bound (ShardsReport.OffsetBoundNs).
	WidenNs int64 `json:"widen_ns,omitempty"`
}
