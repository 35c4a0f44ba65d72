package model

import (
	"strings"
	"testing"
	"time"
)

// TestCheckEnvoyBucket (issue 27) pins the one owner of Envoy's token
// bucket rules that lint, the lab proxy and envoy_local specs share:
// refusals for max_tokens 0, tokens_per_fill 0, fill_interval not above 0
// or below 50ms; a warning, not a refusal, for tokens_per_fill above
// max_tokens; nothing for a bucket Envoy takes as declared.
func TestCheckEnvoyBucket(t *testing.T) {
	u := func(v uint32) *uint32 { return &v }
	for _, c := range []struct {
		name string
		max  uint32
		tpf  *uint32
		fill time.Duration
		want []string // "<field> refused|warning: <fragment>"
	}{
		{"ok", 5, u(5), time.Second, nil},
		{"ok, tokens_per_fill absent", 5, nil, EnvoyMinFillInterval, nil},
		{"max_tokens 0", 0, nil, time.Second, []string{"max_tokens refused: must be > 0"}},
		{"tokens_per_fill 0", 5, u(0), time.Second, []string{"tokens_per_fill refused: must be > 0"}},
		{"fill 0", 5, nil, 0, []string{"fill_interval refused: 0s: must be > 0"}},
		{"fill 10ms", 5, nil, 10 * time.Millisecond, []string{"fill_interval refused: 10ms is below Envoy's minimum 50ms"}},
		{"fill 49.999ms", 5, nil, 50*time.Millisecond - time.Microsecond, []string{"fill_interval refused: 49.999ms is below"}},
		{"overfill", 5, u(6), time.Second, []string{"tokens_per_fill warning: 6 is above max_tokens 5"}},
		{"all at once", 0, u(0), time.Millisecond, []string{"max_tokens refused", "tokens_per_fill refused", "fill_interval refused"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := CheckEnvoyBucket(c.max, c.tpf, c.fill)
			if len(got) != len(c.want) {
				t.Fatalf("issues %+v, want %q", got, c.want)
			}
			for i, is := range got {
				kind := "warning"
				if is.Refused {
					kind = "refused"
				}
				if s := is.Field + " " + kind + ": " + is.Problem; !strings.HasPrefix(s, c.want[i]) {
					t.Errorf("issue %q, want %q", s, c.want[i])
				}
			}
		})
	}
}
