// Package evidence is rlbench's on-disk contract: the layout of an evidence
// directory, every file and directory name in it, every schema ID, every
// record type, the JSON Lines writer and reader, the status line, and Load,
// which reads a scenario directory (or a run directory of scenarios) into a
// Bundle in one streaming pass. Nothing else in rlbench spells a file name of
// an evidence directory: use Dir and its methods.
//
// # Run directory
//
// `rlbench run` writes one run directory per plan execution, named
// <root>/<UTC yyyymmddThhmmssZ>-<n>, and points <root>/latest (LatestLink) at
// the newest one:
//
//	manifest.json                 Manifest (schema rlbench.manifest/v1): plan, host, versions, scenario_dirs
//	status.txt                    one StatusLine per scenario run (written by `rlbench analyze`)
//	NN-<slug>/<repeat>/           one scenario directory per scenario and repeat
//
// # Scenario directory
//
//	scenario.json                 Scenario (rlbench.scenario/v1): expectation, limiters (models), classification rules; read strictly
//	NOT_RUN                       present when the scenario did not execute; its text is the reason
//	attack.json                   Attack (rlbench.attack/v2; v1 files of both earlier shapes load)
//	requests.jsonl                one Request per fired ID, as the client saw it
//	receipts.jsonl                one Receipt per request the backend really received
//	faults.jsonl                  one Fault per fault action (optional)
//	harness.json                  Harness (rlbench.harness/v1): steal, load and wake-up stalls of rlbench's own host during the run (optional)
//	rls/decisions.jsonl           one Decision per descriptor decision of the rate limit service (optional)
//	rls/rls.log                   envoyproxy/ratelimit's own log (real RLS; LOG_FORMAT=json, LOG_LEVEL=debug)
//	rls/log.json                  that log parsed by `rlbench collect rls-log` or the runner (collect/rls.Log)
//	nginx/<proxy>/access.jsonl    an nginx access log parsed (evidence/nginxrec.AccessRecord): $limit_req_status per ID
//	haproxy/<proxy>/log.jsonl     a lab.haproxy HAProxy's log parsed (evidence/haproxyrec.LogRecord): now_ms and rate per ID
//	rls/metrics.<label>.prom      raw Prometheus /metrics page of the real RLS
//	rls/metrics.<label>.json      RLSMetrics (rlbench.rls-metrics/v1), or a bare RLSCounters (older collect)
//	rls/redis/                    the real Redis's log
//	stats/<proxy>.<label>.txt     raw Envoy admin GET /stats body (label: before | after)
//	stats/<proxy>.<label>.raw.json  raw GET /stats?format=json body
//	stats/<proxy>.<label>.prom    raw GET /stats/prometheus body
//	stats/<proxy>.<label>.json    parsed snapshot, evidence/envoyrec.Snapshot (rlbench.envoy-stats/v1)
//	accesslog/<proxy>.log         the proxy's HTTP access log (Envoy default, Istio or JSON format)
//	status.txt                    status lines, when analysed on its own
//	<file>.jsonl.state.json       the seal of each JSON Lines file above (FileState): "open" until
//	                              its writer closed it, then "closed" with its lines and bytes, or the write error
//
// Times are unix nanoseconds (int64) unless a field says otherwise; durations
// are nanoseconds. JSON Lines files are written one record per line and
// flushed at least every FlushEvery (the backend's receipts: written through,
// each before its request is answered), so an interrupted writer loses at
// most that much and leaves at worst a truncated last line, which Load
// reports as incomplete evidence with the file and line. Each file's seal
// (seal.go) tells a recorder that died, or failed to write, from a system
// that lost a request: Load reports the first as incomplete evidence naming
// the file (NOT_RUN), whatever its lines say. Files without a seal, from
// earlier releases, load as before.
//
// No file is written through a link: the writers here write through
// evidence/safefile (a link, FIFO or device at the file is refused) and
// create the directories below the one they are given (stats/, rls/,
// accesslog/, nginx/<proxy>/, haproxy/<proxy>/, receipts/) with safefile.MkdirAll
// (Dir.MkdirFor), which refuses a link or a non-directory on the way with a
// *safefile.RefusedError naming it; the directory given is followed as the
// user named it.
//
// No file holds a credential: every URL, path with a query, header value and
// log line rlbench records goes through redact.go first (RedactURL,
// RedactHeader, RedactText, RedactReader), which replaces a userinfo
// password, a user name given alone, the value of a query parameter named
// like a credential and a credential header's value with "xxxxx", keeping
// the scheme, host, port, path and names that identify the target.
//
// # Semantics recorded
//
// Response classes (Class, Classify) follow the marks Envoy puts on responses
// it produces itself: the local rate limit filter's local reply
// (source/extensions/filters/http/local_ratelimit/local_ratelimit.cc, body
// "local_rate_limited"), the rate limit filter's OVER_LIMIT reply with header
// x-envoy-ratelimited (source/extensions/filters/http/ratelimit/ratelimit.cc)
// and its failure_mode_deny reply with status_on_error (api/envoy/extensions/
// filters/http/ratelimit/v3/rate_limit.proto), the router's circuit-breaker
// overflow (503, x-envoy-overloaded, source/common/router/router.cc) and its
// x-envoy-upstream-service-time on upstream responses (a backend_4xx,
// backend_429 or backend_5xx, as is any 4xx/5xx the backend has a receipt
// of); a scenario's ClassRules describe other proxies. Decision records the
// envoy.service.ratelimit.v3.RateLimitResponse codes, and the cache key and
// window of envoyproxy/ratelimit (src/limiter/cache_key.go,
// src/utils/utilities.go). See https://github.com/envoyproxy/envoy and
// https://github.com/envoyproxy/ratelimit.
package evidence
