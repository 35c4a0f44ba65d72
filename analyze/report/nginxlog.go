package report

import (
	collectnginx "github.com/rlbench/rlbench/collect/nginx"
)

// NginxReport is what the nginx proxies' own evidence says (nginx/<proxy>/:
// the JSON access log with $limit_req_status and the $upstream_* tries,
// stub_status before and after), joined to the requests by X-Rlbench-Id:
// who produced each response, as analyze/accesslog.go does for Envoy's
// access logs.
type NginxReport struct {
	// Proxies has one entry per nginx proxy, sorted by name.
	Proxies []NginxProxyReport `json:"proxies"`
	// Producers counts the joined records by producer, in envoyrec.Producer's
	// names: local_limiter (limit_req REJECTED: nginx answered
	// limit_req_status itself), backend (the last upstream try answered the
	// status the client got), upstream_failure (nginx's own 502 or 504: every
	// try failed, or no live upstreams), other.
	Producers map[string]int `json:"producers"`
	// Rejected is the number of requests nginx's limit_req rejected
	// (REJECTED, not dry run); Reclassified how many of them the clients'
	// marks alone left as other_4xx or other_5xx and the log made local_429.
	Rejected     int `json:"rejected"`
	Reclassified int `json:"reclassified"`
	// Unjoined counts records whose ID matches no request of the scenario.
	Unjoined int `json:"unjoined"`
	// Missing lists (up to SampleIDs) requests sent to an nginx proxy that
	// got a response but have no record; MissingCount is their number.
	Missing      []string `json:"missing"`
	MissingCount int      `json:"missing_count"`
	// Several lists (up to SampleIDs) requests with more than one record
	// (sent twice); SeveralCount is their number.
	Several      []string `json:"several"`
	SeveralCount int      `json:"several_count"`
	// Disagreements lists (up to SampleIDs) records whose status or producer
	// disagrees with what the client got; DisagreementCount is their number.
	Disagreements     []string `json:"disagreements"`
	DisagreementCount int      `json:"disagreement_count"`
}

// NginxProxyReport is one nginx proxy's access log and stub_status.
type NginxProxyReport struct {
	Proxy string `json:"proxy"`
	// File is the access log read, relative to the scenario directory.
	File string `json:"file"`
	// Records is the number of access log records.
	Records int `json:"records"`
	// ByLimitReqStatus counts the records by $limit_req_status
	// (nginxrec.LimitReq*; "none" when no limit_req ran).
	ByLimitReqStatus map[string]int `json:"by_limit_req_status"`
	// ByStatus counts the records by $status.
	ByStatus map[string]int `json:"by_status"`
	// Proxied counts records with an upstream try, Retried those with
	// several (proxy_next_upstream), Tries and ServerTries the tries.
	Proxied     int `json:"proxied"`
	Retried     int `json:"retried"`
	Tries       int `json:"tries"`
	ServerTries int `json:"server_tries"`
	// StubStatus is the stub_status delta (after − before); nil without both
	// snapshots or when a counter went down.
	StubStatus *collectnginx.StubStatusDelta `json:"stub_status,omitempty"`
	// StubStatusMissing names the stub_status snapshots missing from their
	// pair (evidence.NginxEvidence.StubStatusMissing): the delta, and the
	// check that compares it with the access log, are unknown.
	StubStatusMissing []string `json:"stub_status_missing,omitempty"`
}
