package lint

import (
	"context"
	"strings"
	"testing"
)

func TestLintIstioDocuments(t *testing.T) {
	dr := "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nmetadata: {name: x}\nspec:\n  host: x\n  subsets: [{name: v1}]\n  trafficPolicy:\n    outlierDetection:\n      consecutive5xxErrors: 3\n"
	bad := "apiVersion: networking.istio.io/v1\nkind: DestinationRule\nspec:\n  host: x\n  trafficPolicy:\n    outlierDetection: {consecutive5xx: 3}\n"
	rep, err := Lint(context.Background(), []Source{{Name: "dr.yaml", R: strings.NewReader(dr)}, {Name: "bad.yaml", R: strings.NewReader(bad)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Finding{}
	for _, f := range rep.Findings {
		got[f.File+" "+f.Code] = f
	}
	if f, ok := got["dr.yaml I_ISTIO_PANIC_DISABLED"]; !ok || f.Line != 8 {
		t.Errorf("panic finding %+v, want line 8", f)
	}
	if f, ok := got["dr.yaml W_ISTIO_NOT_MODELLED"]; !ok || f.Line != 6 || f.Level != LevelWarning {
		t.Errorf("subsets finding %+v, want a warning at line 6", f)
	}
	if f, ok := got["dr.yaml I_ISTIO_LAB"]; !ok || !strings.Contains(f.Message, `"consecutive_5xx":3`) || !strings.Contains(f.Message, `"healthy_panic_threshold":0`) {
		t.Errorf("lab settings finding %+v", f)
	}
	if f, ok := got["bad.yaml E_ISTIO_DECODE"]; !ok || f.Level != LevelError || !strings.Contains(f.Message, "consecutive5xx") {
		t.Errorf("decode finding %+v", f)
	}
	if rep.Errors() != 1 {
		t.Errorf("%d errors, want 1: %v", rep.Errors(), rep.Findings)
	}
}
