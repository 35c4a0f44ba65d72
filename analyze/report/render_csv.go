package report

import (
	"bufio"
	"encoding/csv"
	"errors"
	"io"
	"strconv"

	"github.com/rlbench/rlbench/evidence"
)

// CSVHeader is the header row of WriteCSV, one column per field:
//
//	scenario       scenario name
//	repeat         1-based repeat, 0 when the scenario is not repeated
//	id             the request's rlbench ID (X-Rlbench-Id)
//	target         the target (proxy) it was sent to
//	phase          the attack phase that sent it ("" for a single attack)
//	class          its response class (see the Class constants)
//	code           HTTP status, 0 for no response
//	sent_ns        send time, unix ns
//	latency_ns     from the send until the body was read (or the error), ns
//	receipt        "yes" when the backend received it, else "no"
//	model_verdict  the limiter model's verdict on the request; empty while
//	               the report carries none
var CSVHeader = []string{"scenario", "repeat", "id", "target", "phase", "class", "code", "sent_ns", "latency_ns", "receipt", "model_verdict"}

// WriteCSV writes one row per request of every scenario of b that rep
// judged (rep = Judge(b, ...)), in scenario then file order, after the
// CSVHeader row. It returns an error when rep was not judged from b.
func WriteCSV(w io.Writer, rep *Report, b *evidence.Bundle) error {
	if b == nil {
		return errors.New("csv: the evidence the report was judged from is needed for per-request rows")
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	cw := csv.NewWriter(bw)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	row := make([]string, len(CSVHeader))
	for i, ev := range b.Scenarios {
		if i >= len(rep.Scenarios) || rep.Scenarios[i].Dir != ev.Dir && rep.Scenarios[i].Dir != ev.Path {
			return errors.New("csv: the report was not judged from this evidence (scenario " + ev.Dir + ")")
		}
		sr := &rep.Scenarios[i]
		verdict := requestVerdicts(sr)
		reqs := &ev.Requests
		received := make([]bool, reqs.Len())
		for _, r := range ev.Receipts.Request {
			if r >= 0 {
				received[r] = true
			}
		}
		row[0], row[1] = sr.Name, strconv.Itoa(sr.Repeat)
		for j, n := 0, reqs.Len(); j < n; j++ {
			row[2] = reqs.IDs.ID(j)
			row[3] = reqs.Targets[reqs.Target[j]]
			row[4] = reqs.Phases[reqs.PhaseAt(j)]
			row[5] = reqs.Class[j].String()
			row[6] = strconv.Itoa(int(reqs.Code[j]))
			row[7] = strconv.FormatInt(reqs.SentNs.At(j), 10)
			row[8] = strconv.FormatInt(reqs.EndNs.At(j)-reqs.SentNs.At(j), 10)
			row[9] = "no"
			if received[j] {
				row[9] = "yes"
			}
			row[10] = verdict(j)
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return bw.Flush()
}

// requestVerdicts returns the model's verdict on request i (an index of the
// scenario's evidence.Requests) as the report carries it. Hook: the report
// has no per-request model verdicts yet, so every verdict is empty; when it
// gains them, this is the one place that reads them.
func requestVerdicts(*ScenarioReport) func(i int) string {
	return func(int) string { return "" }
}
