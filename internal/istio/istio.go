// Package istio turns Istio networking inputs into the lab's cluster and
// route settings: a DestinationRule's traffic policy (connection pool and
// outlier detection) and an EnvoyFilter's patches (the HTTP connection
// manager's route max_stream_duration, a cluster's healthy panic
// threshold), the way Istio's control plane writes them into Envoy's
// configuration.
//
// The DestinationRule spec is decoded with protojson into Istio's own API
// type (istio.io/api networking/v1alpha3, the same message v1beta1 and v1
// serve), unknown fields refused. The translation follows istiod's
// pilot/pkg/networking/core/cluster_traffic_policy.go (applyConnectionPool,
// applyOutlierDetection) as of Istio 1.2x:
//
//   - circuit breakers start from Istio's defaults (every threshold
//     4294967295, not Envoy's 1024) and take tcp.maxConnections,
//     http.http1MaxPendingRequests, http.http2MaxRequests and
//     http.maxRetries; http.maxRequestsPerConnection becomes the cluster's
//     max_requests_per_connection; tcp.connectTimeout the connect_timeout
//     (mesh default 10s);
//   - consecutive5xxErrors and consecutiveGatewayErrors set Envoy's
//     consecutive_5xx and consecutive_gateway_failure, each enforced at 100%
//     when above 0 and at 0% when 0; interval, baseEjectionTime and
//     maxEjectionPercent (when above 0) pass through; a baseEjectionTime
//     above 300s also becomes max_ejection_time;
//     splitExternalLocalOriginErrors and consecutiveLocalOriginFailures
//     (enforced at 100%) keep resets and timeouts apart from 5xx;
//   - with outlier detection, common_lb_config.healthy_panic_threshold is
//     set to minHealthPercent, whose default is 0: panic routing is OFF
//     under Istio unless minHealthPercent is given (Envoy alone defaults to
//     50%). Older istiod releases set it only when minHealthPercent was
//     above 0, leaving Envoy's 50%: a plan for such a mesh sets
//     lab.cluster.healthy_panic_threshold itself.
//
// Envoy's semantics of the resulting fields are in
// https://www.envoyproxy.io/docs/envoy/latest/api-v3/config/cluster/v3/outlier_detection.proto
// and .../cluster.proto. What the lab does not model is reported as a
// Finding, never silently dropped.
package istio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	yamlv3 "go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	networking "istio.io/api/networking/v1alpha3"
	"sigs.k8s.io/yaml"

	"github.com/rlbench/rlbench/internal/lab/proxy"
	"github.com/rlbench/rlbench/internal/yamlguard"
)

// Finding levels.
const (
	LevelWarning = "warning"
	LevelInfo    = "info"
)

// Finding codes.
const (
	// CodePanicDisabled: outlier detection without minHealthPercent; Istio
	// sets healthy_panic_threshold 0, so panic routing never happens.
	CodePanicDisabled = "I_ISTIO_PANIC_DISABLED"
	// CodeNotModelled: a field the lab does not model (it is left out).
	CodeNotModelled = "W_ISTIO_NOT_MODELLED"
	// CodeEjectionCap: maxEjectionPercent with the panic threshold such that
	// the ejections can, or cannot, ever reach panic routing.
	CodeEjectionCap = "I_ISTIO_EJECTION_CAP"
)

