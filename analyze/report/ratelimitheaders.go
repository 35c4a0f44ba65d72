package report

// RateHeaderReport is rate_limit_headers of the report: the x-ratelimit-*
// and RateLimit-* response headers checked against the limiters.
type RateHeaderReport struct {
	// Responses counts the responses with such headers; Checked those
	// attributed to one limiter; Unattributed those no declared limiter
	// could have set (or several could).
	Responses    int `json:"responses"`
	Checked      int `json:"checked"`
	Unattributed int `json:"unattributed"`
	// Mismatches are the findings, one per kind.
	Mismatches []RateHeaderMismatch `json:"mismatches"`
}

// RateHeaderMismatch is one kind of header finding with its requests.
type RateHeaderMismatch struct {
	Kind  string `json:"kind"`
	Count int    `json:"count"`
	// IDs holds at most SampleIDs of the responses; Detail describes the first.
	IDs    []string `json:"ids"`
	Detail string   `json:"detail"`
}
