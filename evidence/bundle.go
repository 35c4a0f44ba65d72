package evidence

import (
	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/evidence/nscol"
)

// Bundle is the evidence of a scenario directory, or of a run directory and
// its scenario directories, in memory (see Load).
type Bundle struct {
	// Dir is the directory as given to Load; Root is it with symlinks
	// resolved (<root>/latest is a link). Paths in Problems and in every
	// Scenario's Path are under Root.
	Dir  string `json:"dir"`
	Root string `json:"root"`
	// Manifest is manifest.json of a run directory, nil for a directory
	// without one.
	Manifest *Manifest `json:"manifest,omitempty"`
	// Scenarios are the scenario directories found, sorted by path.
	Scenarios []*ScenarioEvidence `json:"scenarios"`
	// Missing lists, cleaned and in manifest order, the manifest's
	// scenario_dirs that are not in the run directory.
	Missing []string `json:"missing"`
	// Problems are problems of the run directory itself: a manifest.json
	// that cannot be read or does not decode (cut short by a runner killed
	// while writing it, or malformed), naming the file and, where the
	// decoder gives one, the line. The scenario directories the run should
	// hold are then unknown: analyze reports the run incomplete (NOT_RUN).
	// Empty for a scenario directory and a readable manifest.
	Problems []Problem `json:"problems"`
}

// Problem is evidence that could not be read: a missing, unreadable or
// malformed file. Msg names the file (and line); File is the file-name
// constant of the part of the layout it concerns (ScenarioFile,
// RequestsFile, StatsDir, AccessLogDir, ...).
type Problem struct {
	File string `json:"file"`
	Msg  string `json:"msg"`
}

// ScenarioEvidence is the evidence of one scenario directory.
type ScenarioEvidence struct {
	// Dir is the scenario directory relative to the Bundle's Root ("." when
	// Load was given the scenario directory itself); Path is Root joined
	// with Dir, the prefix of every file named in Problems.
	Dir  string `json:"dir"`
	Path string `json:"path"`
	// InRun is true when the directory belongs to a run directory (one with
	// manifest.json): it must then have a valid scenario.json.
	InRun bool `json:"in_run"`
	// Scenario is scenario.json; HasScenario tells whether it was present
	// and valid (schema ScenarioSchema and a name).
	Scenario    Scenario `json:"scenario"`
	HasScenario bool     `json:"has_scenario"`
	// NotRun is true when the NOT_RUN marker is present; NotRunReason is its text.
	NotRun       bool   `json:"not_run"`
	NotRunReason string `json:"not_run_reason,omitempty"`
	// Attack is attack.json; nil when missing or malformed.
	Attack *Attack `json:"attack,omitempty"`
	// HasRequests is false when requests.jsonl does not exist.
	HasRequests bool     `json:"has_requests"`
	Requests    Requests `json:"-"`
	Receipts    Receipts `json:"-"`
	// Faults is faults.jsonl in file order (nil when absent).
	Faults []Fault `json:"faults"`
	// Decisions is rls/decisions.jsonl in file order; HasDecisions is false
	// when the file does not exist.
	Decisions    []Decision `json:"decisions"`
	HasDecisions bool       `json:"has_decisions"`
	// Stats holds the before and after snapshots of every proxy named in
	// scenario.json or with a <proxy>.before.json or <proxy>.after.json under
	// stats/, sorted by proxy.
	Stats []ProxySnapshots `json:"stats"`
	// AccessLogs are the accesslog/*.log files, sorted by name.
	AccessLogs []AccessLog `json:"access_logs"`
	// RLSLog is true when rls/rls.log exists, RLSParsedLog when rls/log.json
	// does: either means the scenario ran on the real envoyproxy/ratelimit.
	RLSLog       bool `json:"rls_log"`
	RLSParsedLog bool `json:"rls_parsed_log"`
	// RLSMetrics are the rls/metrics.*.json files, sorted by file name; one
	// that does not decode has only Label and Error.
	RLSMetrics []RLSMetrics `json:"rls_metrics"`
	// LimitReq maps a request (index in Requests) to the $limit_req_status
	// nginx logged for it (nginxrec.LimitReq*: PASSED, DELAYED,
	// REJECTED, DELAYED_DRY_RUN, REJECTED_DRY_RUN), from
	// nginx/<proxy>/access.jsonl; nil without such files.
	LimitReq map[int32]string `json:"-"`
	// RLSConfigLoads are the configuration loads of the RLS log, from
	// rls/log.json (config_loads); nil without that file.
	RLSConfigLoads []RLSConfigLoad `json:"rls_config_loads,omitempty"`
	// RLSPendingLookups counts the RLS log's cache lookups that never got
	// their answer (calls hung on a dead Redis, gRPC or /json), from
	// rls/log.json (pending_lookups); -1 without that file.
	RLSPendingLookups int `json:"rls_pending_lookups"`
	// Nginx holds the nginx/<proxy>/ evidence of every nginx proxy, sorted by proxy.
	Nginx []NginxEvidence `json:"nginx"`
	// HAProxy holds the haproxy/<proxy>/ evidence of every HAProxy proxy, sorted by proxy; nil without any.
	HAProxy []HAProxyEvidence `json:"haproxy,omitempty"`
	// Merge is merge.json of a directory written by merge.Merge (issue 15: the
	// shards of one attack joined); nil otherwise. Its problems are
	// Problems of MergeFile.
	Merge *MergeRecord `json:"merge,omitempty"`
	// Harness is harness.json, what rlbench measured of its own host while
	// the scenario ran; nil when the file is absent (evidence of an earlier
	// release) or malformed (a Problem of HarnessFile).
	Harness *Harness `json:"harness,omitempty"`
	// Problems lists the evidence that could not be read, in layout order.
	Problems []Problem `json:"problems"`
}

