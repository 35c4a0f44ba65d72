package remotewrite

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/prompb"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/metricnames"
)

// DefaultInterval is how often a Pusher pushes by default.
const DefaultInterval = time.Second

// DefaultMaxPending is how many pushes a Pusher keeps by default while the
// receiver fails (5 minutes at DefaultInterval); older ones are dropped.
const DefaultMaxPending = 300

// PusherOptions configure NewPusher.
type PusherOptions struct {
	// Client writes the pushes; required.
	Client *Client
	// Interval is the time between two pushes; default DefaultInterval.
	Interval time.Duration
	// RunID is every series' run_id label (metricnames.LabelRunID); it may
	// be set later with SetRunID (`run` learns it once the run directory
	// exists). Nothing is pushed without it.
	RunID string
	// MaxPending bounds the pushes kept for a later try while the receiver
	// fails; default DefaultMaxPending.
	MaxPending int
	// Now is the clock of the samples' timestamps; time.Now when nil.
	Now func() time.Time
	// tick replaces the interval's ticker (tests).
	tick <-chan time.Time
}

// Stats count a Pusher's pushes (Close returns them).
type Stats struct {
	// Pushed is the number of pushes the receiver accepted, Samples the
	// samples in them.
	Pushed, Samples int
	// Failed is the number of failed writes (each after its retries);
	// Dropped the pushes given up: beyond MaxPending, or still failing at
	// Close. LastError is the last failure's message (the URL redacted).
	Failed, Dropped int
	LastError       string
}

// Pusher pushes the live series of a run (the Live families of
// metricnames.Families, with the labels listed there) every
// interval and, at Close, the end-of-run families. Register each attack
// with Attack before it runs and each fault record with Fault; both are
// cheap and never wait for the network: one goroutine (Start) reads the
// counters, builds the push, and writes it. A push that fails is kept
// (at most MaxPending) and sent before the next one, oldest first, so the
// receiver sees each series' samples in time order (Prometheus rejects an
// out-of-order sample with the whole request).
type Pusher struct {
	o PusherOptions

	mu     sync.Mutex
	runID  string
	scs    map[scKey]*scState
	order  []scKey
	lastMs int64

	// Owned by the pushing goroutine (or Close after it ended).
	pending [][]prompb.TimeSeries
	stats   Stats

	stop chan struct{}
	done chan struct{}
}

type scKey struct {
	scenario string
	repeat   int
}

// scState is one scenario repeat's live state.
type scState struct {
	// base are the counts of its finished attacks, per target and class
	// (metricnames.RequestsTotal); cur is the running attack's, if any.
	base    map[tcKey]int64
	targets []string // every target seen, in first-seen order
	cur     *attack.Progress
	faults  map[string]*window // by fault name
	fnames  []string           // fault names, in first-seen order
	open    map[string]string  // target -> name of its open window
}

type tcKey struct{ target, class string }

// window is a fault window's state: open now, and seen open since the
// last sample.
type window struct{ open, seen bool }

// NewPusher returns a Pusher; Start starts it.
func NewPusher(o PusherOptions) *Pusher {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.MaxPending <= 0 {
		o.MaxPending = DefaultMaxPending
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Pusher{o: o, runID: o.RunID, scs: map[scKey]*scState{}}
}

// SetRunID sets the run_id label of the pushes from now on.
func (p *Pusher) SetRunID(id string) {
	p.mu.Lock()
	p.runID = id
	p.mu.Unlock()
}

func (p *Pusher) state(scenario string, repeat int) *scState {
	k := scKey{scenario, repeat}
	s := p.scs[k]
	if s == nil {
		s = &scState{base: map[tcKey]int64{}, faults: map[string]*window{}, open: map[string]string{}}
		p.scs[k] = s
		p.order = append(p.order, k)
	}
	return s
}

// Attack registers the attack about to run with prog in a scenario's
// repeat: every push reads prog's live counters (attack.Progress.Snapshot:
// per target and class, as prog.Classifier classifies, in flight, pacing
// error) while it runs. stop, called once the attack has returned, adds
// its final counts to the scenario's counters (an attack step after it
// counts on from there).
func (p *Pusher) Attack(scenario string, repeat int, prog *attack.Progress) (stop func()) {
	p.mu.Lock()
	s := p.state(scenario, repeat)
	s.cur = prog
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			l := prog.Snapshot()
			p.mu.Lock()
			defer p.mu.Unlock()
			for tk, n := range counts(l) {
				s.base[tk] += n
			}
			s.see(l)
			if s.cur == prog {
				s.cur = nil
			}
		})
	}
}

