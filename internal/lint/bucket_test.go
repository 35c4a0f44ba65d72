package lint

import (
	"reflect"
	"strings"
	"testing"
)

// TestTokenBucketAsEnvoyValidates (issue 27): lint accepted fill_interval
// 0.01s (Envoy and rlbench's lab refuse anything under 50ms) and said
// nothing about max_tokens 0 or tokens_per_fill above max_tokens. Each is
// now a finding at the field's line: the two refusals E_LOCAL_BUCKET, the
// overfill W_LOCAL_BUCKET_OVERFILL, for the filter's bucket and a
// descriptor's; what the generated validation reports stays E_VALIDATE
// alone; 50ms itself is accepted.
func TestTokenBucketAsEnvoyValidates(t *testing.T) {
	const tb = hcm + ".http_filters[0].typed_config.token_bucket"
	for _, c := range []struct {
		name, old, new string
		want           []cp
		line           string // the finding's line holds it
		msg            string
	}{
		{"fill 10ms", "fill_interval: 3600s", "fill_interval: 0.01s",
			[]cp{{CodeLocalBucket, tb + ".fill_interval"}}, "fill_interval: 0.01s", "fill_interval: 10ms is below Envoy's minimum 50ms"},
		{"fill 49ms", "fill_interval: 3600s", "fill_interval: 0.049s",
			[]cp{{CodeLocalBucket, tb + ".fill_interval"}}, "fill_interval: 0.049s", "49ms is below Envoy's minimum 50ms"},
		{"fill 50ms", "fill_interval: 3600s", "fill_interval: 0.05s", []cp{}, "", ""},
		{"max_tokens 0", "max_tokens: 5", "max_tokens: 0",
			[]cp{{CodeLocalBucket, tb + ".max_tokens"}}, "max_tokens: 0", "max_tokens: must be > 0"},
		{"tokens_per_fill above max_tokens", "tokens_per_fill: 5", "tokens_per_fill: 6",
			[]cp{{CodeLocalBucketOverfill, tb + ".tokens_per_fill"}}, "tokens_per_fill: 6", "6 is above max_tokens 5"},
		{"fill 0s stays E_VALIDATE", "fill_interval: 3600s", "fill_interval: 0s",
			[]cp{{CodeValidate, tb + ".fill_interval"}}, "", ""},
		{"tokens_per_fill 0 stays E_VALIDATE", "tokens_per_fill: 5", "tokens_per_fill: 0",
			[]cp{{CodeValidate, tb + ".tokens_per_fill"}}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := mutate(t, "local-a.yaml", c.old, c.new)
			rep := lintString(t, "bucket.yaml", y, Options{})
			if got := codesPaths(rep); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("findings:%s\nwant %v", dump(rep), c.want)
			}
			if c.line == "" {
				return
			}
			f := rep.Findings[0]
			if l := lineOf(t, t2(t, y), c.line); f.Line != l || f.File != "bucket.yaml" || !strings.Contains(f.Message, c.msg) {
				t.Errorf("finding %s, want line %d and %q", f, l, c.msg)
			}
			if f.Code == CodeLocalBucket && (f.Level != LevelError || rep.Errors() == 0) {
				t.Errorf("a bucket Envoy refuses is not an error: %s", f)
			}
		})
	}

	// A descriptor's bucket, per route.
	y := mutate(t, "local-a.yaml", "                route:\n                  cluster: backend\n", `                route:
                  cluster: backend
                typed_per_filter_config:
                  envoy.filters.http.local_ratelimit:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit
                    stat_prefix: per_route
                    filter_enabled: {default_value: {numerator: 100, denominator: HUNDRED}}
                    filter_enforced: {default_value: {numerator: 100, denominator: HUNDRED}}
                    token_bucket: {max_tokens: 2, tokens_per_fill: 2, fill_interval: 60s}
                    descriptors:
                    - entries: [{key: k, value: v}]
                      token_bucket: {max_tokens: 1, tokens_per_fill: 3, fill_interval: 0.02s}
`)
	rep := lintString(t, "desc.yaml", y, Options{})
	d := hcm + `.route_config.virtual_hosts[0].routes[0].typed_per_filter_config["envoy.filters.http.local_ratelimit"].descriptors[0].token_bucket`
	want := []cp{{CodeLocalBucket, d + ".fill_interval"}, {CodeLocalBucketOverfill, d + ".tokens_per_fill"}}
	if got := codesPaths(rep); !reflect.DeepEqual(got, want) {
		t.Fatalf("findings:%s\nwant %v", dump(rep), want)
	}
}