// ProxySnapshots are one proxy's stats snapshots (evidence/envoyrec.Snapshot);
// a nil snapshot has its reason in BeforeErr or AfterErr.
type ProxySnapshots struct {
	Proxy     string             `json:"proxy"`
	Before    *envoyrec.Snapshot `json:"before,omitempty"`
	After     *envoyrec.Snapshot `json:"after,omitempty"`
	BeforeErr string             `json:"before_err,omitempty"`
	AfterErr  string             `json:"after_err,omitempty"`
}

// AccessLog is one parsed accesslog/<proxy>.log.
type AccessLog struct {
	// Proxy is the file name minus ".log"; File is AccessLogFile(Proxy).
	Proxy   string                    `json:"proxy"`
	File    string                    `json:"file"`
	Entries []envoyrec.AccessLogEntry `json:"entries"`
}

// Requests are the request lines of a scenario in columns, in file order,
// keeping what judging needs: the ID, target, phase, flow, URL, connection, send
// and end times, status code, class and rate-limit headers. Index i of
// every column is the i-th request.
type Requests struct {
	IDs IDTable
	// Target and Phase index Targets and Phases (names in first-seen order).
	// Phase, Flow and URL are nil while every request's index is 0 (one
	// phase, flow or URL, as most runs have: 8 bytes a request less): read
	// them with PhaseAt, FlowAt and URLAt.
	Target  []uint16
	Targets []string
	Phase   []uint16
	Phases  []string
	// Flow indexes Flows (Request.Flow, "" for an unnamed flow).
	Flow  []uint16
	Flows []string
	// URL indexes URLs (Request.URL, first-seen order).
	URL  []uint32
	URLs []string
	// Conn indexes Conns (Request.Conn; index 0 is "", not recorded); nil
	// while no request recorded a connection (use ConnOf).
	Conn  []uint32
	Conns []string
	// SentNs and EndNs (SentNs + LatencyNs) are unix ns, about 4 bytes a
	// request each (nscol.Column).
	SentNs nscol.Column
	EndNs  nscol.Column
	// Code is the HTTP status, 0 for no response.
	Code  []uint16
	Class []Class
	// Rate holds the parsed rate-limit headers of the responses that had
	// any, in request order (sparse: RateHeaders.Request is the index).
	Rate []RateHeaders
	// NotSent are the indexes, increasing, of the requests recorded with
	// not_sent (Request.NotSent: they never left the client).
	NotSent []int32

	targetIdx map[string]uint16
	phaseIdx  map[string]uint16
	flowIdx   map[string]uint16
	urlIdx    map[string]uint32
	connIdx   map[string]uint32
}

