package evidence

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecodeAttackRejectsDamage: a new user's damaged attack.json files
// were analysed as PASS (an unknown schema version, a phase's unknown
// schema, "phases": null, "rate": "fast", a code key "abc"), and negative counts were
// named without a line. Each is an error naming its line; every
// release's attack.json still decodes.
func TestDecodeAttackRejectsDamage(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("..", "analyze", "testdata", "v1-release", "e06", "01-two-local-buckets", "1", AttackFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeAttack(good); err != nil {
		t.Fatalf("release file: %v", err)
	}
	edit := func(old, new string) []byte {
		t.Helper()
		if !strings.Contains(string(good), old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return []byte(strings.Replace(string(good), old, new, 1))
	}
	for _, c := range []struct {
		name  string
		b     []byte
		want  string
		count bool
	}{
		{"future schema", edit(`"schema": "rlbench.attack/v1"`, `"schema": "rlbench.attack/v9"`), `line 2: schema: "rlbench.attack/v9" is not a schema this release reads`, false},
		{"phase schema", []byte(strings.Replace(string(good), `"schema": "rlbench.attack/v1"`, `"schema": "rlbench.attack/v7"`, 2)), `schema: "rlbench.attack/v7" is not`, false},
		{"phases null", []byte(`{"schema": "rlbench.attack/v2",
  "complete": true,
  "phases": null}`), "line 3: phases: null", false},
		{"code abc", edit(`"200": 5,`, `"abc": 5,`), `line 63: phases[0].codes_by_target["proxy-a"]["abc"]: not a status code`, false},
		{"rate fast", edit(`"rate": "0"`, `"rate": "fast"`), `line 33: phases[0].config.rate: rate "fast": want N/duration`, false},
		{"bare rate fast", []byte("{\"schema\": \"rlbench.attack/v1\",\n\"config\": {\n \"rate\": \"fast\"}}"), `line 3: config.rate: rate "fast"`, false},
		{"negative sent", edit(`"sent": 20,
      "recorded"`, `"sent": -300,
      "recorded"`), "line 59: bad counts (incomplete evidence): phases[0].sent = -300: negative", true},
		{"bare negative", []byte("{\"schema\": \"rlbench.attack/v1\",\n\"config\": {},\n\"recorded\": -2}"), "line 3: bad counts (incomplete evidence): recorded = -2: negative", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeAttack(c.b)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if ce := (*CountError)(nil); errors.As(err, &ce) != c.count {
				t.Fatalf("count error %v: %v", c.count, err)
			}
		})
	}
}