// Finding is one remark on an input: Code, Level, the input's name, the
// field path in it, and the message.
type Finding struct {
	Code    string `json:"code"`
	Level   string `json:"level"`
	File    string `json:"file"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

func (f Finding) String() string {
	p := f.File
	if f.Path != "" {
		p += ": " + f.Path
	}
	return fmt.Sprintf("%s: %s %s: %s", p, f.Level, f.Code, f.Message)
}

// Settings are the lab's cluster and route settings translated from Istio
// inputs. Nil and zero fields were not set by the inputs.
type Settings struct {
	// CircuitBreakers are the cluster's DEFAULT priority thresholds.
	CircuitBreakers *proxy.CircuitBreakers `json:"circuit_breakers,omitempty"`
	// OutlierDetection is the cluster's outlier_detection.
	OutlierDetection *proxy.OutlierDetection `json:"outlier_detection,omitempty"`
	// HealthyPanicThreshold is common_lb_config.healthy_panic_threshold, percent.
	HealthyPanicThreshold *float64 `json:"healthy_panic_threshold,omitempty"`
	// ConnectTimeout is the cluster's connect_timeout.
	ConnectTimeout proxy.Duration `json:"connect_timeout,omitempty"`
	// MaxRequestsPerConnection is the cluster's max_requests_per_connection.
	MaxRequestsPerConnection uint32 `json:"max_requests_per_connection,omitempty"`
	// MaxStreamDuration is the route's max_stream_duration (or the HTTP
	// connection manager's common_http_protocol_options.max_stream_duration).
	MaxStreamDuration proxy.Duration `json:"max_stream_duration,omitempty"`
	// Findings are remarks on the inputs, in input order.
	Findings []Finding `json:"findings,omitempty"`
}

// istioMeshConnectTimeout is MeshConfig.connectTimeout's default (10s),
// the cluster connect_timeout istiod writes when the DestinationRule gives none.
const istioMeshConnectTimeout = 10 * time.Second

// envoyDefaultMaxEjectionTime is outlier_detection.max_ejection_time's default.
const envoyDefaultMaxEjectionTime = 300 * time.Second

// resource is the Kubernetes object envelope of an Istio input.
type resource struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Spec       json.RawMessage `json:"spec"`
}

// DestinationRule translates one DestinationRule (YAML or JSON, one
// document; apiVersion networking.istio.io/v1alpha3, v1beta1 or v1) into s.
// name names the input in errors and findings. Errors: not a
// DestinationRule, an unknown field or a wrong type in its spec (as
// protojson reports it), a negative or out-of-range value.
func (s *Settings) DestinationRule(name string, data []byte) error {
	res, err := envelope(name, data)
	if err != nil {
		return err
	}
	if res.Kind != "DestinationRule" {
		return fmt.Errorf("%s: kind %q: want DestinationRule", name, res.Kind)
	}
	var dr networking.DestinationRule
	if err := (protojson.UnmarshalOptions{}).Unmarshal(res.Spec, &dr); err != nil {
		return fmt.Errorf("%s: spec: %v", name, cleanProtoErr(err))
	}
	tp := dr.GetTrafficPolicy()
	if tp == nil {
		s.note(CodeNotModelled, LevelWarning, name, "spec", "no trafficPolicy: nothing to translate")
		return nil
	}
	if len(tp.GetPortLevelSettings()) > 0 {
		s.note(CodeNotModelled, LevelWarning, name, "spec.trafficPolicy.portLevelSettings", "port-level settings are not modelled: the lab has one cluster")
	}
	if len(dr.GetSubsets()) > 0 {
		s.note(CodeNotModelled, LevelWarning, name, "spec.subsets", "subsets are not modelled: the lab has one cluster")
	}
	if tp.GetLoadBalancer() != nil {
		s.note(CodeNotModelled, LevelWarning, name, "spec.trafficPolicy.loadBalancer", "the lab balances round robin")
	}
	if tp.GetTls() != nil {
		s.note(CodeNotModelled, LevelInfo, name, "spec.trafficPolicy.tls", "TLS is not modelled")
	}
	if err := s.connectionPool(name, tp.GetConnectionPool()); err != nil {
		return err
	}
	return s.outlierDetection(name, tp.GetOutlierDetection())
}

func (s *Settings) connectionPool(name string, cp *networking.ConnectionPoolSettings) error {
	s.ConnectTimeout = proxy.Duration(istioMeshConnectTimeout)
	maxU := uint32(math.MaxUint32)
	cb := &proxy.CircuitBreakers{MaxConnections: ptr(maxU), MaxPendingRequests: ptr(maxU), MaxRequests: ptr(maxU), MaxRetries: ptr(maxU), TrackRemaining: true}
	s.CircuitBreakers = cb
	if cp == nil {
		return nil
	}
	if t := cp.GetTcp(); t != nil {
		if t.GetMaxConnections() > 0 {
			cb.MaxConnections = ptr(uint32(t.GetMaxConnections()))
		}
		if d := t.GetConnectTimeout(); d != nil {
			if err := d.CheckValid(); err != nil || d.AsDuration() <= 0 {
				return fmt.Errorf("%s: spec.trafficPolicy.connectionPool.tcp.connectTimeout: want a positive duration", name)
			}
			s.ConnectTimeout = proxy.Duration(d.AsDuration())
		}
		if t.GetTcpKeepalive() != nil || t.GetMaxConnectionDuration() != nil || t.GetIdleTimeout() != nil {
			s.note(CodeNotModelled, LevelInfo, name, "spec.trafficPolicy.connectionPool.tcp", "TCP keepalive, max connection duration and idle timeout are not modelled")
		}
	}
	if h := cp.GetHttp(); h != nil {
		if v := h.GetHttp1MaxPendingRequests(); v > 0 {
			cb.MaxPendingRequests = ptr(uint32(v))
		}
		if v := h.GetHttp2MaxRequests(); v > 0 {
			cb.MaxRequests = ptr(uint32(v))
		}
		if v := h.GetMaxRetries(); v > 0 {
			cb.MaxRetries = ptr(uint32(v))
		}
		if v := h.GetMaxRequestsPerConnection(); v > 0 {
			s.MaxRequestsPerConnection = uint32(v)
		}
		if h.GetIdleTimeout() != nil || h.GetH2UpgradePolicy() != 0 || h.GetUseClientProtocol() || h.GetMaxConcurrentStreams() > 0 {
			s.note(CodeNotModelled, LevelInfo, name, "spec.trafficPolicy.connectionPool.http", "idleTimeout, h2UpgradePolicy, useClientProtocol and maxConcurrentStreams are not modelled (the lab speaks HTTP/1.1 upstream)")
		}
	}
	return nil
}

func (s *Settings) outlierDetection(name string, od *networking.OutlierDetection) error {
	if od == nil {
		return nil
	}
	const p = "spec.trafficPolicy.outlierDetection"
	out := &proxy.OutlierDetection{}
	if od.GetConsecutiveErrors() > 0 {
		// The deprecated field: gateway errors only (istio/api#617).
		out.ConsecutiveGatewayFailure = ptr(uint32(od.GetConsecutiveErrors()))
		out.EnforcingConsecutiveGatewayFailure = ptr(uint32(100))
		out.EnforcingConsecutive5xx = ptr(uint32(0))
	}
	if e := od.GetConsecutive_5XxErrors(); e != nil {
		v := e.GetValue()
		out.Consecutive5xx = ptr(v)
		out.EnforcingConsecutive5xx = ptr(enforcing(v))
	}
	if e := od.GetConsecutiveGatewayErrors(); e != nil {
		v := e.GetValue()
		out.ConsecutiveGatewayFailure = ptr(v)
		out.EnforcingConsecutiveGatewayFailure = ptr(enforcing(v))
	}
	if d := od.GetInterval(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() <= 0 {
			return fmt.Errorf("%s: %s.interval: want a positive duration", name, p)
		}
		out.Interval = proxy.Duration(d.AsDuration())
	}
	if d := od.GetBaseEjectionTime(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() <= 0 {
			return fmt.Errorf("%s: %s.baseEjectionTime: want a positive duration", name, p)
		}
		out.BaseEjectionTime = proxy.Duration(d.AsDuration())
		if d.AsDuration() > envoyDefaultMaxEjectionTime {
			out.MaxEjectionTime = out.BaseEjectionTime
		}
	}
	mep := od.GetMaxEjectionPercent()
	if mep < 0 || mep > 100 {
		return fmt.Errorf("%s: %s.maxEjectionPercent %d: want 0..100", name, p, mep)
	}
	if mep > 0 {
		out.MaxEjectionPercent = ptr(uint32(mep))
	}
	if od.GetSplitExternalLocalOriginErrors() {
		out.SplitExternalLocalOriginErrors = true
		if v := od.GetConsecutiveLocalOriginFailures().GetValue(); v > 0 {
			out.ConsecutiveLocalOriginFailure = ptr(v)
			out.EnforcingConsecutiveLocalOriginFailure = ptr(uint32(100))
		}
	} else if od.GetConsecutiveLocalOriginFailures() != nil {
		s.note(CodeNotModelled, LevelWarning, name, p+".consecutiveLocalOriginFailures", "ignored without splitExternalLocalOriginErrors: true (Istio drops it)")
	}
	mhp := od.GetMinHealthPercent()
	if mhp < 0 || mhp > 100 {
		return fmt.Errorf("%s: %s.minHealthPercent %d: want 0..100", name, p, mhp)
	}
	s.OutlierDetection = out
	s.HealthyPanicThreshold = ptr(float64(mhp))
	if mhp == 0 {
		s.note(CodePanicDisabled, LevelInfo, name, p, "no minHealthPercent: Istio sets healthy_panic_threshold 0, so panic routing is off (Envoy alone would use 50%); an EnvoyFilter on the cluster can set it")
	}
	return nil
}

// enforcing is Istio's enforcing percentage for a consecutive-error count:
// 100 when the count is above 0, else 0.
func enforcing(v uint32) uint32 {
	if v > 0 {
		return 100
	}
	return 0
}

func ptr[T any](v T) *T { return &v }

func (s *Settings) note(code, level, file, path, msg string) {
	s.Findings = append(s.Findings, Finding{Code: code, Level: level, File: file, Path: path, Message: msg})
}

// envelope decodes one YAML or JSON document into its Kubernetes envelope.
func envelope(name string, data []byte) (*resource, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty", name)
	}
	// Bounded first (size, nodes with aliases expanded, depth, one
	// document), before sigs.k8s.io/yaml expands anything.
	if _, err := yamlguard.ParseOne(name, data, yamlguard.Limits{}); yamlguard.IsGuard(err) {
		return nil, err
	}
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	var res resource
	dec := json.NewDecoder(bytes.NewReader(j))
	if err := dec.Decode(&res); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	if res.Kind == "" {
		return &res, nil
	}
	if !strings.HasPrefix(res.APIVersion, "networking.istio.io/") {
		return nil, fmt.Errorf("%s: apiVersion %q: want networking.istio.io/v1alpha3, v1beta1 or v1", name, res.APIVersion)
	}
	if len(res.Spec) == 0 || string(res.Spec) == "null" {
		return nil, fmt.Errorf("%s: %s without spec", name, res.Kind)
	}
	return &res, nil
}

// jsonPos is protojson's position in the JSON the YAML became, which
// names no line of the input.
var jsonPos = regexp.MustCompile(`\(line \d+:\d+\): `)

// cleanProtoErr drops protojson's "proto:" prefix, its non-breaking spaces
// and its JSON position.
func cleanProtoErr(err error) string {
	msg := strings.ReplaceAll(err.Error(), "\u00a0", " ")
	msg = jsonPos.ReplaceAllString(msg, "")
	return strings.TrimSpace(strings.TrimPrefix(msg, "proto:"))
}

// errNoPatch is returned when an EnvoyFilter input holds nothing the lab reads.
var errNoPatch = errors.New("no HTTP connection manager or cluster patch")

func yamlUnmarshal(data []byte, v any) error { return yaml.Unmarshal(data, v) }

// Kind returns the Kubernetes kind of an Istio networking document
// ("DestinationRule", "EnvoyFilter", ...), or "" when data is not one (no
// apiVersion networking.istio.io/*, or not YAML).
func Kind(data []byte) string {
	if !bytes.Contains(data, []byte("networking.istio.io/")) {
		return ""
	}
	root, err := yamlguard.ParseOne("", data, yamlguard.Limits{})
	if err == nil && root != nil && root.Kind == yamlv3.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if err != nil || root == nil || root.Kind != yamlv3.MappingNode {
		return ""
	}
	var api, kind string
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch root.Content[i].Value {
		case "apiVersion":
			api = root.Content[i+1].Value
		case "kind":
			kind = root.Content[i+1].Value
		}
	}
	if !strings.HasPrefix(api, "networking.istio.io/") {
		return ""
	}
	return kind
}

// Translate translates one Istio document by its kind (DestinationRule or
// EnvoyFilter) into a new Settings; name names it in errors and findings.
func Translate(name string, data []byte) (*Settings, error) {
	var s Settings
	switch k := Kind(data); k {
	case "DestinationRule":
		return &s, s.DestinationRule(name, data)
	case "EnvoyFilter":
		return &s, s.EnvoyFilter(name, data)
	default:
		return nil, fmt.Errorf("%s: kind %q: rlbench reads DestinationRule and EnvoyFilter", name, k)
	}
}
