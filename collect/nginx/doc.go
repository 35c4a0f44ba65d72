// Package nginx collects what an nginx exposes about rate limiting: its stub_status page (ParseStubStatus,
// FetchStubStatus) and the delta of two snapshots (Delta). The records of nginx evidence (the JSON access log, the
// error log's limit_req lines, the stub_status counters) and the codecs of its log files are evidence/nginxrec's.
//
// The package reads readers and returns data and errors; it never prints and never exits. Parse errors name the
// source and the 1-based line.
//
// Semantics follow the nginx sources: src/http/modules/ngx_http_stub_status_module.c (the four-line page).
package nginx
