package decl

import (
	"strings"
	"testing"
	"time"

	"github.com/rlbench/rlbench/model"
)

// TestHAProxyStickTableSpec: the stick table is a sliding counter counting every request with HAProxy's freq_ctr
// arithmetic; a limit below 1 or a period not in whole ms is an error.
func TestHAProxyStickTableSpec(t *testing.T) {
	s, err := HAProxyStickTable{Limit: 20, Period: 1500 * time.Millisecond}.Spec()
	if err != nil || s.Kind != model.KindSlidingCounter || s.Limit != 20 || time.Duration(s.Window) != 1500*time.Millisecond ||
		s.Count != model.CountAll || s.Align != model.AlignFreqCtr {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := model.New(s); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		h    HAProxyStickTable
		want string
	}{
		{HAProxyStickTable{Limit: 0, Period: time.Second}, "limit must be at least 1"},
		{HAProxyStickTable{Limit: 1, Period: 0}, "period"},
		{HAProxyStickTable{Limit: 1, Period: 1500 * time.Microsecond}, "whole number of milliseconds"},
	} {
		if _, err := c.h.Spec(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.h, err, c.want)
		}
	}
}
