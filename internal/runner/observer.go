package runner

import (
	"net/url"
	"time"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/proxy"
)

// Observer follows a run live (Options.Observer): the remote write of
// export/remotewrite implements it. Its methods are called from the
// runner's goroutines (faults at an offset from timers) and must not block.
type Observer interface {
	// SetRunID is called once the run directory exists, with its name.
	SetRunID(id string)
	// Attack is called before each attack with the scenario's name and
	// repeat and the attack's live counters (their Classifier is the
	// scenario's classify: rules; the event stream reads the same
	// Progress); stop is called once the attack has returned.
	Attack(scenario string, repeat int, p *attack.Progress) (stop func())
	// Fault is called with each fault record as it is written to
	// faults.jsonl.
	Fault(scenario string, repeat int, f evidence.Fault)
}

// RemoteWritePlan is a plan's remote_write: section: push live metrics to
// a Prometheus remote write receiver while the run goes (export/remotewrite;
// `rlbench run --remote-write URL` overrides it).
type RemoteWritePlan struct {
	// URL is the receiver's endpoint, an absolute http(s) URL (Prometheus
	// started with --web.enable-remote-write-receiver: http://HOST:9090/api/v1/write).
	URL string `json:"url"`
	// Interval is the time between two pushes; default 1s.
	Interval proxy.Duration `json:"interval,omitempty"`
}

// validate checks the section at path; errors quote the URL redacted.
func (rw *RemoteWritePlan) validate(path string) error {
	u, err := url.Parse(rw.URL)
	if rw.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return at(path+".url", path+".url", "%q is not an absolute http(s) URL", evidence.RedactURL(rw.URL))
	}
	if rw.Interval < 0 || (rw.Interval > 0 && time.Duration(rw.Interval) < time.Millisecond) {
		return at(path+".interval", path+".interval", "%s: want 1ms or more", time.Duration(rw.Interval))
	}
	return nil
}

// writeFault writes f to w and tells the observer, if any.
func (r *scenarioRun) writeFault(w *evidence.Writer, f evidence.Fault) {
	_ = w.Write(f)
	if r.obs != nil {
		r.obs.Fault(r.plan.Name, r.repeat, f)
	}
}

// observeAttack tells the observer, if any, of the attack about to run
// with p; the returned function is called once it has returned.
func (r *scenarioRun) observeAttack(p *attack.Progress) (stop func()) {
	if r.obs == nil {
		return func() {}
	}
	return r.obs.Attack(r.plan.Name, r.repeat, p)
}
