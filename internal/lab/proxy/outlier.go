package proxy

import (
	"fmt"
	"time"
)

// OutlierDetection is the cluster's outlier_detection
// (config.cluster.v3.OutlierDetection), consecutive errors only, following
// Envoy source/common/upstream/outlier_detection_impl.cc:
//
//   - Every upstream response code is fed to its host: a 5xx increments
//     consecutive_5xx, a 502/503/504 also the gateway-failure count (other
//     5xx reset it), anything else resets both. Without
//     split_external_local_origin_errors a reset before a response counts
//     as 503 and a timeout as 504 (putResultNoLocalExternalSplit); with it
//     they are locally originated errors instead (putResultWithLocalExternalSplit):
//     each increments consecutive_local_origin_failure, a connection
//     obtained for a request (LocalOriginConnectSuccess, reported on pool
//     ready) resets it, and only responses the upstream sent count towards
//     consecutive_5xx. A circuit-breaker overflow is never counted.
//   - Reaching consecutive_5xx (consecutive_gateway_failure) detects an
//     ejection (ejections_detected_*), whose counter then restarts; it is
//     enforced with probability enforcing_consecutive_5xx (_gateway_failure,
//     default 0) percent (ejections_enforced_*), unless (ejected+1)/hosts
//     would exceed max_ejection_percent (Envoy >= 1.28; ejections_overflow),
//     which with the 10% default means clusters under 10 hosts never eject,
//     unless always_eject_one_host. The lab applies an ejection at once
//     (Envoy posts it to the main thread, so a few more requests may reach
//     the host there).
//   - An ejected host is unhealthy for load balancing. It comes back only
//     at an interval sweep once min(base_ejection_time × multiplier,
//     max_ejection_time) has passed since its ejection; the multiplier grows
//     by one per ejection (while below max/base + 1) and drops by one at
//     every sweep that finds the host healthy (Envoy >= 1.28).
type OutlierDetection struct {
	// Consecutive5xx is consecutive_5xx; nil means 5.
	Consecutive5xx *uint32 `json:"consecutive_5xx,omitempty"`
	// ConsecutiveGatewayFailure is consecutive_gateway_failure; nil means 5.
	ConsecutiveGatewayFailure *uint32 `json:"consecutive_gateway_failure,omitempty"`
	// Interval is the sweep interval; 0 means 10 s.
	Interval Duration `json:"interval,omitempty"`
	// BaseEjectionTime; 0 means 30 s.
	BaseEjectionTime Duration `json:"base_ejection_time,omitempty"`
	// MaxEjectionTime; 0 means 300 s; it must be >= BaseEjectionTime.
	MaxEjectionTime Duration `json:"max_ejection_time,omitempty"`
	// MaxEjectionPercent; nil means 10.
	MaxEjectionPercent *uint32 `json:"max_ejection_percent,omitempty"`
	// EnforcingConsecutive5xx is a percentage; nil means 100.
	EnforcingConsecutive5xx *uint32 `json:"enforcing_consecutive_5xx,omitempty"`
	// EnforcingConsecutiveGatewayFailure is a percentage; nil means 0.
	EnforcingConsecutiveGatewayFailure *uint32 `json:"enforcing_consecutive_gateway_failure,omitempty"`
	// AlwaysEjectOneHost is always_eject_one_host: the first ejection is
	// allowed whatever max_ejection_percent says.
	AlwaysEjectOneHost bool `json:"always_eject_one_host,omitempty"`
	// SplitExternalLocalOriginErrors is split_external_local_origin_errors:
	// resets, connect failures and timeouts count as locally originated
	// errors (consecutive_local_origin_failure), not as 503/504.
	SplitExternalLocalOriginErrors bool `json:"split_external_local_origin_errors,omitempty"`
	// ConsecutiveLocalOriginFailure is consecutive_local_origin_failure (with
	// the split only); nil means 5.
	ConsecutiveLocalOriginFailure *uint32 `json:"consecutive_local_origin_failure,omitempty"`
	// EnforcingConsecutiveLocalOriginFailure is a percentage; nil means 100.
	EnforcingConsecutiveLocalOriginFailure *uint32 `json:"enforcing_consecutive_local_origin_failure,omitempty"`
	// Pre128MaxEjectionPercent applies max_ejection_percent as Envoy did
	// before 1.28: an ejection is allowed while the share already ejected
	// is below the cap (DetectorImpl::ejectHost checked ejected/hosts <
	// max_ejection_percent before ejecting), so the last ejection may pass
	// it (3 hosts at 50%: 2 ejected). Envoy 1.28 checks (ejected+1)/hosts
	// <= max_ejection_percent (envoyproxy/envoy#27624). Not an Envoy field:
	// it stands for the proxy's version, as Istio releases before 1.20
	// shipped an Envoy before 1.28.
	Pre128MaxEjectionPercent bool `json:"pre_1_28_max_ejection_percent,omitempty"`
}

