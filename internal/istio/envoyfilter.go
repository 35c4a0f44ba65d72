package istio

import (
	"encoding/json"
	"fmt"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/durationpb"
	networking "istio.io/api/networking/v1alpha3"

	"github.com/rlbench/rlbench/internal/lab/proxy"
)

// hcmFilterName is the HTTP connection manager's network filter name.
const hcmFilterName = "envoy.filters.network.http_connection_manager"

// EnvoyFilter translates an EnvoyFilter's patches into s: either a whole
// EnvoyFilter (apiVersion networking.istio.io/..., kind EnvoyFilter; its
// spec.configPatches' patch values) or one patch value alone, as incident
// write-ups often show it (a network filter with name and typed_config).
// What the lab reads:
//
//   - an HTTP connection manager (NETWORK_FILTER, or the bare fragment):
//     its route_config routes' route.max_stream_duration.max_stream_duration,
//     else its common_http_protocol_options.max_stream_duration
//     (config.route.v3.RouteAction.MaxStreamDuration: the route's value
//     overrides the connection manager's);
//   - an HTTP_ROUTE patch: route.max_stream_duration;
//   - a CLUSTER patch: common_lb_config.healthy_panic_threshold and
//     common_http_protocol_options.max_requests_per_connection.
//
// Every other patch or field is reported as a Finding. Values are decoded
// with protojson into go-control-plane's Envoy v3 types, unknown fields
// refused. Errors name the input and the patch index.
func (s *Settings) EnvoyFilter(name string, data []byte) error {
	res, err := envelope(name, data)
	if err != nil {
		return err
	}
	if res.Kind == "" {
		// A bare patch value.
		j, err := toJSON(name, data)
		if err != nil {
			return err
		}
		return s.networkFilter(name, "", j)
	}
	if res.Kind != "EnvoyFilter" {
		return fmt.Errorf("%s: kind %q: want EnvoyFilter (or one patch value alone)", name, res.Kind)
	}
	var ef networking.EnvoyFilter
	if err := (protojson.UnmarshalOptions{}).Unmarshal(res.Spec, &ef); err != nil {
		return fmt.Errorf("%s: spec: %v", name, cleanProtoErr(err))
	}
	if len(ef.GetConfigPatches()) == 0 {
		return fmt.Errorf("%s: %w", name, errNoPatch)
	}
	for i, cp := range ef.GetConfigPatches() {
		path := fmt.Sprintf("spec.configPatches[%d]", i)
		v := cp.GetPatch().GetValue()
		if v == nil {
			s.note(CodeNotModelled, LevelWarning, name, path, "a patch without a value (operation "+cp.GetPatch().GetOperation().String()+") is not modelled")
			continue
		}
		j, err := protojson.Marshal(v)
		if err != nil {
			return fmt.Errorf("%s: %s.patch.value: %v", name, path, cleanProtoErr(err))
		}
		switch cp.GetApplyTo() {
		case networking.EnvoyFilter_NETWORK_FILTER:
			err = s.networkFilter(name, path+".patch.value", j)
		case networking.EnvoyFilter_HTTP_ROUTE:
			err = s.routePatch(name, path+".patch.value", j)
		case networking.EnvoyFilter_CLUSTER:
			err = s.clusterPatch(name, path+".patch.value", j)
		default:
			s.note(CodeNotModelled, LevelWarning, name, path, "applyTo "+cp.GetApplyTo().String()+" is not modelled by the lab")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func toJSON(name string, data []byte) ([]byte, error) {
	var v any
	if err := yamlUnmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return json.Marshal(v)
}

func (s *Settings) networkFilter(name, path string, j []byte) error {
	var f listenerv3.Filter
	if err := (protojson.UnmarshalOptions{}).Unmarshal(j, &f); err != nil {
		return fmt.Errorf("%s: %s: %v", name, orRoot(path), cleanProtoErr(err))
	}
	if f.GetName() != hcmFilterName || f.GetTypedConfig() == nil {
		s.note(CodeNotModelled, LevelWarning, name, path, fmt.Sprintf("network filter %q is not modelled (only %s with a typed_config)", f.GetName(), hcmFilterName))
		return nil
	}
	var hcm hcmv3.HttpConnectionManager
	if err := f.GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		return fmt.Errorf("%s: %s: typed_config: %v", name, orRoot(path), cleanProtoErr(err))
	}
	msd, found := time.Duration(0), false
	for vi, vh := range hcm.GetRouteConfig().GetVirtualHosts() {
		for ri, r := range vh.GetRoutes() {
			m := r.GetRoute().GetMaxStreamDuration()
			if m == nil || m.GetMaxStreamDuration() == nil {
				continue
			}
			d, err := positive(m.GetMaxStreamDuration())
			if err != nil {
				return fmt.Errorf("%s: %s: route_config.virtual_hosts[%d].routes[%d].route.max_stream_duration: %v", name, orRoot(path), vi, ri, err)
			}
			if found && d != msd {
				s.note(CodeNotModelled, LevelWarning, name, path, fmt.Sprintf("routes with different max_stream_duration (%v, %v): the lab has one route and takes the first", msd, d))
				continue
			}
			msd, found = d, true
		}
	}
	if !found {
		if d := hcm.GetCommonHttpProtocolOptions().GetMaxStreamDuration(); d != nil {
			v, err := positive(d)
			if err != nil {
				return fmt.Errorf("%s: %s: common_http_protocol_options.max_stream_duration: %v", name, orRoot(path), err)
			}
			msd, found = v, true
		}
	}
	if found {
		s.MaxStreamDuration = proxy.Duration(msd)
	}
	if hcm.GetCommonHttpProtocolOptions().GetIdleTimeout() != nil {
		s.note(CodeNotModelled, LevelInfo, name, path, "common_http_protocol_options.idle_timeout is not modelled (the attack's connections are never idle that long)")
	}
	if !found {
		s.note(CodeNotModelled, LevelWarning, name, path, "the HTTP connection manager patch sets no max_stream_duration: nothing the lab reads")
	}
	return nil
}

func (s *Settings) routePatch(name, path string, j []byte) error {
	var r routev3.Route
	if err := (protojson.UnmarshalOptions{}).Unmarshal(j, &r); err != nil {
		return fmt.Errorf("%s: %s: %v", name, path, cleanProtoErr(err))
	}
	if m := r.GetRoute().GetMaxStreamDuration(); m != nil && m.GetMaxStreamDuration() != nil {
		d, err := positive(m.GetMaxStreamDuration())
		if err != nil {
			return fmt.Errorf("%s: %s: route.max_stream_duration: %v", name, path, err)
		}
		s.MaxStreamDuration = proxy.Duration(d)
		return nil
	}
	s.note(CodeNotModelled, LevelWarning, name, path, "the route patch sets no max_stream_duration: nothing the lab reads")
	return nil
}

func (s *Settings) clusterPatch(name, path string, j []byte) error {
	var c clusterv3.Cluster
	if err := (protojson.UnmarshalOptions{}).Unmarshal(j, &c); err != nil {
		return fmt.Errorf("%s: %s: %v", name, path, cleanProtoErr(err))
	}
	read := false
	if t := c.GetCommonLbConfig().GetHealthyPanicThreshold(); t != nil {
		v := t.GetValue()
		if v < 0 || v > 100 || v != v {
			return fmt.Errorf("%s: %s: common_lb_config.healthy_panic_threshold %v: want 0..100", name, path, v)
		}
		s.HealthyPanicThreshold = ptr(v)
		read = true
	}
	if v := c.GetCommonHttpProtocolOptions().GetMaxRequestsPerConnection(); v != nil {
		s.MaxRequestsPerConnection = v.GetValue()
		read = true
	}
	if !read {
		s.note(CodeNotModelled, LevelWarning, name, path, "the cluster patch sets neither common_lb_config.healthy_panic_threshold nor max_requests_per_connection: nothing the lab reads")
	}
	return nil
}

func positive(d *durationpb.Duration) (time.Duration, error) {
	if err := d.CheckValid(); err != nil {
		return 0, err
	}
	v := d.AsDuration()
	if v < 0 {
		return 0, fmt.Errorf("negative duration %v", v)
	}
	return v, nil
}

func orRoot(path string) string {
	if path == "" {
		return "(filter)"
	}
	return path
}
