package evidence

import (
	"errors"
	"io"

	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/evidence/safefile"
)

// nginxDir creates nginx/<proxy>/ under d, without following a link below d
// (safefile.MkdirAll), and returns it.
func nginxDir(d Dir, proxy string) (string, error) {
	p := d.Path(NginxPath(proxy, ""))
	return p, safefile.MkdirAll(string(d), p)
}

// WriteNginxAccessLog copies an nginx JSON access log read from r into
// nginx/<proxy>/access.log under d (raw, as nginx wrote it, but for the
// credentials in its lines: RedactReader) while parsing it
// (evidence/nginxrec.ParseAccessLog; name names r in errors), then writes the
// records to nginx/<proxy>/access.jsonl, one per line. It returns the
// records; on a parse error the raw copy holds what was read.
func WriteNginxAccessLog(d Dir, proxy, name string, r io.Reader) ([]nginxrec.AccessRecord, error) {
	if _, err := nginxDir(d, proxy); err != nil {
		return nil, err
	}
	raw, err := safefile.Create(d.Path(NginxPath(proxy, NginxAccessLogFile)), 0o666)
	if err != nil {
		return nil, err
	}
	recs, err := nginxrec.ParseAccessLog(io.TeeReader(RedactReader(r), raw), name)
	if err = errors.Join(err, raw.Close()); err != nil {
		return nil, err
	}
	return recs, WriteLines(d.Path(NginxPath(proxy, NginxAccessFile)), recs)
}

// WriteNginxErrorLog copies an nginx error log read from r into
// nginx/<proxy>/error.log under d while parsing it
// (evidence/nginxrec.ParseErrorLog), then writes its limit_req lines to
// nginx/<proxy>/limit_req.jsonl.
func WriteNginxErrorLog(d Dir, proxy, name string, r io.Reader) (*nginxrec.ErrorLog, error) {
	if _, err := nginxDir(d, proxy); err != nil {
		return nil, err
	}
	raw, err := safefile.Create(d.Path(NginxPath(proxy, NginxErrorLogFile)), 0o666)
	if err != nil {
		return nil, err
	}
	l, err := nginxrec.ParseErrorLog(io.TeeReader(RedactReader(r), raw), name)
	if err = errors.Join(err, raw.Close()); err != nil {
		return nil, err
	}
	return l, WriteLines(d.Path(NginxPath(proxy, NginxLimitReqFile)), l.Limits())
}

// WriteNginxStubStatus saves one stub_status page under d's nginx/<proxy>/:
// raw (when not empty) as stub_status.<label>.txt and st (when not nil) as
// stub_status.<label>.json.
func WriteNginxStubStatus(d Dir, proxy, label string, raw []byte, st *nginxrec.StubStatus) error {
	if _, err := nginxDir(d, proxy); err != nil {
		return err
	}
	if len(raw) > 0 {
		if err := safefile.WriteFile(d.Path(NginxPath(proxy, NginxStubStatusRaw(label))), raw, 0o644); err != nil {
			return err
		}
	}
	if st == nil {
		return nil
	}
	return WriteJSONFile(d.Path(NginxPath(proxy, NginxStubStatusJSON(label))), st)
}

// WriteNginxConf saves the configuration an nginx ran as nginx/<proxy>/nginx.conf under d.
func WriteNginxConf(d Dir, proxy string, conf []byte) error {
	if _, err := nginxDir(d, proxy); err != nil {
		return err
	}
	return safefile.WriteFile(d.Path(NginxPath(proxy, NginxConfFile)), conf, 0o644)
}
