package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// stat is one counter or gauge. used follows Envoy's "used" flag (set by the
// first increment or set), which ?usedonly filters on.
type stat struct {
	v     atomic.Uint64
	used  atomic.Bool
	gauge bool
}

func (s *stat) inc() {
	s.v.Add(1)
	if !s.used.Load() {
		s.used.Store(true)
	}
}
func (s *stat) add(n uint64) {
	s.v.Add(n)
	if !s.used.Load() {
		s.used.Store(true)
	}
}

// set stores v; a value or used flag that is already there is not stored
// again (the gauges are set on every request: a load leaves the cache line
// shared between cores, a store would take it).
func (s *stat) set(v uint64) {
	if s.v.Load() != v {
		s.v.Store(v)
	}
	if !s.used.Load() {
		s.used.Store(true)
	}
}
func (s *stat) dec() { s.v.Add(^uint64(0)) }

// setBool sets a 0/1 gauge (the circuit_breakers.*_open gauges).
func (s *stat) setBool(b bool) {
	var v uint64
	if b {
		v = 1
	}
	s.set(v)
}

// codeFamily is one family of response code counters, Envoy's
// CodeStatsImpl::chargeBasicResponseStat under a prefix:
// <prefix>upstream_rq_completed, <prefix>upstream_rq_<N>xx and
// <prefix>upstream_rq_<code>. The per-code counters are created on first
// use and then reached without a map lookup or a string built per request.
type codeFamily struct {
	st        *store
	prefix    string
	completed atomic.Pointer[stat]
	class     [6]atomic.Pointer[stat]
	code      [600]atomic.Pointer[stat]
}

func newCodeFamily(st *store, prefix string) *codeFamily {
	return &codeFamily{st: st, prefix: prefix}
}

// get returns the stat *slot holds, creating it (store.counter returns the
// same stat for the same name, so goroutines racing here store the same
// pointer).
func (f *codeFamily) get(slot *atomic.Pointer[stat], suffix string) *stat {
	p := slot.Load()
	if p == nil {
		p = f.st.counter(f.prefix + "upstream_rq_" + suffix)
		slot.Store(p)
	}
	return p
}

func (f *codeFamily) charge(code int) {
	f.get(&f.completed, "completed").inc()
	if code < 100 || code > 599 {
		return
	}
	// The names are built only when a slot is still empty.
	c := f.class[code/100].Load()
	if c == nil {
		c = f.get(&f.class[code/100], strconv.Itoa(code/100)+"xx")
	}
	c.inc()
	n := f.code[code].Load()
	if n == nil {
		n = f.get(&f.code[code], strconv.Itoa(code))
	}
	n.inc()
}

// store is a process-wide stats registry shaped like Envoy's: counters and
// gauges are uint64 by flat dotted name; text readouts are strings.
type store struct {
	mu    sync.RWMutex
	stats map[string]*stat
	texts map[string]string
}

func newStore() *store {
	return &store{stats: map[string]*stat{}, texts: map[string]string{}}
}