// counts are a progress snapshot's requests per target and class.
func counts(l attack.ProgressSnapshot) map[tcKey]int64 {
	m := map[tcKey]int64{}
	for _, t := range l.Targets {
		for c, n := range t.Classes {
			if n > 0 {
				m[tcKey{t.Name, evidence.Class(c).String()}] += int64(n)
			}
		}
		if t.NotSent > 0 {
			m[tcKey{t.Name, metricnames.ClassNotSent}] += int64(t.NotSent)
		}
	}
	return m
}

// see records l's targets among the scenario's.
func (s *scState) see(l attack.ProgressSnapshot) {
	for _, t := range l.Targets {
		found := false
		for _, n := range s.targets {
			found = found || n == t.Name
		}
		if !found {
			s.targets = append(s.targets, t.Name)
		}
	}
}

// Fault records a fault record of a scenario's repeat as it is written to
// faults.jsonl: a stop or set opens a window on its target (unless one is
// open there), the next start or clear of that target closes it, a restart
// or exec is a window that opened and closed (analyze/faults.go's rule).
// A fault without a name is labelled "<action> <target>".
func (p *Pusher) Fault(scenario string, repeat int, f evidence.Fault) {
	if f.Name == "" { // a label value must not be empty (it would name no label)
		f.Name = f.Action + " " + f.Target
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.state(scenario, repeat)
	win := func(name string) *window {
		w := s.faults[name]
		if w == nil {
			w = &window{}
			s.faults[name] = w
			s.fnames = append(s.fnames, name)
		}
		return w
	}
	switch f.Action {
	case evidence.ActionStop, evidence.ActionSet:
		if _, ok := s.open[f.Target]; ok {
			return
		}
		w := win(f.Name)
		w.open, w.seen = true, true
		s.open[f.Target] = f.Name
	case evidence.ActionStart, evidence.ActionClear:
		if name, ok := s.open[f.Target]; ok {
			s.faults[name].open = false
			delete(s.open, f.Target)
		}
	case evidence.ActionRestart, evidence.ActionExec:
		w := win(f.Name)
		w.seen = true
	}
}

// collect builds one push of the live series at now; nil without a run ID.
func (p *Pusher) collect(now time.Time) []prompb.TimeSeries {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runID == "" {
		return nil
	}
	ts := p.stamp(now)
	var out []prompb.TimeSeries
	for _, k := range p.order {
		s := p.scs[k]
		lbl := func(kv ...string) map[string]string {
			m := map[string]string{metricnames.LabelRunID: p.runID, metricnames.LabelScenario: k.scenario,
				metricnames.LabelRepeat: strconv.Itoa(k.repeat)}
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i]] = kv[i+1]
			}
			return m
		}
		total := map[tcKey]int64{}
		for tk, n := range s.base {
			total[tk] = n
		}
		inFlight := map[string]int64{}
		var pacing *evidence.AttackQuantiles
		if s.cur != nil {
			l := s.cur.Snapshot()
			s.see(l)
			for tk, n := range counts(l) {
				total[tk] += n
			}
			for _, t := range l.Targets {
				inFlight[t.Name] += int64(t.InFlight)
			}
			if l.PacingErrorNs.N > 0 {
				pacing = &l.PacingErrorNs
			}
		}
		keys := make([]tcKey, 0, len(total))
		for tk := range total {
			keys = append(keys, tk)
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].target != keys[j].target {
				return keys[i].target < keys[j].target
			}
			return keys[i].class < keys[j].class
		})
		for _, tk := range keys {
			out = append(out, Series(metricnames.RequestsTotal, lbl(metricnames.LabelTarget, tk.target, metricnames.LabelClass, tk.class), float64(total[tk]), ts))
		}
		for _, t := range s.targets {
			out = append(out, Series(metricnames.RequestsInFlight, lbl(metricnames.LabelTarget, t), float64(inFlight[t]), ts))
		}
		if pacing != nil {
			for _, q := range []struct {
				q  string
				ns int64
			}{{"0.5", pacing.P50}, {"0.9", pacing.P90}, {"0.99", pacing.P99}, {"1", pacing.Max}} {
				out = append(out, Series(metricnames.PacingError, lbl(metricnames.LabelQuantile, q.q), time.Duration(q.ns).Seconds(), ts))
			}
		}
		for _, name := range s.fnames {
			w := s.faults[name]
			v := 0.0
			if w.open || w.seen {
				v = 1
			}
			w.seen = w.open
			out = append(out, Series(metricnames.FaultActive, lbl(metricnames.LabelFault, name), v, ts))
		}
	}
	return out
}