// Len is the number of requests.
func (r *Requests) Len() int { return r.SentNs.Len() }

// Add appends a request and returns its index, or the index of the request
// that already has its ID and false (the request is then not added).
func (r *Requests) Add(q *Request) (int, bool) { return r.AddClassified(q, nil) }

// AddClassified is Add with the request classified by c (nil: the built-in
// marks only).
func (r *Requests) AddClassified(q *Request, c *Classifier) (int, bool) {
	i, ok := r.add([]byte(q.ID), q.Target, q.Phase, q.Flow, q.URL, q.Conn, q.SentNs, q.SentNs+q.LatencyNs, q.Code, c.ClassifyRequest(q))
	if ok {
		if q.NotSent {
			r.NotSent = append(r.NotSent, int32(i))
		}
		if h, has := ParseRateHeaders(q.header); has {
			h.Request = int32(i)
			r.Rate = append(r.Rate, h)
		}
	}
	return i, ok
}

func (q *Request) header(name string) (string, bool) {
	v, ok := q.Headers[name]
	return v, ok
}

func (r *Requests) add(id []byte, target, phase, flow, url, conn string, sent, end int64, code int, c Class) (int, bool) {
	if prev, dup := r.IDs.insert(id); dup {
		return prev, false
	}
	r.Target = append(r.Target, intern(&r.targetIdx, &r.Targets, target))
	r.appendIndexes(intern(&r.phaseIdx, &r.Phases, phase), intern(&r.flowIdx, &r.Flows, flow), intern32(&r.urlIdx, &r.URLs, url), r.connIndex(conn))
	r.SentNs.Add(sent)
	r.EndNs.Add(end)
	r.Code = append(r.Code, uint16(min(max(code, 0), 65535)))
	r.Class = append(r.Class, c)
	return r.Len() - 1, true
}

// connIndex interns a connection name; "" is always index 0.
func (r *Requests) connIndex(conn string) uint32 {
	if len(r.Conns) == 0 {
		intern32(&r.connIdx, &r.Conns, "")
	}
	return intern32(&r.connIdx, &r.Conns, conn)
}

// appendIndexes appends the next request's phase, flow, URL and
// connection indexes (call it before SentNs grows).
func (r *Requests) appendIndexes(phase, flow uint16, url, conn uint32) {
	n, c := r.Len(), max(cap(r.Code), r.Len()+1)
	appendLazy(&r.Phase, phase, n, c)
	appendLazy(&r.Flow, flow, n, c)
	appendLazy(&r.URL, url, n, c)
	appendLazy(&r.Conn, conn, n, c)
}

// appendLazy appends v to the column *col of n values (capacity c when
// it is allocated): a column stays nil while all its values are 0, and is
// allocated, its n zeros first, at the first other value.
func appendLazy[T uint16 | uint32](col *[]T, v T, n, c int) {
	if v == 0 && *col == nil {
		return
	}
	if *col == nil {
		*col = make([]T, n, c)
	}
	*col = append(*col, v)
}

// PhaseAt is request i's index in Phases (0 while Phase is nil, or i out
// of range).
func (r *Requests) PhaseAt(i int) uint16 { return lazyAt(r.Phase, i) }

// FlowAt is request i's index in Flows (0 while Flow is nil, or i out of
// range).
func (r *Requests) FlowAt(i int) uint16 { return lazyAt(r.Flow, i) }

// FlowOf is request i's index in Flows and true, or false when the
// requests name no flow (Flows empty: an attack without flows) or the
// index is not one of Flows.
func (r *Requests) FlowOf(i int) (uint16, bool) {
	f := r.FlowAt(i)
	return f, int(f) < len(r.Flows)
}

// URLAt is request i's index in URLs (0 while URL is nil, or i out of
// range).
func (r *Requests) URLAt(i int) uint32 { return lazyAt(r.URL, i) }

// growLazy makes room for n values in all in the column *col once it is
// allocated (appendLazy); a nil column stays nil.
func growLazy[T uint16 | uint32](col *[]T, n int) {
	if *col != nil {
		*col = growTo(*col, n)
	}
}

