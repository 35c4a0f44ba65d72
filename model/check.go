package model

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence/nscol"
)

// Outcome is what was observed of one request at the limiter.
type Outcome uint8

const (
	// Unknown: no response; the request may or may not have reached the
	// limiter, and may have been admitted.
	Unknown Outcome = iota
	// Admitted: the request passed the limiter (a receipt, or a response
	// that came from upstream), whatever the backend answered.
	Admitted
	// Rejected: the limiter answered it (429/503 of the limiter, OVER_LIMIT).
	Rejected
	// ShadowRejected: the request passed, but the limiter recorded that its
	// state rejected it (nginx REJECTED_DRY_RUN, an RLS shadow_mode rule over
	// its limit, Envoy's not-enforced marker).
	ShadowRejected
)

func (o Outcome) String() string {
	switch o {
	case Admitted:
		return "admitted"
	case Rejected:
		return "rejected"
	case ShadowRejected:
		return "shadow-rejected"
	}
	return "unknown"
}

// Verdict is what the model says of one request, given the other requests'
// observed outcomes and every schedule their intervals allow.
type Verdict uint8

const (
	// Either: some consistent schedule admits it and another rejects it (or
	// the checker cannot tell).
	Either Verdict = iota
	// MustAdmit: every consistent schedule admits it.
	MustAdmit
	// MustReject: every consistent schedule rejects it.
	MustReject
)

func (v Verdict) String() string {
	switch v {
	case MustAdmit:
		return "must admit"
	case MustReject:
		return "must reject"
	}
	return "either"
}

// Event is one request as the checker sees it, its strings held once in
// the tables of the Events it belongs to (which stores it in columns: 25
// bytes, 21 while every key is Keys[0] and no event has attributes). Its
// decision at the limiter happened at some time in [Lo, Hi] (unix ns,
// Lo <= Hi): see the package doc for how to derive them.
//
// KeyUnknown marks an event whose key, descriptors and vars are not known
// (they are built from a request attribute the evidence does not hold, such
// as a header sent without its value being recorded): it may have used the
// state of any bucket the other events use, or none. Its verdict is Either
// and it is never a violation; in every such bucket it is a possible
// charge, never a sure one, whatever its outcome (so it only weakens the
// must-admit verdicts of the others), and the bucket's lower bound is left
// to the others' must-admit verdicts; the run's bounds count it once, as a
// request that may have been admitted. Its Key and Attrs are not read.
type Event struct {
	Lo, Hi int64
	// Key indexes Events.Keys: the key as in Request.Key.
	Key int32
	// Req is the caller's number of the event's request (a position in the
	// evidence it holds); Check reports it back (Violation.Req) and names it
	// only in findings, through Events.Name. Several events may share one.
	Req int32
	// Attrs is the index in Events.Attrs of the event's descriptors and zone
	// variables, plus one; 0 when it has neither (a limiter keyed by Key
	// alone).
	Attrs      int32
	Outcome    Outcome
	KeyUnknown bool
}

// Attrs are the attributes of an Event that some limiters route by:
// Descriptors and Vars as in Request. Several events may share one.
type Attrs struct {
	Descriptors []Descriptor
	Vars        map[string]string
}

// Events is what Check judges: the events, in any order (Add, At), held
// in columns, and the tables their indices point into. Build the tables
// with AddKey and AddAttrs, or fill Keys and Attrs directly.
type Events struct {
	// Keys are the keys Event.Key indexes.
	Keys []string
	// Attrs are the attributes Event.Attrs indexes (minus one).
	Attrs []Attrs
	// Name returns the name (a request ID) of Event.Req req for violations
	// and findings; nil names it by the decimal req.
	Name func(req int32) string

	// the events' columns: keyCol and attrCol are nil while every event's
	// Key and Attrs are 0; req is nil while every event's Req is its index
	// (a replay of every request in order: 4 bytes an event less); flags
	// holds the Outcome and flagKeyUnknown (its length is the number of
	// events); lo and hi in about 4 bytes an event each (nscol.Column)
	lo, hi  nscol.Column
	req     []int32
	keyCol  idxCol
	attrCol idxCol
	flags   []uint8
	keyIdx  map[string]int32
}

// idxCol is a column of non-negative int32 indices (Event.Key, Event.Attrs):
// empty while every value is 0, 2 bytes a value while every one is below
// 65536 (narrow), 4 (wide) from the first that is not.
type idxCol struct {
	narrow []uint16
	wide   []int32
}

// grow makes room for n more values once the column holds any.
func (c *idxCol) grow(n int) {
	switch {
	case c.wide != nil:
		c.wide = slices.Grow(c.wide, n)
	case c.narrow != nil:
		c.narrow = slices.Grow(c.narrow, n)
	}
}

// add appends v as value j (the column's values before it are j, zeros
// while it is empty); capHint is the capacity to allocate at the first
// value that is not 0.
func (c *idxCol) add(v int32, j, capHint int) {
	switch {
	case c.wide != nil:
		c.wide = append(c.wide, v)
	case v >= 0 && v <= math.MaxUint16:
		if v != 0 && c.narrow == nil {
			c.narrow = make([]uint16, j, max(capHint, j+1))
		}
		if c.narrow != nil {
			c.narrow = append(c.narrow, uint16(v))
		}
	default:
		c.wide = make([]int32, j, max(capHint, j+1))
		for i, x := range c.narrow {
			c.wide[i] = int32(x)
		}
		c.narrow = nil
		c.wide = append(c.wide, v)
	}
}

// at returns value j.
func (c *idxCol) at(j int) int32 {
	switch {
	case c.wide != nil:
		return c.wide[j]
	case c.narrow != nil:
		return int32(c.narrow[j])
	}
	return 0
}

// flagKeyUnknown is Event.KeyUnknown in Events.flags.
const flagKeyUnknown = 0x80

// Grow makes room for n more events.
func (evs *Events) Grow(n int) {
	evs.lo.Grow(n)
	evs.hi.Grow(n)
	evs.flags = slices.Grow(evs.flags, n)
	if evs.req != nil {
		evs.req = slices.Grow(evs.req, n)
	}
	evs.keyCol.grow(n)
	evs.attrCol.grow(n)
}

// Add appends e.
func (evs *Events) Add(e Event) {
	evs.lo.Add(e.Lo)
	evs.hi.Add(e.Hi)
	j := len(evs.flags)
	f := uint8(e.Outcome)
	if e.KeyUnknown {
		f |= flagKeyUnknown
	}
	evs.flags = append(evs.flags, f)
	if evs.req == nil && e.Req != int32(j) {
		evs.req = make([]int32, j, cap(evs.flags))
		for i := range evs.req {
			evs.req[i] = int32(i)
		}
	}
	if evs.req != nil {
		evs.req = append(evs.req, e.Req)
	}
	evs.keyCol.add(e.Key, j, cap(evs.flags))
	evs.attrCol.add(e.Attrs, j, cap(evs.flags))
}

// Len is the number of events.
func (evs *Events) Len() int { return len(evs.flags) }

// reqOf is event j's Req.
func (evs *Events) reqOf(j int) int32 {
	if evs.req == nil {
		return int32(j)
	}
	return evs.req[j]
}

// At returns event j.
func (evs *Events) At(j int) Event {
	e := Event{Lo: evs.lo.At(j), Hi: evs.hi.At(j), Req: evs.reqOf(j), Outcome: evs.outcome(j), KeyUnknown: evs.keyUnknown(j)}
	e.Key, e.Attrs = evs.keyCol.at(j), evs.attrCol.at(j)
	return e
}

// outcome is event j's Outcome.
func (evs *Events) outcome(j int) Outcome { return Outcome(evs.flags[j] &^ flagKeyUnknown) }

// keyUnknown is event j's KeyUnknown.
func (evs *Events) keyUnknown(j int) bool { return evs.flags[j]&flagKeyUnknown != 0 }

// AddKey returns key's index in Keys, appending it when it is not there
// (keys appended by AddKey are looked up in a map; set Keys before the
// first call, or only use AddKey).
func (evs *Events) AddKey(key string) int32 {
	if evs.keyIdx == nil {
		evs.keyIdx = make(map[string]int32, len(evs.Keys)+1)
		for k, s := range evs.Keys {
			if _, ok := evs.keyIdx[s]; !ok {
				evs.keyIdx[s] = int32(k)
			}
		}
	}
	k, ok := evs.keyIdx[key]
	if !ok {
		k = int32(len(evs.Keys))
		evs.Keys = append(evs.Keys, key)
		evs.keyIdx[key] = k
	}
	return k
}