// Envoy's outlier detection defaults (DetectorConfig).
const (
	DefaultConsecutive5xx            = 5
	DefaultConsecutiveGatewayFailure = 5
	DefaultOutlierInterval           = 10 * time.Second
	DefaultBaseEjectionTime          = 30 * time.Second
	DefaultMaxEjectionTime           = 300 * time.Second
	DefaultMaxEjectionPercent        = 10
	// DefaultConsecutiveLocalOriginFailure is consecutive_local_origin_failure's default.
	DefaultConsecutiveLocalOriginFailure = 5
)

// Validate checks the percentages and that max_ejection_time is not below
// base_ejection_time (Envoy: "outlier detector's max_ejection_time cannot be
// smaller than base_ejection_time").
func (o *OutlierDetection) Validate() error {
	for name, p := range map[string]*uint32{"max_ejection_percent": o.MaxEjectionPercent, "enforcing_consecutive_5xx": o.EnforcingConsecutive5xx,
		"enforcing_consecutive_gateway_failure": o.EnforcingConsecutiveGatewayFailure, "enforcing_consecutive_local_origin_failure": o.EnforcingConsecutiveLocalOriginFailure} {
		if p != nil && *p > 100 {
			return fmt.Errorf("outlier detection: %s %d is not a percentage in 0..100", name, *p)
		}
	}
	if o.Interval < 0 || o.BaseEjectionTime < 0 || o.MaxEjectionTime < 0 {
		return fmt.Errorf("outlier detection: negative duration")
	}
	c := o.compile()
	if c.maxEject < c.base {
		return fmt.Errorf("outlier detection: max_ejection_time %v cannot be smaller than base_ejection_time %v", c.maxEject, c.base)
	}
	if !o.SplitExternalLocalOriginErrors && (o.ConsecutiveLocalOriginFailure != nil || o.EnforcingConsecutiveLocalOriginFailure != nil) {
		return fmt.Errorf("outlier detection: consecutive_local_origin_failure needs split_external_local_origin_errors: true (without it local origin errors count as 5xx)")
	}
	return nil
}

type odConfig struct {
	cons5xx, consGw, consLocal uint32
	interval, base, maxEject   time.Duration
	maxPercent                 float64
	enf5xx, enfGw, enfLocal    float64
	alwaysOne, split, pre128   bool
}

func (o *OutlierDetection) compile() odConfig {
	c := odConfig{cons5xx: DefaultConsecutive5xx, consGw: DefaultConsecutiveGatewayFailure, interval: time.Duration(o.Interval), base: time.Duration(o.BaseEjectionTime),
		maxEject: time.Duration(o.MaxEjectionTime), maxPercent: DefaultMaxEjectionPercent, enf5xx: 100, enfGw: 0, alwaysOne: o.AlwaysEjectOneHost,
		consLocal: DefaultConsecutiveLocalOriginFailure, enfLocal: 100, split: o.SplitExternalLocalOriginErrors, pre128: o.Pre128MaxEjectionPercent}
	if o.ConsecutiveLocalOriginFailure != nil {
		c.consLocal = *o.ConsecutiveLocalOriginFailure
	}
	if o.EnforcingConsecutiveLocalOriginFailure != nil {
		c.enfLocal = float64(*o.EnforcingConsecutiveLocalOriginFailure)
	}
	if o.Consecutive5xx != nil {
		c.cons5xx = *o.Consecutive5xx
	}
	if o.ConsecutiveGatewayFailure != nil {
		c.consGw = *o.ConsecutiveGatewayFailure
	}
	if c.interval == 0 {
		c.interval = DefaultOutlierInterval
	}
	if c.base == 0 {
		c.base = DefaultBaseEjectionTime
	}
	if c.maxEject == 0 {
		c.maxEject = DefaultMaxEjectionTime
	}
	if o.MaxEjectionPercent != nil {
		c.maxPercent = float64(min(*o.MaxEjectionPercent, 100))
	}
	if o.EnforcingConsecutive5xx != nil {
		c.enf5xx = float64(*o.EnforcingConsecutive5xx)
	}
	if o.EnforcingConsecutiveGatewayFailure != nil {
		c.enfGw = float64(*o.EnforcingConsecutiveGatewayFailure)
	}
	return c
}