func lazyAt[T uint16 | uint32](col []T, i int) T {
	if i >= 0 && i < len(col) {
		return col[i]
	}
	return 0
}

// received reclassifies the requests the backend has a receipt of
// (Class.Received): a 4xx or 5xx of unknown origin came from the backend.
func (r *Requests) received(recs *Receipts) {
	for _, i := range recs.Request {
		if i >= 0 && int(i) < r.Len() {
			r.Class[i] = r.Class[i].Received(int(r.Code[i]))
		}
	}
}

// ConnOf returns Request.Conn of request i ("" when not recorded).
func (r *Requests) ConnOf(i int) string {
	if i < len(r.Conn) && int(r.Conn[i]) < len(r.Conns) {
		return r.Conns[r.Conn[i]]
	}
	return ""
}

// URLOf returns Request.URL of request i.
func (r *Requests) URLOf(i int) string {
	if u := r.URLAt(i); int(u) < len(r.URLs) && i >= 0 && i < r.Len() {
		return r.URLs[u]
	}
	return ""
}

// Grow makes room for n more requests (their columns and ID index), so
// that adding them (Add, AddClassified) allocates each column once; n <= 0
// does nothing.
func (r *Requests) Grow(n int) {
	if n > 0 {
		r.grow(r.Len() + n)
	}
}

// grow makes room for n requests in all.
func (r *Requests) grow(n int) {
	r.IDs.grow(n)
	r.Target = growTo(r.Target, n)
	growLazy(&r.Phase, n)
	growLazy(&r.Flow, n)
	growLazy(&r.URL, n)
	growLazy(&r.Conn, n)
	r.SentNs.Grow(n - r.Len())
	r.EndNs.Grow(n - r.Len())
	r.Code = growTo(r.Code, n)
	r.Class = growTo(r.Class, n)
}

func growTo[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s
	}
	out := make([]T, len(s), n)
	copy(out, s)
	return out
}

// intern returns the index of name in names, adding it. More than 65535
// distinct names share the last index.
func intern(idx *map[string]uint16, names *[]string, name string) uint16 {
	if *idx == nil {
		*idx = map[string]uint16{}
	}
	if i, ok := (*idx)[name]; ok {
		return i
	}
	if len(*names) >= 65535 {
		return 65534
	}
	i := uint16(len(*names))
	*names = append(*names, name)
	(*idx)[name] = i
	return i
}

// intern32 is intern with 32-bit indices (URLs and connections may be many).
func intern32(idx *map[string]uint32, names *[]string, name string) uint32 {
	if *idx == nil {
		*idx = map[string]uint32{}
	}
	if i, ok := (*idx)[name]; ok {
		return i
	}
	i := uint32(len(*names))
	*names = append(*names, name)
	(*idx)[name] = i
	return i
}

// Receipt index values of Receipts.Request.
const (
	// NoID marks a receipt without X-Rlbench-Id.
	NoID = -1
	// Phantom marks a receipt whose ID no request has (its ID is in PhantomIDs).
	Phantom = -2
)

// Receipts are the receipt lines of a scenario in columns, in file order.
type Receipts struct {
	// RecvNs is when the backend received the request, unix ns (about 4
	// bytes a receipt: nscol.Column).
	RecvNs nscol.Column
	// Request is the index in Requests of the receipt's ID, or NoID or Phantom.
	Request []int32
	// PhantomIDs are the IDs of the Phantom receipts, in file order.
	PhantomIDs []string
	// XRequestID is each receipt's x-request-id header (the ID Envoy logs
	// and forwards); filled only when the scenario has access logs, which
	// it joins (analyze.JoinAccessLogs).
	XRequestID []string
	// Attempt is each receipt's x-envoy-attempt-count header (AttemptCountHeader:
	// the upstream try that reached the backend, 1 for the first), 0 when
	// absent or not a positive number; nil when no receipt has one.
	Attempt []uint16
	// Endpoint indexes Endpoints (names in first-seen order): the backend
	// endpoint that received each receipt (Receipt.Endpoint); nil when no
	// receipt names one (receipts of a backend with one endpoint before
	// endpoints were named).
	Endpoint  []uint16
	Endpoints []string

	endpointIdx map[string]uint16
}