// AddAttrs appends a and returns its Event.Attrs (its index plus one).
func (evs *Events) AddAttrs(a Attrs) int32 {
	evs.Attrs = append(evs.Attrs, a)
	return int32(len(evs.Attrs))
}

// name is the name of request req (Events.Name).
func (evs *Events) name(req int32) string {
	if evs.Name == nil {
		return strconv.Itoa(int(req))
	}
	return evs.Name(req)
}

// key returns e's key (Keys[e.Key]; "" out of range).
func (evs *Events) key(e *Event) string {
	if e.Key < 0 || int(e.Key) >= len(evs.Keys) {
		return ""
	}
	return evs.Keys[e.Key]
}

// attrs returns e's attributes; nil without.
func (evs *Events) attrs(e *Event) *Attrs {
	if e.Attrs <= 0 || int(e.Attrs) > len(evs.Attrs) {
		return nil
	}
	return &evs.Attrs[e.Attrs-1]
}

// routeOf is what a model's route reads of event e: its key and attributes.
func (evs *Events) routeOf(e *Event) routeIn {
	return routeIn{key: evs.key(e), attrs: evs.attrs(e)}
}

// routeAt is routeOf of event j.
func (evs *Events) routeAt(j int) routeIn {
	e := evs.At(j)
	return evs.routeOf(&e)
}

// routeIn is an event as its model routes it.
type routeIn struct {
	key   string
	attrs *Attrs
}

// descriptors returns the event's descriptors (Attrs.Descriptors), nil without Attrs.
func (e *routeIn) descriptors() []Descriptor {
	if e.attrs == nil {
		return nil
	}
	return e.attrs.Descriptors
}

// vars returns the event's zone variables (Attrs.Vars), nil without Attrs.
func (e *routeIn) vars() map[string]string {
	if e.attrs == nil {
		return nil
	}
	return e.attrs.Vars
}

// Options tunes Check.
type Options struct {
	// Widen is added to both ends of every interval (clock offset between
	// the clients and the limiter, timer lag).
	Widen time.Duration
	// UnknownInitialState: the limiter may have served other traffic before
	// the first event, so its state then is unknown (a bucket anywhere from
	// empty to full). Only lower bounds change: a fresh, full bucket is the
	// default.
	UnknownInitialState bool
	// ShadowVisible: for a limiter that does not enforce every rejection
	// (dry run, shadow mode, filter_enforced below 100 %), the outcomes tell
	// ShadowRejected apart from Admitted (nginx $limit_req_status, Envoy's
	// request_headers_to_add_when_not_enforced). Without it an Admitted
	// request of such a limiter may have been rejected by its state.
	ShadowVisible bool
	// NoTimingReport skips the second pass that counts how many "either"
	// verdicts come from timing uncertainty (Uncertainty.EitherFromTiming).
	NoTimingReport bool
	// NoFindingIDs leaves every WindowFinding's IDs nil: for a caller that
	// reads a finding's Why and counts alone, the check neither sorts nor
	// names the requests in excess (a tight run's hundreds of thousands
	// per bucket). The findings are otherwise the same.
	NoFindingIDs bool
	// NoWidths leaves Uncertainty's MaxWidth, MedianWidth and P99Width
	// zero: for a caller that gathers the interval widths over several
	// checks itself (analyze), the check does not sort every event's.
	NoWidths bool
}

// Violation is one request whose outcome contradicts its verdict.
type Violation struct {
	ID      string // Events.Name of Req
	Req     int32  // the event's Event.Req
	Index   int    // position in the Events (Events.At)
	Verdict Verdict
	Outcome Outcome
	Bucket  string // the bucket or window that decides
	Why     string
}

// WindowFinding is a count that cannot happen under the model: too many
// admissions surely inside a window (TooMany) or too few among the requests
// that may lie in it. From and To are unix ns (both 0: the whole run).
type WindowFinding struct {
	Bucket   string
	From, To int64
	TooMany  bool
	Admitted int // observed: surely inside (TooMany) or possibly inside
	Limit    int // the most (TooMany) or the fewest the model allows
	// Windows counts the distinct windows found in breach (the finding
	// describes the worst).
	Windows int
	// IDs names the excess admissions (latest possible arrivals first) or
	// the rejections that should have been admitted (earliest first).
	IDs []string
	Why string
}

// Bound is the admitted count of one bucket (a key and, for Envoy, a
// descriptor or the default bucket; for nginx a zone and key), one fixed
// window of it, or the run, over every schedule consistent with the offered
// intervals (computed from the requests that may have arrived, not from
// their outcomes).
type Bound struct {
	Bucket   string // "key", "key|default", "zone|key"...; empty in Result.Total
	From, To int64  // window bounds, unix ns; 0, 0 for a whole bucket or run
	Offered  int    // requests that may have reached it
	Min, Max int    // the model's admitted count lies in [Min, Max]
	Admitted int    // observed admissions surely in it
	Possible int    // observed admissions or no-responses possibly in it
}

// Holds reports whether the observation fits the bound: no more sure
// admissions than Max and no fewer possible ones than Min.
func (b Bound) Holds() bool { return b.Admitted <= b.Max && b.Possible >= b.Min }

// Uncertainty reports how wide the timing uncertainty was.
type Uncertainty struct {
	MaxWidth, MedianWidth, P99Width time.Duration
	// Either counts the requests judged "either"; EitherFromTiming those of
	// them that exact arrival times (each interval's midpoint) would have
	// decided.
	Either, EitherFromTiming int
}

// Result is the outcome of Check.
type Result struct {
	// Verdicts has one verdict per event, in input order.
	Verdicts []Verdict
	// MustAdmit and MustReject count the decided verdicts; Observed the events
	// with an outcome other than Unknown.
	MustAdmit, MustReject, Observed int
	// Over: admitted where the model must reject. Under: rejected where it
	// must admit (or rejected by a limiter that never enforces). Shadow:
	// passed a limiter that does not enforce every rejection where the model
	// must reject: would-have-rejected, not a violation.
	Over, Under, Shadow []Violation
	// Windows are count findings (window, bucket and run level).
	Windows []WindowFinding
	// Buckets has one bound per bucket (sorted by name), WindowBounds one
	// per fixed window, Total the run's.
	Buckets      []Bound
	WindowBounds []Bound
	Total        Bound
	Uncertainty  Uncertainty
}

// Validity is Jepsen's tri-valued :valid? (valid, invalid or unknown), the
// verdict of a model check here and of a checker in package analyze.
// Merging takes the highest priority (Jepsen's merge-valid): invalid over
// unknown over valid.
type Validity int

// Validities, by increasing priority. NotChecked is a result without checks:
// it takes no part in a merge, and a composition of nothing but NotChecked
// results is UnknownValidity, never Valid.
const (
	NotChecked Validity = iota
	Valid
	// UnknownValidity: the check could not be decided (for a model check:
	// no request with an observed outcome).
	UnknownValidity
	Invalid
)

// String returns "not checked", "valid", "unknown" or "invalid".
func (v Validity) String() string {
	switch v {
	case Valid:
		return "valid"
	case UnknownValidity:
		return "unknown"
	case Invalid:
		return "invalid"
	}
	return "not checked"
}

// Merge returns the validity of a and b together: invalid > unknown > valid
// > not checked.
func Merge(a, b Validity) Validity { return max(a, b) }

// Validity returns the verdict of the check and the reasons behind it:
// invalid if any violation or count finding, unknown if no request had an
// observed outcome, valid otherwise.
func (r *Result) Validity() (Validity, []string) {
	var why []string
	if n := len(r.Over); n > 0 {
		why = append(why, fmt.Sprintf("%d over-admitted (%s)", n, firstIDs(r.Over)))
	}
	if n := len(r.Under); n > 0 {
		why = append(why, fmt.Sprintf("%d under-admitted (%s)", n, firstIDs(r.Under)))
	}
	for _, w := range r.Windows {
		why = append(why, w.Why)
	}
	if len(why) > 0 {
		return Invalid, why
	}
	if r.Observed == 0 {
		return UnknownValidity, []string{"nothing to check: no request with an observed outcome"}
	}
	return Valid, nil
}

