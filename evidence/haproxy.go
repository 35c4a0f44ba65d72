package evidence

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/evidence/haproxyrec"
	"github.com/rlbench/rlbench/evidence/safefile"
)

// HAProxy evidence: one directory per HAProxy proxy, named by its attack target name, under HAProxyDir:
//
//	haproxy/<proxy>/haproxy.cfg   the config the instance ran (rendered by rlbench)
//	haproxy/<proxy>/haproxy.log   raw log, one JSON object per request (HAProxy's standard output)
//	haproxy/<proxy>/log.jsonl     parsed: one evidence/haproxyrec.LogRecord per request
//	haproxy/<proxy>/stderr.log    HAProxy's warnings and alerts
const (
	HAProxyDir        = "haproxy"
	HAProxyConfFile   = "haproxy.cfg"
	HAProxyRawLogFile = "haproxy.log"
	HAProxyLogFile    = "log.jsonl"
	HAProxyStderrFile = "stderr.log"
)

// HAProxyLogSchema is the schema of one haproxy/<proxy>/log.jsonl line (evidence/haproxyrec.LogRecord).
const HAProxyLogSchema = "rlbench.haproxy-log/v1"

// HAProxyPath returns haproxy/<proxy>/<name>, the place of one HAProxy evidence file relative to the evidence
// directory.
func HAProxyPath(proxy, name string) string { return filepath.Join(HAProxyDir, proxy, name) }

// HAProxyEvidence is the evidence of one HAProxy proxy, haproxy/<proxy>/.
type HAProxyEvidence struct {
	// Proxy is the directory name: the attack target name of this HAProxy.
	Proxy string `json:"proxy"`
	// File is the log that was read, relative to the scenario directory: the parsed HAProxyLogFile, or the raw
	// HAProxyRawLogFile when there is no parsed one; "" when neither exists.
	File string `json:"file,omitempty"`
	// Records are the log's records in file order.
	Records []haproxyrec.LogRecord `json:"records"`
}

// haproxyDir creates haproxy/<proxy>/ under d, without following a link below d, and returns it.
func haproxyDir(d Dir, proxy string) (string, error) {
	p := d.Path(HAProxyPath(proxy, ""))
	return p, safefile.MkdirAll(string(d), p)
}

// WriteHAProxyLog copies HAProxy's JSON log read from r into haproxy/<proxy>/haproxy.log under d (raw but for the
// credentials in its lines: RedactReader) while parsing it (evidence/haproxyrec.ParseLog; name names r in
// errors), then writes the records to haproxy/<proxy>/log.jsonl, one per line. It returns the records; on a
// parse error the raw copy holds what was read.
func WriteHAProxyLog(d Dir, proxy, name string, r io.Reader) ([]haproxyrec.LogRecord, error) {
	if _, err := haproxyDir(d, proxy); err != nil {
		return nil, err
	}
	raw, err := safefile.Create(d.Path(HAProxyPath(proxy, HAProxyRawLogFile)), 0o666)
	if err != nil {
		return nil, err
	}
	recs, err := haproxyrec.ParseLog(io.TeeReader(RedactReader(r), raw), name)
	if err = errors.Join(err, raw.Close()); err != nil {
		return nil, err
	}
	if recs == nil {
		recs = []haproxyrec.LogRecord{}
	}
	return recs, WriteLines(d.Path(HAProxyPath(proxy, HAProxyLogFile)), recs)
}

// WriteHAProxyFile saves one file an HAProxy left (HAProxyConfFile, HAProxyStderrFile) as haproxy/<proxy>/<name>
// under d.
func WriteHAProxyFile(d Dir, proxy, name string, b []byte) error {
	if _, err := haproxyDir(d, proxy); err != nil {
		return err
	}
	return safefile.WriteFile(d.Path(HAProxyPath(proxy, name)), b, 0o644)
}

// readHAProxy loads every haproxy/<proxy>/ directory of d, sorted by proxy. A file that does not decode is a
// Problem (File HAProxyDir) naming it and the line; the other proxies still load.
func readHAProxy(d Dir, problems []Problem) ([]HAProxyEvidence, []Problem) {
	var out []HAProxyEvidence
	entries, err := os.ReadDir(d.Path(HAProxyDir))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, Problem{File: HAProxyDir, Msg: err.Error()})
		}
		return out, problems
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		h := HAProxyEvidence{Proxy: e.Name(), Records: []haproxyrec.LogRecord{}}
		fail := func(err error) { problems = append(problems, Problem{File: HAProxyDir, Msg: err.Error()}) }
		parsed, raw := HAProxyPath(h.Proxy, HAProxyLogFile), HAProxyPath(h.Proxy, HAProxyRawLogFile)
		err := ReadFile(d.Path(parsed), func(_ int, a *haproxyrec.LogRecord) error {
			h.Records = append(h.Records, *a)
			return nil
		})
		switch {
		case err == nil:
			h.File = parsed
		case !errors.Is(err, fs.ErrNotExist):
			fail(err)
		default:
			f, err := boundedio.OpenRegular(context.Background(), d.Path(raw), 0)
			if err == nil {
				h.File = raw
				if h.Records, err = haproxyrec.ParseLog(f, d.Path(raw)); err != nil {
					fail(err)
				}
				if h.Records == nil {
					h.Records = []haproxyrec.LogRecord{}
				}
				f.Close()
			} else if !errors.Is(err, fs.ErrNotExist) {
				fail(err)
			}
		}
		out = append(out, h)
	}
	return out, problems
}
