// Package nginxrec holds the records of the evidence an nginx leaves about rate limiting and proxying, and the
// codecs of the files it keeps in an evidence directory's nginx/<proxy>/: the JSON access log (AccessRecord, one
// object per request, log_format escape=json, with $limit_req_status and the $upstream_* lists; ParseAccessLog),
// the error log's limit_req lines ("limiting requests" and "delaying request", with their excess and zone) and
// upstream failure lines (ErrorEntry; ParseErrorLog), and the stub_status page's counters (StubStatus; parsed by
// collect/nginx.ParseStubStatus).
//
// The package reads readers and returns data and errors; it never prints and never exits. Parse errors name the
// source and the 1-based line. What nginx writes for a value it does not have ("-", or "" under escape=json) is
// read as absent, never as an error. It is a leaf: it imports no rlbench package.
//
// Semantics follow the nginx sources: src/http/modules/ngx_http_limit_req_module.c (log lines, $limit_req_status),
// src/http/ngx_http_upstream.c (ngx_http_upstream_addr_variable, _status_variable, _response_time_variable: one
// entry per attempt joined by ", ", internal redirects to another upstream group by " : "),
// src/http/ngx_http_request.c (ngx_http_log_error_handler: the ", client: ..., server: ..., request: ..." context)
// and src/http/modules/ngx_http_stub_status_module.c (the four-line page).
package nginxrec
