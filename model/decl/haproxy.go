package decl

import (
	"fmt"
	"time"

	"github.com/rlbench/rlbench/model"
)

// HAProxyStickTable is HAProxy's stick-table rate limit: `stick-table ... store http_req_rate(Period)`,
// `http-request track-sc0 <key>` and `http-request deny if { sc_http_req_rate(0) gt Limit }`
// (https://docs.haproxy.org/2.6/configuration.html#4.2-http-request%20track-sc0). Its Spec is a sliding_counter
// counting every tracked request (track-sc0 counts the request when tracking starts, before the deny rule:
// src/http_act.c http_action_track_sc), with HAProxy's freq_ctr arithmetic (model.AlignFreqCtr,
// src/freq_ctr.c, include/haproxy/freq_ctr.h).
type HAProxyStickTable struct {
	// Limit is the deny rule's threshold: a request is denied when the rate, itself counted, is greater.
	Limit int
	// Period is http_req_rate's period (whole ms).
	Period time.Duration
}

// Spec translates the stick table; a Limit below 1 or a Period not a positive whole number of ms is an error.
func (h HAProxyStickTable) Spec() (model.Spec, error) {
	if h.Limit < 1 {
		return model.Spec{}, fmt.Errorf("haproxy stick table: limit must be at least 1, got %d", h.Limit)
	}
	if h.Period < time.Millisecond || h.Period%time.Millisecond != 0 {
		return model.Spec{}, fmt.Errorf("haproxy stick table: period: want a positive whole number of milliseconds, got %v", h.Period)
	}
	return validated(model.Spec{Kind: model.KindSlidingCounter, Limit: uint64(h.Limit), Window: model.Duration(h.Period),
		Count: model.CountAll, Align: model.AlignFreqCtr})
}