// hostOutlier is DetectorHostMonitorImpl's state, guarded by the cluster's
// mutex.
type hostOutlier struct {
	cons5xx, consGw uint32
	consLocal       uint32 // consecutive locally originated errors (split mode)
	ejected         bool
	lastEjection    time.Time
	backoff         uint32 // ejectTimeBackoff, the ejection time multiplier
	numEjections    uint32
}

type outlierDetector struct {
	cl  *cluster
	cfg odConfig
	st  struct {
		active, total, overflow, enforcedTotal, enforced5xx, enforcedGw, detected5xx, detectedGw, consecutive5xx *stat
		enforcedLocal, detectedLocal                                                                             *stat
	}
}

type ejectionType uint8

const (
	ejectConsecutive5xx ejectionType = iota
	ejectConsecutiveGateway
	ejectConsecutiveLocalOrigin
)

func newOutlierDetector(cl *cluster, o *OutlierDetection) *outlierDetector {
	d := &outlierDetector{cl: cl, cfg: o.compile()}
	s, p := cl.p.stats, "cluster."+cl.name+".outlier_detection."
	d.st.active = s.gauge(p + "ejections_active")
	d.st.active.set(0)
	d.st.total = s.counter(p + "ejections_total")
	d.st.overflow = s.counter(p + "ejections_overflow")
	d.st.enforcedTotal = s.counter(p + "ejections_enforced_total")
	d.st.enforced5xx = s.counter(p + "ejections_enforced_consecutive_5xx")
	d.st.enforcedGw = s.counter(p + "ejections_enforced_consecutive_gateway_failure")
	d.st.detected5xx = s.counter(p + "ejections_detected_consecutive_5xx")
	d.st.detectedGw = s.counter(p + "ejections_detected_consecutive_gateway_failure")
	d.st.consecutive5xx = s.counter(p + "ejections_consecutive_5xx")
	if d.cfg.split {
		d.st.enforcedLocal = s.counter(p + "ejections_enforced_consecutive_local_origin_failure")
		d.st.detectedLocal = s.counter(p + "ejections_detected_consecutive_local_origin_failure")
	}
	return d
}

