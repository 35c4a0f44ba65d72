package evidence

import (
	"context"
	"os"
	"strings"
	"testing"
)

// nginxScenario writes a scenario directory whose nginx/nginx-a/ holds an
// access log of two requests as the runner writes it (WriteNginxAccessLog:
// the raw access.log and the sealed access.jsonl).
func nginxScenario(t *testing.T) Dir {
	t.Helper()
	d := scenarioWith(t)
	access := `{"id":"a","status":"200","upstream_status":"200","upstream_addr":"127.0.0.1:1","request_time":0.001,"upstream_response_time":"0.001","limit_req_status":"PASSED","msec":1796115529.123}` + "\n" +
		`{"id":"b","status":"503","upstream_status":"","upstream_addr":"","request_time":0.000,"upstream_response_time":"","limit_req_status":"REJECTED","msec":1796115529.124}` + "\n"
	if _, err := WriteNginxAccessLog(d, "nginx-a", "access.log", strings.NewReader(access)); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestNginxSealedAccessLogDamaged: the parsed nginx access log is sealed
// (WriteLines); one emptied, cut, changed in size, never closed, or
// removed (with or without the raw log) after it was written is a Problem
// of nginx/ naming it — lost evidence, which analyze makes NOT_RUN, never
// requests nginx did not log. The intact one, and one from before seals
// (no sidecar), load clean, as they always did.
func TestNginxSealedAccessLogDamaged(t *testing.T) {
	parsed, raw := NginxPath("nginx-a", NginxAccessFile), NginxPath("nginx-a", NginxAccessLogFile)
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, d Dir)
		want   string // "" for no problem
	}{
		{"intact", func(*testing.T, Dir) {}, ""},
		{"emptied", func(t *testing.T, d Dir) { noErr(t, os.Truncate(d.Path(parsed), 0)) }, "closed it at"},
		{"cut mid-line", func(t *testing.T, d Dir) {
			fi, err := os.Stat(d.Path(parsed))
			noErr(t, err)
			noErr(t, os.Truncate(d.Path(parsed), fi.Size()-10))
		}, "closed it at"},
		{"last line dropped", func(t *testing.T, d Dir) {
			b, err := os.ReadFile(d.Path(parsed))
			noErr(t, err)
			noErr(t, os.WriteFile(d.Path(parsed), b[:strings.IndexByte(string(b), '\n')+1], 0o644))
		}, "closed it at"},
		{"never closed", func(t *testing.T, d Dir) {
			b, err := os.ReadFile(StatePath(d.Path(parsed)))
			noErr(t, err)
			noErr(t, os.WriteFile(StatePath(d.Path(parsed)), []byte(strings.Replace(string(b), `"closed"`, `"open"`, 1)), 0o644))
		}, "never closed by its writer"},
		{"removed, raw log kept", func(t *testing.T, d Dir) { noErr(t, os.Remove(d.Path(parsed))) }, "missing, but its writer"},
		{"removed with the raw log", func(t *testing.T, d Dir) {
			noErr(t, os.Remove(d.Path(parsed)))
			noErr(t, os.Remove(d.Path(raw)))
		}, "missing, but its writer"},
		{"before seals", func(t *testing.T, d Dir) { noErr(t, os.Remove(StatePath(d.Path(parsed)))) }, ""},
		{"before seals, parsed log removed", func(t *testing.T, d Dir) {
			noErr(t, os.Remove(StatePath(d.Path(parsed))))
			noErr(t, os.Remove(d.Path(parsed)))
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := nginxScenario(t)
			tc.damage(t, d)
			s := LoadScenario(context.Background(), string(d), false)
			got := problemsOf(s, NginxDir)
			var seal []string
			for _, p := range got {
				if !strings.Contains(p, ":2: truncated last line") { // the cut's own line error
					seal = append(seal, p)
				}
			}
			if tc.want == "" {
				if len(got) != 0 {
					t.Fatalf("problems %q", got)
				}
				if len(s.Nginx) != 1 || len(s.Nginx[0].Records) != 2 || s.Nginx[0].File == "" {
					t.Errorf("loaded %+v", s.Nginx)
				}
				return
			}
			if len(seal) != 1 || !strings.Contains(seal[0], d.Path(parsed)+": ") || !strings.Contains(seal[0], tc.want) {
				t.Errorf("problems %q: want one naming %s with %q", got, d.Path(parsed), tc.want)
			}
		})
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
