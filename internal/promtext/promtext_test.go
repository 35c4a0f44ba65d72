package promtext

import (
	"math"
	"testing"
)

func TestLine(t *testing.T) {
	data := []byte(`# HELP ratelimit_service_rate_limit_total_hits x
# TYPE ratelimit_service_rate_limit_total_hits counter
ratelimit_service_rate_limit_total_hits{domain="d",key1="k"} 3
ratelimit_service_rate_limit_total_hits{domain="d", key1="k \"q\" } x"} NaN
ratelimit_service_rate_limit_total_hits 1
lat_bucket{le="0.5",m="a"} 1
lat_sum{m="a"} NaN
{"odd.name", a="1"} 2
`)
	for _, c := range []struct {
		family string
		labels map[string]string
		want   int
	}{
		{"ratelimit_service_rate_limit_total_hits", map[string]string{"domain": "d", "key1": "k"}, 3},
		{"ratelimit_service_rate_limit_total_hits", map[string]string{"domain": "d", "key1": `k "q" } x`}, 4},
		{"ratelimit_service_rate_limit_total_hits", nil, 5},
		{"lat", map[string]string{"m": "a"}, 6},
		{"odd.name", map[string]string{"a": "1"}, 8},
		{"ratelimit_service_rate_limit_total_hits", map[string]string{"domain": "e"}, 0},
		{"nosuch", nil, 0},
	} {
		if got := Line(data, c.family, c.labels); got != c.want {
			t.Errorf("Line(%s %v) = %d, want %d", c.family, c.labels, got, c.want)
		}
	}
}

func TestKeyAndCheckCount(t *testing.T) {
	if got := Key("m", map[string]string{"b": "2", "a": "x\"y\n"}); got != `m{a="x\"y\n",b="2"}` {
		t.Errorf("Key = %s", got)
	}
	if Key("m", nil) != "m" {
		t.Error("Key without labels")
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1} {
		if CheckCount(v) == nil {
			t.Errorf("CheckCount(%g) = nil", v)
		}
	}
	if CheckCount(0) != nil || CheckCount(1e15) != nil {
		t.Error("CheckCount refuses a count")
	}
}
