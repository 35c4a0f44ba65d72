package evidence

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"

	json "github.com/goccy/go-json"

	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/evidence/nginxrec"
)

// NginxEvidence is the evidence of one nginx proxy, nginx/<proxy>/ (see
// NginxPath): its access log records and its stub_status snapshots.
type NginxEvidence struct {
	// Proxy is the directory name: the attack target name of this nginx.
	Proxy string `json:"proxy"`
	// File is the access log that was read, relative to the scenario
	// directory: the parsed NginxAccessFile, or the raw NginxAccessLogFile
	// (parsed with evidence/nginxrec.ParseAccessLog) when there is no parsed one;
	// "" when neither exists.
	File string `json:"file,omitempty"`
	// Records are the access log's records in file order.
	Records []nginxrec.AccessRecord `json:"records"`
	// Before and After are the stub_status snapshots taken before the first
	// and after the last attack (NginxStubStatusJSON of LabelBefore and
	// LabelAfter); nil when absent.
	Before *nginxrec.StubStatus `json:"before,omitempty"`
	After  *nginxrec.StubStatus `json:"after,omitempty"`
	// Workers is worker_processes of the configuration kept beside the logs (NginxConfFile, as the lab writes it;
	// nginxrec.WorkerProcesses); 0 when there is none or it does not tell ("auto", an include, unreadable).
	// The records' own $pid (nginxrec.AccessRecord.Pid), when logged, tell which workers served requests.
	Workers int `json:"workers,omitempty"`
	// StubStatusMissing lists the parsed stub_status snapshots
	// (NginxStubStatusJSON of LabelBefore or LabelAfter, relative to the
	// scenario directory) that are absent while another stub_status file of
	// this proxy is there: one of the pair is lost, so their delta is not
	// measured. Empty when the proxy has all or none of them.
	StubStatusMissing []string `json:"stub_status_missing,omitempty"`
	// Lost says why the access log on file was not used: cut short, changed
	// or removed after its seal, or a line that does not decode (the
	// Problem's text, naming the file and line). Records is then empty and
	// File "": partial records would be judged as if nginx had logged no
	// more, and blame it. "" when the log was read whole, or there is none.
	Lost string `json:"lost,omitempty"`
	// Notices are problems of files that are kept but that no check reads:
	// limit_req.jsonl cut short, emptied or removed after its writer sealed
	// it (SealProblem). They are reported, never a reason of the verdict.
	Notices []string `json:"notices,omitempty"`
}

// readNginx loads every nginx/<proxy>/ directory of d, sorted by proxy. A
// file that does not decode is a Problem (File NginxDir) naming it and the
// line, and so is a parsed access log whose seal (seal.go) says it is
// incomplete, or that is missing while its seal is there; such a log is
// Lost (its partial records are not used); the other proxies still load. A stub_status snapshot missing from its pair is
// listed in StubStatusMissing, a damaged limit_req.jsonl in Notices.
func readNginx(d Dir, problems []Problem) ([]NginxEvidence, []Problem) {
	out := []NginxEvidence{}
	entries, err := os.ReadDir(d.Path(NginxDir))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, Problem{File: NginxDir, Msg: err.Error()})
		}
		return out, problems
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n := NginxEvidence{Proxy: e.Name(), Records: []nginxrec.AccessRecord{}}
		fail := func(err error) { problems = append(problems, Problem{File: NginxDir, Msg: err.Error()}) }
		parsed, raw := NginxPath(n.Proxy, NginxAccessFile), NginxPath(n.Proxy, NginxAccessLogFile)
		// The parsed log is sealed (WriteLines): one cut short, changed, or
		// removed after it was written is lost evidence (NOT_RUN), never
		// requests nginx did not log.
		lost := func(msg string) {
			problems = append(problems, Problem{File: NginxDir, Msg: msg})
			if n.Lost == "" {
				n.Lost = msg
			}
		}
		if msg := sealedFileProblem(d.Path(parsed)); msg != "" {
			lost(msg)
		}
		err := ReadFile(d.Path(parsed), func(line int, a *nginxrec.AccessRecord) error {
			if a.Pid < 0 {
				return fmt.Errorf("%s:%d: key \"pid\": %d is not a process ID", d.Path(parsed), line, a.Pid)
			}
			n.Records = append(n.Records, *a)
			return nil
		})
		switch {
		case err == nil:
			n.File = parsed
		case !errors.Is(err, fs.ErrNotExist):
			lost(err.Error())
		default:
			f, err := boundedio.OpenRegular(context.Background(), d.Path(raw), 0)
			if err == nil {
				n.File = raw
				if n.Records, err = nginxrec.ParseAccessLog(f, d.Path(raw)); err != nil {
					lost(err.Error())
				}
				f.Close()
			} else if !errors.Is(err, fs.ErrNotExist) {
				lost(err.Error())
			}
		}
		if n.Lost != "" {
			n.File, n.Records = "", nil
		}
		if n.Records == nil {
			n.Records = []nginxrec.AccessRecord{}
		}
		if msg := sealedFileProblem(d.Path(NginxPath(n.Proxy, NginxLimitReqFile))); msg != "" {
			n.Notices = append(n.Notices, msg)
		}
		stubFiles := false // any stub_status file of either label, raw or parsed
		for _, label := range []string{LabelBefore, LabelAfter} {
			for _, name := range []string{NginxStubStatusJSON(label), NginxStubStatusRaw(label)} {
				if _, err := os.Lstat(d.Path(NginxPath(n.Proxy, name))); !errors.Is(err, fs.ErrNotExist) {
					stubFiles = true
				}
			}
		}
		for _, label := range []string{LabelBefore, LabelAfter} {
			rel := NginxPath(n.Proxy, NginxStubStatusJSON(label))
			p := d.Path(rel)
			b, err := boundedio.ReadRegular(context.Background(), p, MaxDocumentBytes)
			if errors.Is(err, fs.ErrNotExist) {
				if stubFiles {
					n.StubStatusMissing = append(n.StubStatusMissing, rel)
				}
				continue
			}
			var st nginxrec.StubStatus
			if err == nil {
				if err = json.Unmarshal(b, &st); err != nil {
					err = fmt.Errorf("%s: %w", p, JSONError(b, err))
				} else if err = checkStubStatus(&st); err != nil {
					err = fmt.Errorf("%s: %w", p, err)
				}
			}
			if err != nil {
				fail(err)
				continue
			}
			if label == LabelBefore {
				n.Before = &st
			} else {
				n.After = &st
			}
		}
		// The configuration it ran: its worker count, or unknown (0) when it
		// is absent or cannot be read; it decides no check by itself.
		if b, err := boundedio.ReadRegular(context.Background(), d.Path(NginxPath(n.Proxy, NginxConfFile)), MaxDocumentBytes); err == nil {
			n.Workers, _ = nginxrec.WorkerProcesses(b)
		}
		out = append(out, n)
	}
	return out, problems
}