// putHTTPCode is DetectorHostMonitorImpl::putHttpResponseCode (with the
// consecutive-error callbacks run inline, in Envoy's order: gateway first).
func (cl *cluster) putHTTPCode(h *host, code int) {
	d := cl.od
	if d == nil {
		return
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	o := &h.od
	if code >= 500 && code <= 599 {
		if code == 502 || code == 503 || code == 504 {
			o.consGw++
			if o.consGw == d.cfg.consGw {
				d.onConsecutiveLocked(h, ejectConsecutiveGateway)
			}
		} else {
			o.consGw = 0
		}
		o.cons5xx++
		if o.cons5xx == d.cfg.cons5xx {
			d.onConsecutiveLocked(h, ejectConsecutive5xx)
		}
		return
	}
	o.cons5xx, o.consGw = 0, 0
}

// splitsLocalOrigin reports whether locally originated errors are kept
// apart from the upstream's 5xx (split_external_local_origin_errors).
func (cl *cluster) splitsLocalOrigin() bool { return cl.od != nil && cl.od.cfg.split }

// putLocalOriginOr reports a locally originated failure on h: in split
// mode as such (putLocalOrigin), else as code (503 for a reset or connect
// failure, 504 for a timeout: putResultNoLocalExternalSplit).
func (cl *cluster) putLocalOriginOr(h *host, code int) {
	if cl.splitsLocalOrigin() {
		cl.putLocalOrigin(h, true)
		return
	}
	cl.putHTTPCode(h, code)
}

// putLocalOrigin reports a locally originated result for h in split mode
// (DetectorHostMonitorImpl::putResultWithLocalExternalSplit): failed is
// LocalOriginConnectFailed or LocalOriginTimeout (localOriginFailure),
// !failed is LocalOriginConnectSuccess (localOriginNoFailure). Without the
// split it does nothing: the router reports 503/504 codes instead.
func (cl *cluster) putLocalOrigin(h *host, failed bool) {
	d := cl.od
	if d == nil || !d.cfg.split {
		return
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	o := &h.od
	if !failed {
		o.consLocal = 0
		return
	}
	o.consLocal++
	if o.consLocal == d.cfg.consLocal {
		d.onConsecutiveLocked(h, ejectConsecutiveLocalOrigin)
	}
}

// onConsecutiveLocked is DetectorImpl::onConsecutiveErrorWorker.
func (d *outlierDetector) onConsecutiveLocked(h *host, t ejectionType) {
	if h.od.ejected {
		return
	}
	switch t {
	case ejectConsecutive5xx:
		d.st.detected5xx.inc()
	case ejectConsecutiveGateway:
		d.st.detectedGw.inc()
	case ejectConsecutiveLocalOrigin:
		d.st.detectedLocal.inc()
	}
	d.ejectLocked(h, t)
	switch t {
	case ejectConsecutive5xx:
		d.st.consecutive5xx.inc() // deprecated counter, still emitted
		h.od.cons5xx = 0
	case ejectConsecutiveGateway:
		h.od.consGw = 0
	case ejectConsecutiveLocalOrigin:
		h.od.consLocal = 0
	}
}

// ejectLocked is DetectorImpl::ejectHost with the Envoy >= 1.28
// max_ejection_percent rule, or the earlier one (Pre128MaxEjectionPercent).
func (d *outlierDetector) ejectLocked(h *host, t ejectionType) {
	cl := d.cl
	hosts := len(cl.hosts)
	allowed := 100*float64(cl.ejectedCount+1)/float64(hosts) <= d.cfg.maxPercent ||
		(d.cfg.alwaysOne && cl.ejectedCount == 0)
	if d.cfg.pre128 {
		allowed = 100*float64(cl.ejectedCount)/float64(hosts) < d.cfg.maxPercent
	}
	if !allowed {
		d.st.overflow.inc()
		return
	}
	if t == ejectConsecutive5xx {
		d.st.total.inc() // deprecated counter, consecutive 5xx and success rate only
	}
	enf := d.cfg.enf5xx
	switch t {
	case ejectConsecutiveGateway:
		enf = d.cfg.enfGw
	case ejectConsecutiveLocalOrigin:
		enf = d.cfg.enfLocal
	}
	if !cl.p.rand.hit(&enf) {
		return
	}
	cl.ejectedCount++
	cl.healthyCount--
	d.st.active.set(uint64(cl.ejectedCount))
	cl.st.membershipHealthy.set(uint64(cl.healthyCount))
	d.st.enforcedTotal.inc()
	switch t {
	case ejectConsecutive5xx:
		d.st.enforced5xx.inc()
	case ejectConsecutiveGateway:
		d.st.enforcedGw.inc()
	case ejectConsecutiveLocalOrigin:
		d.st.enforcedLocal.inc()
	}
	o := &h.od
	o.ejected = true
	o.numEjections++
	o.lastEjection = cl.p.clock.Now()
	if time.Duration(o.backoff)*d.cfg.base < d.cfg.maxEject+d.cfg.base {
		o.backoff++
	}
}

// armSweep schedules the next interval sweep (DetectorImpl::armIntervalTimer).
func (cl *cluster) armSweep() {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.closed {
		return
	}
	cl.stopSweep = cl.p.clock.AfterFunc(cl.od.cfg.interval, func() {
		cl.sweep(cl.p.clock.Now())
		cl.armSweep()
	})
}

// sweep is DetectorImpl::onIntervalTimer's checkHostForUneject for every
// host.
func (cl *cluster) sweep(now time.Time) {
	d := cl.od
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for _, h := range cl.hosts {
		o := &h.od
		if !o.ejected {
			if o.backoff != 0 {
				o.backoff--
			}
			continue
		}
		if min(time.Duration(o.backoff)*d.cfg.base, d.cfg.maxEject) <= now.Sub(o.lastEjection) {
			o.ejected = false
			o.cons5xx, o.consGw, o.consLocal = 0, 0, 0
			cl.ejectedCount--
			cl.healthyCount++
			d.st.active.set(uint64(cl.ejectedCount))
			cl.st.membershipHealthy.set(uint64(cl.healthyCount))
		}
	}
}
