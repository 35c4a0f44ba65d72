// Package nginx parses the evidence a private (or any) nginx leaves about rate limiting and proxying: the JSON
// access log (one object per request, log_format escape=json, with $limit_req_status and the $upstream_* lists),
// the error log's limit_req lines ("limiting requests" and "delaying request", with their excess and zone) and
// upstream failure lines, and stub_status pages with the delta of two snapshots.
//
// The package reads readers and returns data and errors; it never prints and never exits. Parse errors name the
// source and the 1-based line. What nginx writes for a value it does not have ("-", or "" under escape=json) is
// read as absent, never as an error.
//
// Semantics follow the nginx sources: src/http/modules/ngx_http_limit_req_module.c (log lines, $limit_req_status),
// src/http/ngx_http_upstream.c (ngx_http_upstream_addr_variable, _status_variable, _response_time_variable: one
// entry per attempt joined by ", ", internal redirects to another upstream group by " : "),
// src/http/ngx_http_request.c (ngx_http_log_error_handler: the ", client: ..., server: ..., request: ..." context)
// and src/http/modules/ngx_http_stub_status_module.c (the four-line page).
package nginx
