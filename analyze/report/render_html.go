package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
)

// The chart library is uPlot, pinned and checked against the npm registry's
// integrity by scripts/fetch-chart-lib.sh (assets/uplot/VERSION says which);
// its MIT licence is kept in assets/uplot/LICENSE and shown in the page.
//
//go:generate bash ../scripts/fetch-chart-lib.sh
var (
	//go:embed assets/uplot/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uplot/uPlot.min.css
	uplotCSS string
	//go:embed assets/uplot/LICENSE
	uplotLicense string
	//go:embed assets/uplot/VERSION
	uplotVersion string
	//go:embed assets/report.js
	reportJS string
	//go:embed assets/report.css
	reportCSS string
	//go:embed assets/report.html.tmpl
	reportTmpl string
)

// classCount is the count of a class name, "sent" or "passed"
// (Classes.Get) for the template; an unknown name fails the render.
func classCount(c Classes, name string) (int, error) {
	if n, ok := c.Get(name); ok {
		return n, nil
	}
	return 0, fmt.Errorf("class %q: want sent, passed or one of %s", name, strings.Join(evidence.ClassNames(), ", "))
}

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"anchor": scenarioAnchor,
	"human":  HumanNs,
	"since":  func(t, start int64) string { return "+" + HumanNs(t-start) },
	"dur":    func(a, b int64) string { return HumanNs(b - a) },
	"vs":     overString,
	"class":  classCount,
	"rejected": func(c Classes) int {
		return c.sum(evidence.ClassLocal429, evidence.ClassGlobal429, evidence.ClassRLSError)
	},
	"errors": func(c Classes) int {
		return c.sum(evidence.ClassOther4xx, evidence.ClassOther5xx, evidence.ClassOther, evidence.ClassNoResponse)
	},
	"ids":   func(ids []string) string { return strings.Join(ids, ", ") },
	"more":  func(n int, ids []string) bool { return n > len(ids) },
	"label": scenarioLabel,
	"date":  func(ns int64) string { return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05.000 MST") },
	"lower": strings.ToLower,
}).Parse(reportTmpl))

// htmlPage is what the template renders.
type htmlPage struct {
	Report  *Report
	Repeats map[string]int
	// Data is the report as JSON for the page's charts (html/template
	// escapes nothing in it: json.Marshal's \u003c escaping keeps it inside
	// its script element).
	Data        template.JS
	UPlotJS     template.JS
	UPlotCSS    template.CSS
	ReportJS    template.JS
	ReportCSS   template.CSS
	LibLicense  string
	LibVersion  string
	HasSeries   bool
	SampleLimit int
}

// WriteHTML renders the report as one self-contained HTML page: no request
// leaves it (the chart library, uPlot, and its styles are inlined; see
// assets/uplot/VERSION). It shows the run's verdict and a summary linking to
// each scenario; per scenario the verdict and its reasons first, the counts
// per target and phase, a timeline per target (admitted, limiter-rejected and
// errors per bin, backend receipts per bin, fault windows shaded and
// labelled), the cumulative admissions against every bound line, latency
// over time and latency distributions per class, the latency figures, the
// fault windows, the reconciliation with the offending IDs and the checks.
//
// The charts need ScenarioReport.Series (Judge with Options.Series); without
// it the page has the tables only and says so. Every figure the page shows
// is in the element's text; verdicts, counts and fault windows also carry
// data-* attributes for tools that read the page.
func WriteHTML(w io.Writer, rep *Report) error {
	data, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	p := htmlPage{Report: rep, Repeats: repeatsByName(rep), Data: template.JS(data), UPlotJS: template.JS(uplotJS),
		UPlotCSS: template.CSS(uplotCSS), ReportJS: template.JS(reportJS), ReportCSS: template.CSS(reportCSS),
		LibLicense: uplotLicense, LibVersion: strings.TrimSpace(uplotVersion), SampleLimit: SampleIDs}
	for _, s := range rep.Scenarios {
		if s.Series != nil {
			p.HasSeries = true
		}
	}
	return htmlTemplate.Execute(w, &p)
}

// CellAnchor is the anchor of the scenario section of a matrix cell: the
// run the cell's figures are of (its scenario name and repeat); "" when
// the report has no such run.
func (p *htmlPage) CellAnchor(c MatrixCell) string {
	for i, s := range p.Report.Scenarios {
		if s.Name == c.Scenario && s.Repeat == c.Repeat {
			return scenarioAnchor(i, s)
		}
	}
	return ""
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// scenarioAnchor is the id of scenario i's section: "s<i+1>-<slug of name>",
// unique in the page and stable for the same run.
func scenarioAnchor(i int, s ScenarioReport) string {
	slug := strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(s.Name), "-"), "-")
	id := "s" + strconv.Itoa(i+1)
	if slug != "" {
		id += "-" + slug
	}
	if s.Repeat > 0 {
		id += "-" + strconv.Itoa(s.Repeat)
	}
	return id
}