func (s *store) get(name string, gauge bool) *stat {
	s.mu.RLock()
	st := s.stats[name]
	s.mu.RUnlock()
	if st != nil {
		return st
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st = s.stats[name]; st == nil {
		st = &stat{gauge: gauge}
		s.stats[name] = st
	}
	return st
}

// counter returns (creating at 0) the counter called name.
func (s *store) counter(name string) *stat { return s.get(name, false) }

// gauge returns (creating at 0) the gauge called name.
func (s *store) gauge(name string) *stat { return s.get(name, true) }

func (s *store) setText(name, v string) {
	s.mu.Lock()
	s.texts[name] = v
	s.mu.Unlock()
}

// resetCounters zeroes every counter (not gauges, not text readouts), like
// Envoy's POST /reset_counters.
func (s *store) resetCounters() {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, st := range s.stats {
		if !st.gauge {
			st.v.Store(0)
		}
	}
}

type statValue struct {
	name  string
	value uint64
	gauge bool
	used  bool
}

type snapshot struct {
	texts []textValue
	stats []statValue // counters and gauges, sorted by name
}

type textValue struct{ name, value string }

func (s *store) snapshot(filter *regexp.Regexp, usedOnly bool) snapshot {
	var snap snapshot
	s.mu.RLock()
	for n, v := range s.texts {
		if filter != nil && !filter.MatchString(n) {
			continue
		}
		snap.texts = append(snap.texts, textValue{n, v})
	}
	for n, st := range s.stats {
		if filter != nil && !filter.MatchString(n) {
			continue
		}
		used := st.used.Load()
		if usedOnly && !used {
			continue
		}
		snap.stats = append(snap.stats, statValue{name: n, value: st.v.Load(), gauge: st.gauge, used: used})
	}
	s.mu.RUnlock()
	sort.Slice(snap.texts, func(i, j int) bool { return snap.texts[i].name < snap.texts[j].name })
	sort.Slice(snap.stats, func(i, j int) bool { return snap.stats[i].name < snap.stats[j].name })
	return snap
}

// writeText renders Envoy's admin /stats text format: text readouts first
// (`name: "value"`), then counters and gauges (`name: 123`), each group
// sorted by name (Envoy source/server/admin/stats_render.cc).
func (snap snapshot) writeText(w io.Writer) error {
	var b strings.Builder
	for _, t := range snap.texts {
		fmt.Fprintf(&b, "%s: %s\n", t.name, strconv.Quote(t.value))
	}
	for _, s := range snap.stats {
		fmt.Fprintf(&b, "%s: %d\n", s.name, s.value)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeJSON renders /stats?format=json: {"stats":[{"name":..,"value":..},...]}
// with text readouts as string values.
func (snap snapshot) writeJSON(w io.Writer) error {
	type entry struct {
		Name  string `json:"name"`
		Value any    `json:"value"`
	}
	out := struct {
		Stats []entry `json:"stats"`
	}{Stats: make([]entry, 0, len(snap.texts)+len(snap.stats))}
	for _, t := range snap.texts {
		out.Stats = append(out.Stats, entry{t.name, t.value})
	}
	for _, s := range snap.stats {
		out.Stats = append(out.Stats, entry{s.name, s.value})
	}
	return json.NewEncoder(w).Encode(out)
}

// promLabel is one extracted tag.
type promLabel struct{ name, value string }

// Tag extraction for the stat names this proxy emits, following Envoy's
// well-known tag extractors (source/common/config/well_known_names.cc):
// response code / class first, then the cluster, HCM or local-rate-limit
// prefix. The extracted part is removed from the name.
var (
	reRespCode      = regexp.MustCompile(`_rq(_(\d{3}))$`)
	reRespCodeClass = regexp.MustCompile(`_rq_((\d))xx$`)
	reCluster       = regexp.MustCompile(`^cluster\.(([^.]+)\.)`)
	reHTTPPrefix    = regexp.MustCompile(`^http\.(([^.]+)\.)`)
	reLocalRL       = regexp.MustCompile(`^(([^.]+)\.)http_local_rate_limit\.`)
)

// promName returns the Prometheus metric name and labels Envoy gives the
// stat called name, e.g. "cluster.backend.upstream_rq_200" ->
// envoy_cluster_upstream_rq{envoy_response_code="200",envoy_cluster_name="backend"}.
func promName(name string) (string, []promLabel) {
	var labels []promLabel
	extract := func(re *regexp.Regexp, tag string) {
		m := re.FindStringSubmatchIndex(name)
		if m == nil {
			return
		}
		labels = append(labels, promLabel{tag, name[m[4]:m[5]]})
		name = name[:m[2]] + name[m[3]:]
	}
	extract(reRespCode, "envoy_response_code")
	if m := reRespCodeClass.FindStringSubmatchIndex(name); m != nil {
		// "_rq_2xx" -> "_rq_xx": only the digit is removed.
		labels = append(labels, promLabel{"envoy_response_code_class", name[m[4]:m[5]]})
		name = name[:m[2]] + name[m[3]:]
	}
	extract(reCluster, "envoy_cluster_name")
	extract(reHTTPPrefix, "envoy_http_conn_manager_prefix")
	extract(reLocalRL, "envoy_local_http_ratelimit_prefix")
	return "envoy_" + sanitizeProm(name), labels
}

func sanitizeProm(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

func escapeLabel(v string) string {
	v = strings.ReplaceAll(v, `\`, `\\`)
	v = strings.ReplaceAll(v, "\n", `\n`)
	return strings.ReplaceAll(v, `"`, `\"`)
}

// writePrometheus renders /stats/prometheus (text exposition 0.0.4): one
// "# TYPE <name> counter|gauge" line per metric family, families sorted by
// name, untagged series rendered as `name{} value`, counters without a
// _total suffix; text readouts are omitted (Envoy emits them only with
// ?text_readouts).
func (snap snapshot) writePrometheus(w io.Writer) error {
	type series struct{ labels, value string }
	type family struct {
		typ    string
		series []series
	}
	fams := map[string]*family{}
	for _, s := range snap.stats {
		name, labels := promName(s.name)
		f := fams[name]
		if f == nil {
			f = &family{typ: "counter"}
			if s.gauge {
				f.typ = "gauge"
			}
			fams[name] = f
		}
		parts := make([]string, len(labels))
		for i, l := range labels {
			parts[i] = fmt.Sprintf("%s=\"%s\"", l.name, escapeLabel(l.value))
		}
		f.series = append(f.series, series{strings.Join(parts, ","), strconv.FormatUint(s.value, 10)})
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		f := fams[n]
		sort.Slice(f.series, func(i, j int) bool { return f.series[i].labels < f.series[j].labels })
		fmt.Fprintf(&b, "# TYPE %s %s\n", n, f.typ)
		for _, s := range f.series {
			fmt.Fprintf(&b, "%s{%s} %s\n", n, s.labels, s.value)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
