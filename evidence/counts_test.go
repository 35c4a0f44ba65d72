package evidence

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence/nginxrec"
)

// TestStubStatusCounts (issue 27): an nginx stub_status snapshot with a
// negative count (after − before of int64 then wraps or goes negative) or
// handled above accepts was taken as evidence; it is now a problem naming
// the file and the field, and the scenario is incomplete.
func TestStubStatusCounts(t *testing.T) {
	for _, c := range []struct {
		name string
		st   nginxrec.StubStatus
		want string // "": no problem
	}{
		{"consistent", nginxrec.StubStatus{Active: 1, Accepts: 3, Handled: 3, Requests: 4}, ""},
		{"negative requests", nginxrec.StubStatus{Accepts: 3, Handled: 3, Requests: -9223372036854775808}, "requests = -9223372036854775808: negative"},
		{"handled past accepts", nginxrec.StubStatus{Accepts: 3, Handled: 4, Requests: 4}, "handled = 4 exceeds accepts = 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			d := Dir(dir)
			writeFile(t, d.Path(NginxPath("nginx-a", NginxAccessFile)), lines(t, []nginxrec.AccessRecord{{Line: 1, ID: "a", Status: 200}}))
			b, _ := json.Marshal(c.st)
			p := d.Path(NginxPath("nginx-a", NginxStubStatusJSON(LabelBefore)))
			writeFile(t, p, string(b))
			s := LoadScenario(context.Background(), dir, false)
			ps := problemsOf(s, NginxDir)
			if c.want == "" {
				if len(ps) != 0 || s.Nginx[0].Before == nil {
					t.Fatalf("problems %v, nginx %+v", ps, s.Nginx)
				}
				return
			}
			if len(ps) != 1 || !strings.Contains(ps[0], p+": bad counts (incomplete evidence): "+c.want) || s.Nginx[0].Before != nil {
				t.Fatalf("problems %v, nginx %+v", ps, s.Nginx)
			}
		})
	}
}