func firstIDs(v []Violation) string {
	var b strings.Builder
	for i, x := range v {
		if i == 5 {
			fmt.Fprintf(&b, ", ... %d more", len(v)-5)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(x.ID)
	}
	return b.String()
}

// checkModel is what the checker needs from a model.
type checkModel interface {
	// route appends the buckets e touches, in the order the limiter consumes
	// them (none: e is not limited).
	route(e *routeIn, dst []bucketRef) []bucketRef
	// chain: buckets are consumed in order and the first one without room
	// rejects, earlier ones staying charged (Envoy); otherwise a rejection
	// charges none of them (nginx's zones) or the primitive counts every hit.
	chain() bool
	flags() specFlags
}

type specFlags struct {
	shadowy        bool // some rejections may not be enforced
	neverRejects   bool // no rejection is ever enforced
	enabledPartial bool // some requests are not checked at all
}

type bucketRef struct {
	id     string
	params primParams
	tie    bool // same consumption rank as the previous ref: order unknown
}

type primParams interface {
	newPrim(c *primCtx) prim
	countsAll() bool
	timeUnit() int64
}

func (p *tbParams) timeUnit() int64 { return p.unit }
func (p *fwParams) timeUnit() int64 { return 1 }
func (p *slParams) timeUnit() int64 { return 1 }
func (p *scParams) timeUnit() int64 { return 1 }

type prim interface {
	activate(l int32)
	mustReject(l int32) (bool, float64)
	insert(l int32)
	markUnder(l int32)
	mustAdmit(l int32, self bool) (bool, float64)
	why(reject bool, v float64) string
	findings() []WindowFinding
	bounds(single bool) (int, int)
}

// primCtx is one bucket's events as its primitive sees them.
type primCtx struct {
	name   string
	unit   int64
	lo, hi []int64
	// obs holds each local event's outcome as the bounds see it, in bits
	// (isKnown, isAdmitted, isAdmittedSure, isRejected): 1 byte an event,
	// not 4 arrays of bools.
	obs         []uint8
	siblings    int
	initUnknown bool
	// ids names local events (nil when noIDs: Options.NoFindingIDs)
	ids        func([]int32) []string
	noIDs      bool
	sure, poss []bool
}

// The bits of primCtx.obs.
const (
	obsKnown        = 1 << iota // an outcome other than Unknown
	obsAdmitted                 // Admitted
	obsAdmittedSure             // Admitted, and the admission is certain
	obsRejected                 // Rejected or ShadowRejected
)

// isKnown reports whether local event l has an outcome (not Unknown).
func (c *primCtx) isKnown(l int) bool { return c.obs[l]&obsKnown != 0 }

// isAdmitted reports whether local event l was admitted.
func (c *primCtx) isAdmitted(l int) bool { return c.obs[l]&obsAdmitted != 0 }

// isAdmittedSure reports whether local event l was admitted, certainly.
func (c *primCtx) isAdmittedSure(l int) bool { return c.obs[l]&obsAdmittedSure != 0 }

// isRejected reports whether local event l was rejected (or shadow-rejected).
func (c *primCtx) isRejected(l int) bool { return c.obs[l]&obsRejected != 0 }

type bucket struct {
	id     string
	params primParams
	// ev is each local event's index in the events; nil in a plan whose
	// events are its one bucket's, in order (plan.ident): local index l is
	// event l (bucket.event).
	ev       []int32
	lo, hi   []int64 // widened, in the params' time unit
	mid      []int64 // midpoints, for the timing report (plan.fillMid)
	sure     []bool
	poss     []bool
	single   bool
	siblings int
}

type plan struct {
	buckets []*bucket
	// event j's refs are rStart[j] to rStart[j+1]-1, ref r charging local
	// event rL[r] of bucket rB[r] (plan.refs, plan.ref). oneRef: every
	// event has one ref, ref j, and rStart is not held (4 bytes an
	// event). ident: besides, every event is charged to bucket 0, as its
	// local event j (one limiter bucket: a shared key, a single target),
	// and rB, rL and the bucket's ev are not held either (16 bytes).
	rStart []int32
	rB, rL []int32
	oneRef bool
	ident  bool
	chain  bool
	// perBucket: every event charges one bucket and there are several, so
	// Check judges one bucket at a time; a bucket's columns (lo, hi,
	// sure, poss, mid) are filled only while it is judged (plan.fill),
	// from the events and charges (each event's sure and possible charge
	// bits, chargeSure and chargePoss), and rB and rL are not held (a
	// bucket's sweep takes its events' local indices from its order,
	// sweeper.ref: 8 bytes an event).
	perBucket bool
	// wrapped: an event's widened lo or hi overflowed int64 (buildPlan
	// sees every event), so a bucket's columns may not sort as its
	// events' times do (bucketOrder).
	wrapped bool
	charges []uint8
	orders  [2]*orders // [0] intervals, [1] midpoints
	widen   int64      // buildPlan's, for fillMid
	// noIDs: the findings name no request (Options.NoFindingIDs)
	noIDs bool
}

// refs returns event j's first ref and the one after its last.
func (pl *plan) refs(j int32) (int32, int32) {
	if pl.oneRef {
		return j, j + 1
	}
	return pl.rStart[j], pl.rStart[j+1]
}

// ref returns ref r's bucket and local event.
func (pl *plan) ref(r int32) (b, l int32) {
	if pl.ident {
		return 0, r
	}
	return pl.rB[r], pl.rL[r]
}

// size is the number of the bucket's local events.
func (bk *bucket) size() int {
	if bk.ev != nil {
		return len(bk.ev) // its columns may not be filled (plan.perBucket)
	}
	return len(bk.lo)
}

// event is local event l's index in the events.
func (bk *bucket) event(l int32) int32 {
	if bk.ev == nil {
		return l
	}
	return bk.ev[l]
}

// orders are the sort orders one pass of a sweep uses. The must-reject
// pass walks the events by lo (g) and each bucket's local events by hi
// (b); the must-admit pass the events by hi and each bucket's local
// events by lo. Each pass builds its own (plan.order), so the two passes'
// orders never live together.
type orders struct {
	g []int32
	b [][]int32
	// one is bucket only's order, for a sweep of that bucket alone
	// (plan.bucketOrder); b and g are then nil, and loc[k] is the local
	// index in the bucket of the k-th event (a perBucket plan holds no
	// rL), ev the bucket's events (bucket.ev).
	one  []int32
	only int32
	loc  []int32
	ev   []int32
}

// len is the number of events the pass walks.
func (o *orders) len() int {
	if o.loc != nil {
		return len(o.loc)
	}
	return len(o.g)
}

// event is the k-th event the pass walks.
func (o *orders) event(k int) int32 {
	if o.loc != nil {
		return o.ev[o.loc[k]]
	}
	return o.g[k]
}

// of returns bucket b's order (nil: b takes no part in the pass).
func (o *orders) of(b int32) []int32 {
	if o.b == nil {
		if b == o.only {
			return o.one
		}
		return nil
	}
	return o.b[b]
}

// bucketOrder is plan.order for a sweep of bucket b alone, in a plan
// where every event charges one bucket (oneRef): loc holds b's events only,
// by local index, in the order plan.order gives them (the same key, ties
// by event index, which its local indices follow). Nothing is kept for a
// later sweep. The orders are built in the memory of old (the previous
// pass's bucket orders, done with; nil: none) where it is large enough.
func (pl *plan) bucketOrder(evs *Events, b int32, mid, admit bool, old *orders) *orders {
	bk := pl.buckets[b]
	var bufLoc, bufOne []int32
	if old != nil {
		bufLoc = old.loc
		if len(old.one) == 0 || len(old.loc) == 0 || &old.one[0] != &old.loc[0] {
			bufOne = old.one // not the same array as loc (a mid order)
		}
	}
	if bk.params.timeUnit() <= 1 && !pl.wrapped {
		// the bucket's columns are its events' times shifted by the
		// widening (mid: unchanged, as hi >= lo): the same order, read
		// from a slice rather than the events' chunked columns
		if mid { // one order serves both (neither is written)
			o := orderByIn(bufLoc, bk.mid)
			return &orders{loc: o, ev: bk.ev, one: o, only: b}
		}
		k, v := bk.lo, bk.hi
		if admit {
			k, v = bk.hi, bk.lo
		}
		return &orders{loc: orderByIn(bufLoc, k), ev: bk.ev, one: orderByIn(bufOne, v), only: b}
	}
	key := func(l int32) int64 { return evs.lo.At(int(bk.event(l))) }
	v := bk.hi
	switch {
	case mid:
		key = func(l int32) int64 {
			j := bk.event(l)
			return evs.lo.At(int(j)) + (evs.hi.At(int(j))-evs.lo.At(int(j)))/2
		}
		v = bk.mid
	case admit:
		key = func(l int32) int64 { return evs.hi.At(int(bk.event(l))) }
		v = bk.lo
	}
	return &orders{loc: orderByKeyIn(bufLoc, bk.size(), key), ev: bk.ev, one: orderByIn(bufOne, v), only: b}
}

// ref returns ref r's bucket and local event, r being a ref of the k-th
// event of the pass's order (plan.ref; a one-bucket order knows them).
func (sw *sweeper) ref(k int, r int32) (b, l int32) {
	if o := sw.ord; o.loc != nil {
		return o.only, o.loc[k]
	}
	return sw.pl.ref(r)
}

// order returns the sort orders of the must-admit pass (admit) or of the
// must-reject pass, of the intervals or of their midpoints (mid). The
// must-admit orders are kept for a later sweep of the same kind (the
// offered bounds' sweep is a must-admit pass alone); the must-reject ones
// are the caller's.
func (pl *plan) order(evs *Events, mid, admit bool) *orders {
	k := 0
	if mid {
		k = 1
	}
	if admit && pl.orders[k] != nil {
		return pl.orders[k]
	}
	// the events' order by lo or by hi (their midpoint when mid), read
	// from the events: no copy of their times (16 bytes an event) lives
	// beside the plan and the primitives
	key := func(j int32) int64 { return evs.lo.At(int(j)) }
	if admit {
		key = func(j int32) int64 { return evs.hi.At(int(j)) }
	}
	if mid {
		key = func(j int32) int64 { return evs.lo.At(int(j)) + (evs.hi.At(int(j))-evs.lo.At(int(j)))/2 }
	}
	o := &orders{g: orderByKey(evs.Len(), key)}
	for _, bk := range pl.buckets {
		v := bk.hi
		switch {
		case mid:
			v = bk.mid
		case admit:
			v = bk.lo
		}
		o.b = append(o.b, orderBy(v))
	}
	if admit {
		pl.orders[k] = o
	}
	return o
}

// maxUnknownKeyCharges bounds the possible charges that events with an
// unknown key add (one per such event and bucket of the known events):
// beyond it Check returns an error rather than take unbounded memory.
var maxUnknownKeyCharges = 8 << 20

func buildPlan(cm checkModel, evs *Events, widen int64, admitUncertain bool) (*plan, error) {
	// ri is the event being routed (one for every event: a pointer given
	// to an interface method escapes)
	ri := &routeIn{}
	pl := &plan{chain: cm.chain(), rStart: make([]int32, evs.Len()+1), widen: widen}
	idx := map[string]int32{}
	var refs []bucketRef
	// every bucket the known events use, for the events whose key is unknown
	var all []bucketRef
	unknown := 0
	for i := range evs.Len() {
		if evs.keyUnknown(int(i)) {
			unknown++
		}
	}
	if unknown > 0 {
		seen := map[string]bool{}
		for j := range evs.Len() {
			if evs.keyUnknown(int(j)) {
				continue
			}
			*ri = evs.routeAt(j)
			refs = cm.route(ri, refs[:0])
			for _, ref := range refs {
				if !seen[ref.id] {
					seen[ref.id] = true
					all = append(all, bucketRef{id: ref.id, params: ref.params})
				}
			}
		}
		if unknown*len(all) > maxUnknownKeyCharges {
			return nil, fmt.Errorf("model check: %d events with an unknown key over %d buckets: more than %d possible charges to judge",
				unknown, len(all), maxUnknownKeyCharges)
		}
	}
	// Two passes, so that every bucket's columns are allocated once at
	// their final size (a million events: no append slack, no regrowth).
	// The first routes every event, keeping each ref's bucket and charge;
	// the second fills the buckets' columns.
	pl.rB = make([]int32, 0, evs.Len())
	var charges []uint8
	var counts []int32
	for i := range evs.Len() {
		e := evs.At(int(i))
		if e.KeyUnknown {
			refs = append(refs[:0], all...)
		} else {
			*ri = evs.routeOf(&e)
			refs = cm.route(ri, refs[:0])
		}
		for k, ref := range refs {
			b, ok := idx[ref.id]
			if !ok {
				b = int32(len(pl.buckets))
				idx[ref.id] = b
				pl.buckets = append(pl.buckets, &bucket{id: ref.id, params: ref.params, single: true})
				counts = append(counts, 0)
			}
			counts[b]++
			sure, poss := charge(e.Outcome, ref.params.countsAll(), pl.chain, k, refs, admitUncertain)
			if e.KeyUnknown {
				sure, poss = false, true
			}
			var c uint8
			if sure {
				c |= chargeSure
			}
			if poss {
				c |= chargePoss
			}
			charges = append(charges, c)
			if len(refs) > 1 || e.KeyUnknown {
				pl.buckets[b].single = false
			}
			pl.rB = append(pl.rB, b)
		}
		pl.rStart[i+1] = int32(len(pl.rB))
	}
	pl.oneRef = len(pl.rB) == evs.Len()
	for i := 0; pl.oneRef && i < evs.Len(); i++ {
		pl.oneRef = pl.rStart[i+1] == int32(i+1)
	}
	pl.ident = pl.oneRef && len(pl.buckets) == 1
	if pl.oneRef {
		pl.rStart = nil
	}
	if pl.ident {
		pl.rB = nil
	}
	pl.perBucket = pl.oneRef && len(pl.buckets) > 1 && !checkAllAtOnce
	for b, bk := range pl.buckets {
		n := counts[b]
		if !pl.ident {
			bk.ev = make([]int32, 0, n)
		}
		if !pl.perBucket {
			bk.lo, bk.hi = make([]int64, 0, n), make([]int64, 0, n)
			bk.sure, bk.poss = make([]bool, 0, n), make([]bool, 0, n)
		}
	}
	if !pl.ident && !pl.perBucket {
		pl.rL = make([]int32, len(charges))
	}
	if pl.perBucket {
		pl.charges = charges
	}
	for i := range evs.Len() {
		e := evs.At(int(i))
		lo, hi := e.Lo-widen, e.Hi+widen
		pl.wrapped = pl.wrapped || lo > e.Lo || hi < e.Hi
		rs, re := pl.refs(int32(i))
		for r := rs; r < re; r++ {
			bk := pl.buckets[0]
			if !pl.ident {
				bk = pl.buckets[pl.rB[r]] // pl.ref: rL is being filled
				bk.ev = append(bk.ev, int32(i))
			}
			if pl.perBucket {
				continue // filled while the bucket is judged
			}
			if !pl.ident {
				pl.rL[r] = int32(len(bk.ev) - 1)
			}
			u := bk.params.timeUnit()
			bk.lo = append(bk.lo, floorDiv(lo, u))
			bk.hi = append(bk.hi, unitHi(hi, u))
			bk.sure = append(bk.sure, charges[r]&chargeSure != 0)
			bk.poss = append(bk.poss, charges[r]&chargePoss != 0)
		}
	}
	sib := map[primParams]int{}
	for _, b := range pl.buckets {
		sib[b.params]++
	}
	for _, b := range pl.buckets {
		b.siblings = sib[b.params]
	}
	if pl.perBucket {
		pl.rB = nil // a bucket's events are its ev, their local index their rank in it
	}
	return pl, nil
}

// The bits of plan.charges: the event's charge of its bucket is sure, possible.
const (
	chargeSure = 1 << iota
	chargePoss
)

// checkAllAtOnce makes buildPlan never plan a bucket at a time (perBucket):
// the tests compare both ways.
var checkAllAtOnce = false

// unitHi is a widened hi in time unit u: a coarse clock of its own (nginx's
// cached monotonic ms) ticks offset from the clients' clock by up to one
// unit, so floor(hi)+1 bounds its reading.
func unitHi(hi, u int64) int64 {
	if u > 1 {
		return floorDiv(hi, u) + 1
	}
	return hi
}

// fill fills bucket b's columns (lo, hi, sure, poss, and mid when mid) in
// a perBucket plan, as buildPlan and fillMid fill every bucket's in the
// others.
func (pl *plan) fill(evs *Events, b int32, mid bool) {
	bk := pl.buckets[b]
	n := len(bk.ev)
	u := bk.params.timeUnit()
	bk.lo, bk.hi = make([]int64, n), make([]int64, n)
	bk.sure, bk.poss = make([]bool, n), make([]bool, n)
	if mid {
		bk.mid = make([]int64, n)
	}
	for l, j := range bk.ev {
		lo, hi := evs.lo.At(int(j))-pl.widen, evs.hi.At(int(j))+pl.widen
		bk.lo[l], bk.hi[l] = floorDiv(lo, u), unitHi(hi, u)
		if mid {
			bk.mid[l] = floorDiv(lo+(hi-lo)/2, u)
		}
		c := pl.charges[j] // one ref an event: ref j
		bk.sure[l], bk.poss[l] = c&chargeSure != 0, c&chargePoss != 0
	}
}

// release drops bucket b's columns (fill) once it is judged.
func (pl *plan) release(b int32) {
	bk := pl.buckets[b]
	bk.lo, bk.hi, bk.sure, bk.poss, bk.mid = nil, nil, nil, nil, nil
}

// fillMid sets every bucket's midpoints (bucket.mid), which only the
// timing report's sweep reads: a plan built without them holds 8 bytes
// less per event through the interval sweep and the bounds.
func (pl *plan) fillMid(evs *Events) {
	for _, bk := range pl.buckets {
		bk.mid = make([]int64, 0, bk.size())
	}
	for i := range evs.Len() {
		lo, hi := evs.lo.At(i)-pl.widen, evs.hi.At(i)+pl.widen
		rs, re := pl.refs(int32(i))
		for r := rs; r < re; r++ {
			b, _ := pl.ref(r)
			bk := pl.buckets[b]
			bk.mid = append(bk.mid, floorDiv(lo+(hi-lo)/2, bk.params.timeUnit()))
		}
	}
}

// charge tells whether the event surely / possibly took room in the k-th
// bucket of its route.
func charge(o Outcome, countsAll, chain bool, k int, refs []bucketRef, admitUncertain bool) (sure, poss bool) {
	switch {
	case countsAll:
		return o != Unknown, true
	case o == Admitted:
		return !admitUncertain, true
	case o == Unknown:
		return false, true
	}
	// rejected (or shadow-rejected) by the limiter's state
	if !chain {
		return false, false
	}
	last := k == len(refs)-1
	return false, !last || refs[k].tie
}

type sweepOut struct {
	mustR, mustA []bool
	// rWhy and aWhy hold the bucket that decided a must-reject of an
	// admitted event and a must-admit of a rejected one (the violations'
	// Bucket and Why), only for those events: a verdict the outcome agrees
	// with needs none (a million events: 24 MB less).
	rWhy, aWhy map[int32]decidedBy
}

// decidedBy is the bucket (plan index) that decided a verdict and the
// primitive's value for its why.
type decidedBy struct {
	b int32
	v float64
}

// note records in *m that bucket b decided event j's verdict with value v.
func note(m *map[int32]decidedBy, j, b int32, v float64) {
	if *m == nil {
		*m = map[int32]decidedBy{}
	}
	(*m)[j] = decidedBy{b, v}
}
func (pl *plan) prims(evs *Events, mid bool, initUnknown bool, admitUncertain bool) []prim {
	out := make([]prim, len(pl.buckets))
	for b := range pl.buckets {
		out[b], _ = pl.prim(evs, int32(b), mid, initUnknown, admitUncertain)
	}
	return out
}

// prim returns bucket b's primitive and the events it sees (its columns
// filled).
func (pl *plan) prim(evs *Events, b int32, mid bool, initUnknown bool, admitUncertain bool) (prim, *primCtx) {
	bk := pl.buckets[b]
	n := bk.size()
	c := &primCtx{name: bk.id, unit: bk.params.timeUnit(), lo: bk.lo, hi: bk.hi, siblings: bk.siblings,
		initUnknown: initUnknown, sure: bk.sure, poss: bk.poss, obs: make([]uint8, n), noIDs: pl.noIDs}
	if mid {
		c.lo, c.hi = bk.mid, bk.mid
	}
	for l := range n {
		o := evs.outcomeIn(int(bk.event(int32(l))))
		var f uint8
		if o != Unknown {
			f |= obsKnown
		}
		if o == Admitted {
			f |= obsAdmitted
			if !admitUncertain {
				f |= obsAdmittedSure
			}
		}
		if o == Rejected || o == ShadowRejected {
			f |= obsRejected
		}
		c.obs[l] = f
	}
	c.ids = func(ls []int32) []string {
		if c.noIDs {
			return nil
		}
		ids := make([]string, len(ls))
		for i, l := range ls {
			ids[i] = evs.name(evs.reqOf(int(bk.event(l))))
		}
		return ids
	}
	return bk.params.newPrim(c), c
}

// sweep computes the must-reject verdicts (in order of lo, activating the
// sure charges of requests surely before) and the must-admit verdicts (in
// order of hi, inserting every possible charge that may come before).
// Requests found over-admitted are not counted as sure charges for later
// ones, and under-admitted ones count as possible charges for requests
// surely after them, so one wrong decision is reported once, not as a
// cascade. offered: every request is a possible charge and none a sure one
// (the bounds computed from the offered arrivals only).
func (pl *plan) sweep(evs *Events, prims []prim, mid, offered, admitUncertain bool) *sweepOut {
	sw := pl.sweeper(evs, prims, mid)
	if pl.oneRef && len(pl.buckets) > 1 {
		// every event charges one bucket, so the buckets' verdicts are
		// independent: sweeping them one at a time gives the verdicts of
		// the sweep of all (each bucket's primitive sees the same calls in
		// the same order) while only one bucket's orders and pass state
		// (trees, counts) live at a time
		for b := range pl.buckets {
			sw.sweepBucket(int32(b), offered, admitUncertain)
		}
		return sw.so
	}
	sw.sweepAll(offered, admitUncertain)
	return sw.so
}

// sweeper returns a sweep's state, its output all false.
func (pl *plan) sweeper(evs *Events, prims []prim, mid bool) *sweeper {
	n := evs.Len()
	so := &sweepOut{mustR: make([]bool, n), mustA: make([]bool, n)}
	return &sweeper{pl: pl, evs: evs, prims: prims, mid: mid, so: so, ptr: make([]int, len(pl.buckets))}
}

// sweepAll runs both passes over every bucket at once (sweep).
func (sw *sweeper) sweepAll(offered, admitUncertain bool) {
	pl := sw.pl
	if !offered {
		sw.ord = pl.order(sw.evs, sw.mid, false)
		sw.mustRejectPass(admitUncertain)
		for _, pr := range sw.prims {
			if d, ok := pr.(interface{ rejectPassDone() }); ok {
				d.rejectPassDone() // its must-reject state is done with
			}
		}
	}
	clear(sw.ptr)
	sw.ord = nil // the must-reject orders are done with
	sw.ord = pl.order(sw.evs, sw.mid, true)
	sw.mustAdmitPass(offered)
}

// sweepBucket runs both passes of bucket b alone (sweep, for a plan whose
// events charge one bucket each) and releases its primitive's pass state.
func (sw *sweeper) sweepBucket(b int32, offered, admitUncertain bool) {
	pl, pr := sw.pl, sw.prims[b]
	if !offered {
		sw.ord = pl.bucketOrder(sw.evs, b, sw.mid, false, nil)
		sw.mustRejectPass(admitUncertain)
		if d, ok := pr.(interface{ rejectPassDone() }); ok {
			d.rejectPassDone()
		}
	}
	sw.ptr[b] = 0
	// the must-reject orders are done with: the must-admit orders are
	// built in their memory
	old := sw.ord
	sw.ord = nil
	sw.ord = pl.bucketOrder(sw.evs, b, sw.mid, true, old)
	sw.mustAdmitPass(offered)
	sw.ord = nil
	// the verdicts' why, the bounds and findings need none of its pass
	// state: a token bucket keeps its memory for theirs (sweepDoneSpare;
	// the bounds drop it, and a primitive dropped drops it)
	if d, ok := pr.(interface{ sweepDoneSpare() }); ok {
		d.sweepDoneSpare()
	} else if d, ok := pr.(interface{ sweepDone() }); ok {
		d.sweepDone()
	}
}

// sweeper is one sweep's state: the plan, the events, the buckets'
// primitives, the arrival bounds in use (mid points or lo/hi), the order of
// the events and each bucket's position in it.
type sweeper struct {
	pl    *plan
	evs   *Events
	prims []prim
	mid   bool
	so    *sweepOut
	ord   *orders
	ptr   []int
}

// lo and hi are a bucket's arrival bounds in the sweep's view: the mid
// points for a point replay, else the intervals.
func (sw *sweeper) lo(bk *bucket) []int64 {
	if sw.mid {
		return bk.mid
	}
	return bk.lo
}

func (sw *sweeper) hi(bk *bucket) []int64 {
	if sw.mid {
		return bk.mid
	}
	return bk.hi
}

// mustRejectPass walks the events by lo, activating in each bucket the sure
// charges of requests surely before, and marks the must-reject verdicts and
// the over-admissions.
func (sw *sweeper) mustRejectPass(admitUncertain bool) {
	pl, so, evs := sw.pl, sw.so, sw.evs
	for k := range sw.ord.len() {
		j := sw.ord.event(k)
		if evs.keyUnknown(int(j)) {
			continue // judged by no bucket: either
		}
		rs, re := pl.refs(j)
		for r := rs; r < re; r++ {
			b, l := sw.ref(k, r)
			bk, pr := pl.buckets[b], sw.prims[b]
			bl, bh := sw.lo(bk), sw.hi(bk)
			counts := bk.params.countsAll()
			for o := sw.ord.of(b); sw.ptr[b] < len(o) && bh[o[sw.ptr[b]]] < bl[l]; sw.ptr[b]++ {
				q := o[sw.ptr[b]]
				if bk.sure[q] && (counts || !sw.over(bk.event(q), admitUncertain)) {
					pr.activate(q)
				}
			}
			if ok, v := pr.mustReject(l); ok {
				so.mustR[j] = true
				if !sw.mid && evs.outcome(int(j)) == Admitted { // the point replay's whys are never read
					note(&so.rWhy, j, b, v)
				}
				break
			}
		}
	}
}

// over reports whether the must-reject pass found event j over-admitted:
// admitted where it must be rejected, its admission certain. It is final
// once j is passed, before any event whose lo follows j's hi (the only
// ones that activate j's charge); an array of it would be 1 byte an event.
func (sw *sweeper) over(j int32, admitUncertain bool) bool {
	return sw.so.mustR[j] && sw.evs.outcome(int(j)) == Admitted && !admitUncertain
}

// mustAdmitPass walks the events by hi, inserting in each bucket every
// possible charge that may come before, and marks the must-admit verdicts
// and the under-admissions (not for the offered bounds).
func (sw *sweeper) mustAdmitPass(offered bool) {
	pl, so, evs := sw.pl, sw.so, sw.evs
	for k := range sw.ord.len() {
		j := sw.ord.event(k)
		if evs.keyUnknown(int(j)) {
			continue // its charges are inserted with the others'
		}
		ma := sw.mustAdmit(k, j, offered)
		so.mustA[j] = ma
		if offered || !ma {
			continue
		}
		if o := evs.outcome(int(j)); o == Rejected || o == ShadowRejected {
			rs, re := pl.refs(j)
			for r := rs; r < re; r++ {
				b, l := sw.ref(k, r)
				if bk := pl.buckets[b]; !bk.poss[l] && !bk.params.countsAll() {
					sw.prims[b].markUnder(l)
				}
			}
		}
	}
}

// mustAdmit reports whether every bucket of event j, the k-th of the
// pass's order, must admit it, noting in the sweep's output the bucket
// that decided (the first that may reject, else the tightest).
func (sw *sweeper) mustAdmit(k int, j int32, offered bool) bool {
	pl, so := sw.pl, sw.so
	worst := math.Inf(1)
	// the deciding bucket matters only to a rejected event that must be
	// admitted (an under-admission), and only in the interval sweep (the
	// timing report reads the point replay's marks alone)
	o := sw.evs.outcome(int(j))
	keep := !sw.mid && (o == Rejected || o == ShadowRejected)
	var by decidedBy
	rs, re := pl.refs(j)
	for r := rs; r < re; r++ {
		b, l := sw.ref(k, r)
		bk, pr := pl.buckets[b], sw.prims[b]
		bl, bh := sw.lo(bk), sw.hi(bk)
		for o := sw.ord.of(b); sw.ptr[b] < len(o) && bl[o[sw.ptr[b]]] <= bh[l]; sw.ptr[b]++ {
			if q := o[sw.ptr[b]]; offered || bk.poss[q] {
				pr.insert(q)
			}
		}
		ok, v := pr.mustAdmit(l, offered || bk.poss[l])
		if !ok {
			return false // not a must-admit: no violation to explain
		}
		if v < worst {
			worst = v
			by = decidedBy{b, v}
		}
	}
	if keep && rs < re {
		note(&so.aWhy, j, by.b, by.v)
	}
	return true
}

// Check judges events against m: per request must admit / must reject /
// either, the violations, count findings per window, bucket and run, and the
// bounds of the admitted counts. It errors on malformed events (Lo > Hi).
func Check(m Model, evs *Events, opts Options) (*Result, error) {
	for i := range evs.Len() {
		if evs.lo.At(i) > evs.hi.At(i) {
			return nil, fmt.Errorf("model check: event %d (id %q): lo %d is after hi %d", i, evs.name(evs.reqOf(i)), evs.lo.At(i), evs.hi.At(i))
		}
	}
	ref := int64(0)
	if evs.Len() > 0 {
		ref = evs.lo.At(0)
	}
	cm := m.checker(ref)
	fl := cm.flags()
	admitUncertain := fl.enabledPartial || (fl.shadowy && !opts.ShadowVisible)
	pl, err := buildPlan(cm, evs, int64(opts.Widen), admitUncertain)
	if err != nil {
		return nil, err
	}
	pl.noIDs = opts.NoFindingIDs
	c := &checkRun{pl: pl, evs: evs, opts: opts, fl: fl, admitUncertain: admitUncertain,
		res: &Result{}}
	if pl.perBucket {
		c.byBucket()
		c.uncertainty()
		return c.res, nil
	}
	c.prims = pl.prims(evs, false, opts.UnknownInitialState, admitUncertain)
	c.verdicts(pl.sweep(evs, c.prims, false, false, admitUncertain))
	for _, pr := range c.prims {
		if d, ok := pr.(interface{ sweepDone() }); ok {
			d.sweepDone() // the bounds and findings need none of its sweep state
		}
	}
	off := c.offeredBounds()
	parts := make([]bucketPart, len(pl.buckets))
	for b := range pl.buckets {
		parts[b] = c.bucketPart(b, off)
	}
	c.bounds(parts, off)
	c.uncertainty()
	return c.res, nil
}

// byBucket is Check's sweep, verdicts and bounds of a perBucket plan: each
// bucket in turn is filled, swept (and swept for its offered bounds), its
// findings and bounds computed, and released, so that only one bucket's
// columns, orders and primitive state live at a time. Each bucket's
// primitive sees the calls it would see in Check's sweep of all, in the
// same order (the buckets' verdicts are independent), so the result is the
// same.
func (c *checkRun) byBucket() {
	pl, n, nb := c.pl, c.evs.Len(), len(c.pl.buckets)
	initUnknown := c.opts.UnknownInitialState
	c.prims = make([]prim, nb)
	sw := pl.sweeper(c.evs, c.prims, false)
	// the offered marks are all false without the offered sweep
	// (offeredMustA): no array of them then
	off := &sweepOut{}
	var osw *sweeper
	if c.needOffered() {
		off.mustA = make([]bool, n)
		osw = &sweeper{pl: pl, evs: c.evs, prims: make([]prim, nb), so: &sweepOut{mustR: make([]bool, n), mustA: off.mustA},
			ptr: make([]int, nb)}
	}
	parts := make([]bucketPart, nb)
	for b := range pl.buckets {
		b32 := int32(b)
		pl.fill(c.evs, b32, false)
		var ctx *primCtx
		c.prims[b], ctx = pl.prim(c.evs, b32, false, initUnknown, c.admitUncertain)
		sw.sweepBucket(b32, false, c.admitUncertain)
		if osw != nil {
			osw.prims[b], _ = pl.prim(c.evs, b32, false, initUnknown, c.admitUncertain)
			osw.sweepBucket(b32, true, c.admitUncertain)
			osw.prims[b] = nil
		}
		parts[b] = c.bucketPart(b, off)
		// its primitive stays for the verdicts' why, which read its
		// parameters only
		ctx.lo, ctx.hi, ctx.sure, ctx.poss, ctx.obs = nil, nil, nil, nil, nil
		pl.release(b32)
	}
	c.verdicts(sw.so)
	c.bounds(parts, off)
}

// checkRun is one Check call's state: the plan, its primitives after the
// sweep, and the result being filled.
type checkRun struct {
	pl             *plan
	evs            *Events
	prims          []prim
	opts           Options
	fl             specFlags
	admitUncertain bool
	res            *Result
}

// verdicts turns the sweep's must-reject / must-admit marks into the per
// request verdicts and the violations (over, under, shadow).
func (c *checkRun) verdicts(so *sweepOut) {
	res, pl, prims := c.res, c.pl, c.prims
	// allocated here, after the sweeps: no bucket's columns, orders or
	// trees live beside it (a byte an event)
	res.Verdicts = make([]Verdict, c.evs.Len())
	// every over-admission (or shadow rejection) has a why noted, every
	// under-admission by a bucket too: their lists are allocated once at
	// most that size (a tight run's hundreds of thousands), not regrown,
	// and set back to nil when nothing was appended
	if n := len(so.rWhy); n > 0 && c.admitUncertain {
		res.Shadow = make([]Violation, 0, n)
	} else if n > 0 {
		res.Over = make([]Violation, 0, n)
	}
	if n := len(so.aWhy); n > 0 {
		res.Under = make([]Violation, 0, n)
	}
	for j := range c.evs.Len() {
		v := Either
		switch {
		case so.mustR[j] && so.mustA[j]:
			// cannot both hold for consistent bounds; stay sound
		case so.mustR[j]:
			v = MustReject
			res.MustReject++
		case so.mustA[j]:
			v = MustAdmit
			res.MustAdmit++
		}
		res.Verdicts[j] = v
		e := c.evs.At(int(j))
		if e.Outcome != Unknown {
			res.Observed++
		}
		switch {
		case v == MustReject && e.Outcome == Admitted:
			by := so.rWhy[int32(j)]
			vi := Violation{ID: c.evs.name(e.Req), Req: e.Req, Index: j, Verdict: v, Outcome: e.Outcome, Bucket: pl.buckets[by.b].id,
				Why: prims[by.b].why(true, by.v)}
			if c.admitUncertain {
				res.Shadow = append(res.Shadow, vi)
			} else {
				res.Over = append(res.Over, vi)
			}
		case v == MustAdmit && (e.Outcome == Rejected || e.Outcome == ShadowRejected):
			vi := Violation{ID: c.evs.name(e.Req), Req: e.Req, Index: j, Verdict: v, Outcome: e.Outcome, Why: "not limited: no bucket applies"}
			if rs, re := pl.refs(int32(j)); rs < re {
				by := so.aWhy[int32(j)]
				vi.Bucket = pl.buckets[by.b].id
				vi.Why = prims[by.b].why(false, by.v)
			}
			res.Under = append(res.Under, vi)
		case c.fl.neverRejects && e.Outcome == Rejected && !e.KeyUnknown:
			res.Under = append(res.Under, Violation{ID: c.evs.name(e.Req), Req: e.Req, Index: j, Verdict: v, Outcome: e.Outcome,
				Why: "rejected by a limiter that enforces no rejection (dry run, shadow mode or filter_enforced 0)"})
		}
	}
	if len(res.Over) == 0 {
		res.Over = nil
	}
	if len(res.Under) == 0 {
		res.Under = nil
	}
	if len(res.Shadow) == 0 {
		res.Shadow = nil
	}
}

// offeredBounds is the must-admit marks computed from the offered arrivals
// only (every request a possible charge): a lower bound where no better one
// is known. It is all false when every bucket is a single token bucket.
func (c *checkRun) offeredBounds() *sweepOut {
	pl := c.pl
	if c.needOffered() {
		return pl.sweep(c.evs, pl.prims(c.evs, false, c.opts.UnknownInitialState, c.admitUncertain), false, true, c.admitUncertain)
	}
	return &sweepOut{} // every mark false (offeredMustA)
}

// offeredMustA is off's offered must-admit mark of event j (offeredBounds;
// false when no offered sweep ran, mustA nil).
func offeredMustA(off *sweepOut, j int32) bool { return off.mustA != nil && off.mustA[j] }

// needOffered reports whether the offered bounds' sweep tells anything:
// some bucket is not a single token bucket.
func (c *checkRun) needOffered() bool {
	for _, bk := range c.pl.buckets {
		if _, tb := bk.params.(*tbParams); !bk.single || !tb {
			return true
		}
	}
	return false
}

// bucketPart is what the bounds keep of one bucket: its findings, bound
// and window bounds.
type bucketPart struct {
	findings []WindowFinding
	bound    Bound
	windows  []Bound
}

// bucketPart computes bucket b's findings and bounds from its primitive
// after the sweep (off: the offered bounds' marks).
func (c *checkRun) bucketPart(b int, off *sweepOut) bucketPart {
	p := bucketPart{findings: c.prims[b].findings(), bound: c.bucketBound(b, off)}
	if wb, ok := c.prims[b].(interface{ windowBounds() (int, int, []Bound) }); ok {
		_, _, p.windows = wb.windowBounds()
	}
	return p
}

// bounds fills the per bucket and run bounds of the admitted counts and the
// count findings of the windows, buckets and run.
//
// parts are the buckets' (bucketPart), off the offered bounds' marks.
func (c *checkRun) bounds(parts []bucketPart, off *sweepOut) {
	res, pl := c.res, c.pl
	res.Total = Bound{}
	bmin := make([]int, len(pl.buckets))
	bmax := make([]int, len(pl.buckets))
	for b := range pl.buckets {
		res.Windows = append(res.Windows, parts[b].findings...)
		bd := parts[b].bound
		bmin[b], bmax[b] = bd.Min, bd.Max
		res.Buckets = append(res.Buckets, bd)
		res.WindowBounds = append(res.WindowBounds, parts[b].windows...)
	}
	lastGroup := c.totalBound(off)
	for b, bk := range pl.buckets {
		if bk.single {
			res.Total.Min += bmin[b]
		}
		if g := lastGroup[int32(b)]; g > 0 {
			res.Total.Max += min(g, bmax[b])
		}
	}
	res.Total.Min = min(res.Total.Min, res.Total.Max)
	for _, bd := range res.Buckets {
		res.Windows = append(res.Windows, boundFindings(bd, c.evs, pl, !pl.noIDs, c.admitUncertain)...)
	}
	if tot := res.Total; !tot.Holds() {
		res.Windows = append(res.Windows, boundFindings(tot, c.evs, nil, !pl.noIDs, c.admitUncertain)...)
	}
	slices.SortFunc(res.Buckets, func(a, b Bound) int { return strings.Compare(a.Bucket, b.Bucket) })
}

// bucketBound is bucket b's bound: offered, admitted, possible, and the
// admitted count's min (the primitive's, raised by the offered must-admit
// marks; 0 for a bucket that is not single) and max.
func (c *checkRun) bucketBound(b int, off *sweepOut) Bound {
	bk := c.pl.buckets[b]
	lo, hi := c.prims[b].bounds(bk.single)
	ma, adm, possible := 0, 0, 0
	for l := range bk.size() {
		g := bk.event(int32(l))
		o := c.evs.outcomeIn(int(g))
		if o != Unknown && offeredMustA(off, g) {
			ma++
		}
		if o == Admitted && !c.admitUncertain {
			adm++
		}
		if o == Admitted || o == Unknown {
			possible++
		}
	}
	if !bk.single {
		lo = 0
	}
	return Bound{Bucket: bk.id, Offered: bk.size(), Min: min(max(lo, ma), hi), Max: hi, Admitted: adm, Possible: possible}
}

// totalBound counts the run's offered, admitted and possible requests and
// the parts of its min and max that no single bucket bounds; it returns,
// per bucket, how many requests have it as their last bucket.
func (c *checkRun) totalBound(off *sweepOut) map[int32]int {
	pl := c.pl
	lastGroup := map[int32]int{}
	t := &c.res.Total
	for j := range c.evs.Len() {
		e := c.evs.At(int(j))
		t.Offered++
		if e.Outcome == Admitted && !c.admitUncertain {
			t.Admitted++
		}
		if e.Outcome == Admitted || e.Outcome == Unknown {
			t.Possible++
		}
		rs, re := pl.refs(int32(j))
		switch {
		case e.KeyUnknown:
			t.Max++ // whichever bucket it used (or none) may have admitted it
		case rs == re:
			t.Max++
			if e.Outcome != Unknown {
				t.Min++
			}
		case re-rs == 1 && pl.perBucket:
			// counted below: every event of a bucket has it last
		case re-rs == 1:
			b, _ := pl.ref(re - 1)
			lastGroup[b]++
		default:
			b, _ := pl.ref(re - 1)
			lastGroup[b]++
			if e.Outcome != Unknown && offeredMustA(off, int32(j)) {
				t.Min++
			}
		}
	}
	if pl.perBucket {
		for b, bk := range pl.buckets {
			lastGroup[int32(b)] += bk.size()
		}
	}
	return lastGroup
}

// uncertainty fills the timing uncertainty of the result: the widths of
// the arrival intervals and how many either verdicts a point replay at the
// mid points would have decided.
func (c *checkRun) uncertainty() {
	n := c.evs.Len()
	u := &c.res.Uncertainty
	if n > 0 && !c.opts.NoWidths {
		mx, med, p99 := Quantiles(n, func(yield func(int64) bool) {
			for j := range n {
				if !yield(c.evs.hi.At(j) - c.evs.lo.At(j) + 2*int64(c.opts.Widen)) {
					return
				}
			}
		})
		u.MaxWidth, u.MedianWidth, u.P99Width = time.Duration(mx), time.Duration(med), time.Duration(p99)
	}
	for _, v := range c.res.Verdicts {
		if v == Either {
			u.Either++
		}
	}
	if !c.opts.NoTimingReport && u.Either > 0 {
		// the interval sweep's primitives and orders are done with: let
		// the midpoint sweep reuse their memory
		c.prims, c.pl.orders[0] = nil, nil
		var sp *sweepOut
		if c.pl.perBucket {
			sp = c.midByBucket()
		} else {
			c.pl.fillMid(c.evs)
			pm := c.pl.prims(c.evs, true, c.opts.UnknownInitialState, c.admitUncertain)
			sp = c.pl.sweep(c.evs, pm, true, false, c.admitUncertain)
		}
		for j, v := range c.res.Verdicts {
			if v == Either && sp.mustR[j] != sp.mustA[j] {
				u.EitherFromTiming++
			}
		}
	}
}

// Quantiles returns the largest, the median (the len/2-th smallest,
// counting from 0) and the 99th percentile (the min(len-1, len*99/100)-th
// smallest) of the values vals yields, at least one (n: how many, a
// capacity hint). vals is walked twice: the values are sorted 4 bytes each
// when every one fits an int32 (an interval width in ns up to 2 s), else
// 8.
func Quantiles(n int, vals iter.Seq[int64]) (maxV, median, p99 int64) {
	fits := true
	for v := range vals {
		if v < math.MinInt32 || v > math.MaxInt32 {
			fits = false
			break
		}
	}
	if fits {
		w := make([]int32, 0, n)
		for v := range vals {
			w = append(w, int32(v))
		}
		slices.Sort(w)
		m := len(w)
		return int64(w[m-1]), int64(w[m/2]), int64(w[min(m-1, m*99/100)])
	}
	w := make([]int64, 0, n)
	for v := range vals {
		w = append(w, v)
	}
	slices.Sort(w)
	m := len(w)
	return w[m-1], w[m/2], w[min(m-1, m*99/100)]
}

// midByBucket is the midpoint sweep of a perBucket plan, a bucket at a
// time (byBucket).
func (c *checkRun) midByBucket() *sweepOut {
	pl := c.pl
	sw := pl.sweeper(c.evs, make([]prim, len(pl.buckets)), true)
	for b := range pl.buckets {
		b32 := int32(b)
		pl.fill(c.evs, b32, true)
		sw.prims[b], _ = pl.prim(c.evs, b32, true, c.opts.UnknownInitialState, c.admitUncertain)
		sw.sweepBucket(b32, false, c.admitUncertain)
		sw.prims[b] = nil
		pl.release(b32)
	}
	return sw.so
}

// outcomeIn is what a bucket's primitive and bounds see of event j:
// nothing for an event whose key is unknown (it may not be in the bucket
// at all).
func (evs *Events) outcomeIn(j int) Outcome {
	if evs.keyUnknown(j) {
		return Unknown
	}
	return evs.outcome(j)
}

// boundFindings turns a bound that does not hold into findings naming the
// requests: for too many, the sure admissions with the latest arrivals; for
// too few, the rejections with the earliest (none unless named:
// Options.NoFindingIDs). pl is the check's plan for a bucket's bound, nil
// for the run's.
func boundFindings(bd Bound, evs *Events, pl *plan, named bool, admitUncertain bool) []WindowFinding {
	if bd.Holds() {
		return nil
	}
	var members []int32
	if !named {
		// no member is named: none is listed
	} else if pl == nil {
		for j := range evs.Len() {
			members = append(members, int32(j))
		}
	} else {
		for _, b := range pl.buckets {
			if b.id == bd.Bucket {
				members = make([]int32, b.size())
				for l := range members {
					members[l] = b.event(int32(l))
				}
			}
		}
	}
	name := fmt.Sprintf("bucket %q", bd.Bucket)
	if pl == nil {
		name = "run"
	}
	// pick names k members accepted by keep, latest hi first or earliest lo
	// first
	pick := func(keep func(Outcome) bool, latest bool, k int) []string {
		if !named {
			return nil
		}
		// each member with its sort key beside it (not read from the
		// events' chunked columns at every comparison); the comparisons
		// are the same, so the order is (equal keys too: the sort is
		// deterministic in its comparisons)
		type keyed struct {
			t int64
			g int32
		}
		of := func(g int32) Outcome {
			if pl != nil {
				return evs.outcomeIn(int(g)) // a bucket's: not an event that may lie elsewhere
			}
			return evs.outcome(int(g))
		}
		n := 0
		for _, g := range members {
			if keep(of(g)) {
				n++
			}
		}
		sel := make([]keyed, 0, n) // once, at its size (a run's: every event)
		for _, g := range members {
			if keep(of(g)) {
				t := evs.lo.At(int(g))
				if latest {
					t = evs.hi.At(int(g))
				}
				sel = append(sel, keyed{t, g})
			}
		}
		slices.SortFunc(sel, func(x, y keyed) int {
			if latest {
				return cmp64(y.t, x.t)
			}
			return cmp64(x.t, y.t)
		})
		var out []string
		for _, x := range sel[:min(k, len(sel))] {
			out = append(out, evs.name(evs.reqOf(int(x.g))))
		}
		return out
	}
	var out []WindowFinding
	if bd.Admitted > bd.Max {
		out = append(out, WindowFinding{Bucket: bd.Bucket, TooMany: true, Admitted: bd.Admitted, Limit: bd.Max, Windows: 1,
			IDs: pick(func(o Outcome) bool { return o == Admitted && !admitUncertain }, true, bd.Admitted-bd.Max),
			Why: fmt.Sprintf("%s: %d admitted, the model admits at most %d of the %d offered", name, bd.Admitted, bd.Max, bd.Offered)})
	}
	if bd.Possible < bd.Min {
		out = append(out, WindowFinding{Bucket: bd.Bucket, Admitted: bd.Possible, Limit: bd.Min, Windows: 1,
			IDs: pick(func(o Outcome) bool { return o == Rejected || o == ShadowRejected }, false, bd.Min-bd.Possible),
			Why: fmt.Sprintf("%s: at most %d admitted, the model admits at least %d of the %d offered", name, bd.Possible, bd.Min, bd.Offered)})
	}
	return out
}

func fmtTime(ns int64) string { return time.Unix(0, ns).UTC().Format("15:04:05.000") }

func fmtSpan(from, to int64) string { return "[" + fmtTime(from) + ", " + fmtTime(to) + "]" }

func fmtDur(ns int64) string { return time.Duration(ns).String() }
