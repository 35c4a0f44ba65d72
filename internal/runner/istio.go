package runner

import (
	"errors"
	"strconv"

	"github.com/rlbench/rlbench/internal/istio"
)

// IstioPlan is lab.istio: Istio inputs, inline, translated into the lab
// proxies' cluster and route settings the way istiod writes them into
// Envoy (package internal/istio): a DestinationRule's connection pool and
// outlier detection, and an EnvoyFilter's HTTP connection manager
// max_stream_duration or cluster healthy_panic_threshold. A field the plan
// also sets under lab.cluster or lab.proxy keeps the plan's value (so the
// "before" and "after" of a change differ only where the plan says).
type IstioPlan struct {
	// DestinationRule is one DestinationRule document (YAML).
	DestinationRule string `json:"destination_rule,omitempty"`
	// EnvoyFilter is one EnvoyFilter document, or one patch value alone (YAML).
	EnvoyFilter string `json:"envoy_filter,omitempty"`
	// EnvoyFilters are further EnvoyFilter documents, applied in order after EnvoyFilter.
	EnvoyFilters []string `json:"envoy_filters,omitempty"`
	// EnvoyBefore128 runs the proxies' outlier detection as Envoy before
	// 1.28 did (proxy.OutlierDetection.Pre128MaxEjectionPercent: the cap
	// checked against the share already ejected), as the Envoy of Istio
	// releases before 1.20 did.
	EnvoyBefore128 bool `json:"envoy_before_1_28,omitempty"`
}

// applyIstio translates lab.istio and fills the cluster and proxy fields
// the plan left unset. It returns the failing input's field under lab.
func (lp *LabPlan) applyIstio() (string, error) {
	ip := lp.Istio
	if ip.DestinationRule == "" && ip.EnvoyFilter == "" && len(ip.EnvoyFilters) == 0 {
		return "istio", errors.New("lab.istio needs destination_rule or envoy_filter")
	}
	var s istio.Settings
	if ip.DestinationRule != "" {
		if err := s.DestinationRule("lab.istio.destination_rule", []byte(ip.DestinationRule)); err != nil {
			return "istio.destination_rule", err
		}
	}
	if ip.EnvoyFilter != "" {
		if err := s.EnvoyFilter("lab.istio.envoy_filter", []byte(ip.EnvoyFilter)); err != nil {
			return "istio.envoy_filter", err
		}
	}
	for i, ef := range ip.EnvoyFilters {
		if err := s.EnvoyFilter("lab.istio.envoy_filters["+strconv.Itoa(i)+"]", []byte(ef)); err != nil {
			return "istio.envoy_filters", err
		}
	}
	if lp.Cluster == nil {
		lp.Cluster = &ClusterPlan{}
	}
	c := lp.Cluster
	if c.CircuitBreakers == nil {
		c.CircuitBreakers = s.CircuitBreakers
	}
	if c.OutlierDetection == nil {
		c.OutlierDetection = s.OutlierDetection
	}
	if ip.EnvoyBefore128 && c.OutlierDetection != nil {
		c.OutlierDetection.Pre128MaxEjectionPercent = true
	}
	if c.HealthyPanicThreshold == nil {
		c.HealthyPanicThreshold = s.HealthyPanicThreshold
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = s.ConnectTimeout
	}
	if c.MaxRequestsPerConnection == 0 {
		c.MaxRequestsPerConnection = s.MaxRequestsPerConnection
	}
	if s.MaxStreamDuration > 0 {
		if lp.Proxy == nil {
			lp.Proxy = &ProxyPlan{}
		}
		if lp.Proxy.MaxStreamDuration == 0 {
			lp.Proxy.MaxStreamDuration = s.MaxStreamDuration
		}
	}
	return "", nil
}
