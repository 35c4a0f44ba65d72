package nginxrec

// StubStatus is one stub_status page. The page has four lines, written by ngx_http_stub_status_handler
// (src/http/modules/ngx_http_stub_status_module.c):
//
//	Active connections: N
//	server accepts handled requests
//	 A H R
//	Reading: r Writing: w Waiting: k
//
// Accepts, Handled and Requests are counters since the start of the nginx instance (shared by all its workers and
// servers, kept across reloads); Active, Reading, Writing and Waiting are gauges. Requests includes the status
// request itself, Accepts includes connections that never sent a request (TCP probes); upstream connections are
// not counted (https://nginx.org/en/docs/http/ngx_http_stub_status_module.html).
type StubStatus struct {
	Active   int64 `json:"active"`
	Accepts  int64 `json:"accepts"`
	Handled  int64 `json:"handled"`
	Requests int64 `json:"requests"`
	Reading  int64 `json:"reading"`
	Writing  int64 `json:"writing"`
	Waiting  int64 `json:"waiting"`
}
