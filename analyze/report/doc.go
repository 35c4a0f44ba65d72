// Package report holds the result of judging an evidence directory and its
// renderers. Report (one ScenarioReport per scenario run, with its checks
// and the sections the checkers computed: totals, receipts, proxy stats,
// limiter models, arrivals, flows, latency ...) is what package analyze's
// Judge returns; its JSON form is versioned by ReportSchema and described by
// schemas/report.v2.schema.json.
//
// Each renderer is a func(io.Writer, *Report) error (WriteCSV also takes
// the evidence.Bundle the report was judged from, for its per-request rows):
// WriteTable and WriteTableWith (fitted to a terminal) for people, WriteJSON, WriteMarkdown, WriteJUnit, WriteHTML
// (a self-contained page with the uPlot charts of Series), WritePrometheus
// (the text exposition format), WriteCSV; WriteStatus writes status.txt
// (evidence.StatusLine). Compare diffs two reports (`rlbench diff`) into a
// Diff (schemas/diff.v1.schema.json), rendered by WriteDiffTable,
// WriteDiffMarkdown and WriteDiffJSON; ReadJSON reads a saved report. Report is plain data: package report imports no
// judging code, so a program can read a report back (json.Unmarshal) and
// render it.
package report
