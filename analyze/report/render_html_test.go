package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// goldenReport reads the report of fixture name back from its JSON golden
// (../testdata/golden/<name>.json.golden, which analyze's TestGoldenFormats
// keeps equal to the judged report).
func goldenReport(t *testing.T, name string) *Report {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "golden", name+".json.golden"))
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// TestHTMLSelfContained: the page loads nothing from elsewhere, links each
// scenario of the summary to its section, and shows the reconciliation's
// offending IDs.
func TestHTMLSelfContained(t *testing.T) {
	rep := goldenReport(t, "manual")
	var buf bytes.Buffer
	if err := WriteHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*"(https?:)?//[^"]*"|url\(\s*["']?(https?:)?//`).FindString(page); m != "" {
		t.Errorf("the page loads %s", m)
	}
	for i, s := range rep.Scenarios {
		a := scenarioAnchor(i, s)
		if !strings.Contains(page, `href="#`+a+`"`) || !strings.Contains(page, `<section class="scenario" id="`+a+`"`) {
			t.Errorf("scenario %s: no link to #%s or no section", s.Name, a)
		}
		for _, id := range s.Receipts.DuplicateIDs {
			if !strings.Contains(page, id) {
				t.Errorf("scenario %s: duplicate ID %s not shown", s.Name, id)
			}
		}
	}
	if !strings.Contains(page, "MIT License") {
		t.Error("the chart library's licence is not in the page")
	}
}