// AttemptOf returns receipt i's attempt count (Attempt), 0 when unknown.
func (r *Receipts) AttemptOf(i int) int {
	if i < len(r.Attempt) {
		return int(r.Attempt[i])
	}
	return 0
}

// EndpointOf returns the name of the endpoint that received receipt i, ""
// when unknown.
func (r *Receipts) EndpointOf(i int) string {
	if i < len(r.Endpoint) && int(r.Endpoint[i]) < len(r.Endpoints) {
		return r.Endpoints[r.Endpoint[i]]
	}
	return ""
}

// AttemptCountHeader is the request header Envoy's router sets on every
// upstream try when include_request_attempt_count is on (route.v3
// VirtualHost.include_request_attempt_count; source/common/router/router.cc):
// 1 for the first try, 2 for the first retry, ... The backend records it
// in its receipts.
const AttemptCountHeader = "x-envoy-attempt-count"

// ParseAttemptCount parses an x-envoy-attempt-count value: a decimal
// number 1..65535, else 0 (unknown).
func ParseAttemptCount(s string) uint16 {
	n := 0
	if s == "" || len(s) > 5 {
		return 0
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > 65535 {
		return 0
	}
	return uint16(n)
}

// addColumns appends receipt i's attempt count and endpoint, allocating
// each column when its first value arrives (the receipts before get 0 and
// "" ).
func (r *Receipts) addColumns(n int, attempt uint16, endpoint string) {
	if attempt != 0 || r.Attempt != nil {
		if r.Attempt == nil {
			r.Attempt = make([]uint16, n-1, n)
		}
		r.Attempt = append(r.Attempt, attempt)
	}
	if endpoint != "" || r.Endpoint != nil {
		if r.Endpoint == nil {
			r.Endpoint = make([]uint16, n-1, n)
			intern(&r.endpointIdx, &r.Endpoints, "") // index 0: unknown
		}
		r.Endpoint = append(r.Endpoint, intern(&r.endpointIdx, &r.Endpoints, endpoint))
	}
}

// Len is the number of receipts.
func (r *Receipts) Len() int { return r.RecvNs.Len() }

// Grow makes room for n more receipts (RecvNs and Request), so that adding
// them (Add) allocates those columns once; n <= 0 does nothing.
func (r *Receipts) Grow(n int) {
	if n > 0 {
		r.RecvNs.Grow(n)
		r.Request = growTo(r.Request, r.Len()+n)
	}
}

// Add appends a receipt, resolving its ID against reqs.
func (r *Receipts) Add(reqs *Requests, c *Receipt) {
	idx := int32(NoID)
	if c.ID != nil {
		if i, ok := reqs.IDs.Lookup(*c.ID); ok {
			idx = int32(i)
		} else {
			idx = Phantom
			r.PhantomIDs = append(r.PhantomIDs, *c.ID)
		}
	}
	r.RecvNs.Add(c.RecvNs)
	r.Request = append(r.Request, idx)
	if x := xRequestID(c.Headers); x != "" || r.XRequestID != nil {
		if r.XRequestID == nil {
			r.XRequestID = make([]string, r.Len()-1, r.Len()) // the receipts before had none
		}
		r.XRequestID = append(r.XRequestID, x)
	}
	r.addColumns(r.Len(), attemptCount(c.Headers), c.Endpoint)
}

// attemptCount returns the x-envoy-attempt-count of receipt headers (any
// spelling of the name), 0 when absent.
func attemptCount(h map[string]string) uint16 {
	if v, ok := h[AttemptCountHeader]; ok {
		return ParseAttemptCount(v)
	}
	key := "" // another spelling: the least, so the choice does not depend on map order
	for k := range h {
		if foldsTo([]byte(k), []string{AttemptCountHeader}) && (key == "" || k < key) {
			key = k
		}
	}
	if key == "" {
		return 0
	}
	return ParseAttemptCount(h[key])
}

func xRequestID(h map[string]string) string {
	for k, v := range h {
		if len(k) == len("x-request-id") && foldsTo([]byte(k), []string{"x-request-id"}) && v != "" {
			return v
		}
	}
	return ""
}
