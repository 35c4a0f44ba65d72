package report

// Ways a repeated receipt of one ID is explained as a proxy retry
// (Amplification.ExplainedBy).
const (
	// ExplainedByAttemptCount: the receipts carry distinct
	// x-envoy-attempt-count values (Envoy's router numbers every upstream
	// try; retry_policy).
	ExplainedByAttemptCount = "x-envoy-attempt-count"
	// ExplainedByNginxTries: nginx's $upstream_addr logged at least that many
	// server tries for the request (proxy_next_upstream).
	ExplainedByNginxTries = "nginx $upstream_addr"
)

// Amplification is what the backend received per request that passed the
// limiter: upstream attempts, from the receipts (one per attempt that
// reached it), split into proxy retries, which the receipts' attempt counts
// or nginx's upstream lists explain, and re-sends by the client, which
// nothing explains (rlbench never re-sends an ID, so any is a finding).
type Amplification struct {
	// Passed counts the requests that passed the limiter: with a receipt,
	// admitted (2xx), or logged by nginx as passed.
	Passed int `json:"passed"`
	// Attempts counts the receipts of those requests.
	Attempts int `json:"attempts"`
	// Factor is Attempts / Passed (0 when nothing passed).
	Factor float64 `json:"factor"`
	// MaxAttempts is the most receipts of one request.
	MaxAttempts int `json:"max_attempts"`
	// ByAttempts[k] is the number of passed requests with k receipts.
	ByAttempts []int `json:"by_attempts"`
	// ProxyRetries counts the receipts beyond a request's first that the
	// evidence explains; ClientResends those it does not.
	ProxyRetries  int `json:"proxy_retries"`
	ClientResends int `json:"client_resends"`
	// ExplainedBy counts the explained retries by evidence (the
	// ExplainedBy* constants).
	ExplainedBy map[string]int `json:"explained_by"`
	// Windows gives the factor of the requests sent inside each fault
	// window and, last, of those sent outside every window; empty without
	// fault windows.
	Windows []AmplificationWindow `json:"windows"`
}

// AmplificationWindow is the amplification of the requests sent in one
// fault window (or outside all of them: Name "outside fault windows").
type AmplificationWindow struct {
	Name     string  `json:"name"`
	Target   string  `json:"target,omitempty"`
	BeginNs  int64   `json:"begin_ns,omitempty"`
	EndNs    int64   `json:"end_ns,omitempty"`
	Passed   int     `json:"passed"`
	Attempts int     `json:"attempts"`
	Factor   float64 `json:"factor"`
}