// stamp is now in unix ms, after every earlier push's (the receiver
// rejects a series' out-of-order sample). Call with p.mu held.
func (p *Pusher) stamp(now time.Time) int64 {
	ms := now.UnixMilli()
	if ms <= p.lastMs {
		ms = p.lastMs + 1
	}
	p.lastMs = ms
	return ms
}

// Start starts pushing every interval until Close (which lets a push under
// way finish). ctx bounds the pushes and ends the pushing goroutine early
// (an interrupted run still gets Close's final push with Close's own
// context).
func (p *Pusher) Start(ctx context.Context) {
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	tick := p.o.tick
	var t *time.Ticker
	if tick == nil {
		t = time.NewTicker(p.o.Interval)
		tick = t.C
	}
	go func() {
		defer close(p.done)
		if t != nil {
			defer t.Stop()
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-p.stop:
				return
			case <-tick:
				p.push(ctx, p.collect(p.o.Now()))
			}
		}
	}()
}

// push queues b (nil: nothing new) and writes the queue, oldest first,
// until a write fails: a retryable failure keeps the push for the next
// time; one the receiver refused (a 4xx other than 429: the spec's "do not
// retry") is dropped, or it would block every later push.
func (p *Pusher) push(ctx context.Context, b []prompb.TimeSeries) {
	if len(b) > 0 {
		if len(p.pending) >= p.o.MaxPending {
			p.pending = p.pending[1:]
			p.stats.Dropped++
		}
		p.pending = append(p.pending, b)
	}
	for len(p.pending) > 0 {
		if err := p.o.Client.Write(ctx, p.pending[0]); err != nil {
			if ctx.Err() != nil {
				return
			}
			p.stats.Failed++
			p.stats.LastError = err.Error()
			var we *WriteError
			if errors.As(err, &we) && we.Status/100 == 4 && we.Status != http.StatusTooManyRequests {
				p.pending = p.pending[1:]
				p.stats.Dropped++
				continue
			}
			return
		}
		p.stats.Pushed++
		p.stats.Samples += len(p.pending[0])
		p.pending = p.pending[1:]
	}
}

// Close stops the pushing goroutine, then pushes a last sample of the live
// series and final (the end-of-run families, converted by FromFamilies
// with run_id added; nil: none) after whatever is still pending, within
// ctx. It returns the stats; what could not be written by then is
// counted as dropped. Close without Start only pushes.
func (p *Pusher) Close(ctx context.Context, final []*dto.MetricFamily) Stats {
	if p.stop != nil {
		close(p.stop)
		<-p.done
	}
	b := p.collect(p.o.Now())
	p.mu.Lock()
	runID, ts := p.runID, p.lastMs
	p.mu.Unlock()
	if runID != "" && len(final) > 0 {
		b = append(b, FromFamilies(final, map[string]string{metricnames.LabelRunID: runID}, ts)...)
	}
	p.push(ctx, b)
	p.stats.Dropped += len(p.pending)
	p.pending = nil
	return p.stats
}
