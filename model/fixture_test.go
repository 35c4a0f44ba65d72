package model

import (
	"bufio"
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/rlbench/rlbench/internal/testfix"
)

// nginxFixture is one capture under shared/fixtures/nginx with the counts
// its README gives: how many requests nginx's limit_req state admitted
// (PASSED, DELAYED and, under dry run, DELAYED_DRY_RUN).
type nginxFixture struct {
	dir      string
	admitted int
	rejected int // REJECTED or REJECTED_DRY_RUN
	// decided: requests the checker must judge must admit / must reject
	// (timing on loopback is tight enough for these).
	decided []string
}

var nginxFixtures = []nginxFixture{
	{dir: "a-rate10-noburst", admitted: 1, rejected: 19},
	{dir: "b-burst5-delay", admitted: 6, rejected: 14},
	{dir: "c-burst5-nodelay", admitted: 9, rejected: 16},
	{dir: "d-burst10-delay4", admitted: 11, rejected: 9},
	{dir: "e-status429", admitted: 1, rejected: 19},
	{dir: "h-dry-run", admitted: 6, rejected: 14},
	{dir: "k-two-zones", admitted: 3, rejected: 17},
	{dir: "m-rate1rpm-truncation", admitted: 2, rejected: 1, decided: []string{"m-02", "m-03"}},
}

var (
	reZone    = regexp.MustCompile(`limit_req_zone\s+(\S+)\s+zone=(\w+):\S+\s+rate=(\S+);`)
	reLimit   = regexp.MustCompile(`limit_req\s+zone=(\w+)(?:\s+burst=(\d+))?(?:\s+(nodelay)|\s+delay=(\d+))?;`)
	reDryRun  = regexp.MustCompile(`limit_req_dry_run\s+on;`)
	reComment = regexp.MustCompile(`(?m)^\s*#.*$`)
)

// specFromConf reads the limit_req directives of a captured nginx.conf.
func specFromConf(t *testing.T, conf []byte) (Spec, bool) {
	conf = reComment.ReplaceAll(conf, nil)
	zones := map[string][2]string{}
	for _, m := range reZone.FindAllSubmatch(conf, -1) {
		zones[string(m[2])] = [2]string{string(m[1]), string(m[3])}
	}
	s := Spec{Kind: KindNginxLimitReq, DryRun: reDryRun.Match(conf)}
	for _, m := range reLimit.FindAllSubmatch(conf, -1) {
		z, ok := zones[string(m[1])]
		if !ok {
			t.Fatalf("limit_req zone=%s without its limit_req_zone", m[1])
		}
		nz := NginxZone{Name: string(m[1]), Rate: z[1], Key: z[0], NoDelay: len(m[3]) > 0}
		if len(m[2]) > 0 {
			nz.Burst, _ = strconv.Atoi(string(m[2]))
		}
		if len(m[4]) > 0 {
			nz.Delay, _ = strconv.Atoi(string(m[4]))
		}
		s.Zones = append(s.Zones, nz)
	}
	return s, len(s.Zones) > 0
}

type clientLine struct {
	ID       string `json:"id"`
	SendNS   int64  `json:"send_ns"`
	Code     int    `json:"code"`
	Latency  int64  `json:"latency_ns"`
	LimitReq string `json:"x_limit_req_status"`
}

type upstreamLine struct {
	ID     string `json:"id"`
	RecvNS int64  `json:"recv_ns"`
}

func readJSONL[T any](t *testing.T, data []byte) []T {
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		out = append(out, v)
	}
	return out
}

// fixtureEvents maps a capture to events: [send, send+latency] narrowed by
// the upstream receipt, and the outcome from $limit_req_status.
func fixtureEvents(t *testing.T, dir string) []tEvent {
	clients := readJSONL[clientLine](t, testfix.ReadFixture(t, "nginx", dir+"/client.jsonl"))
	recv := map[string]int64{}
	for _, u := range readJSONL[upstreamLine](t, testfix.ReadFixture(t, "nginx", dir+"/upstream.jsonl")) {
		if r, ok := recv[u.ID]; !ok || u.RecvNS < r {
			recv[u.ID] = u.RecvNS
		}
	}
	vars := map[string]string{"$binary_remote_addr": "127.0.0.1", "$host": "127.0.0.1"}
	var events []tEvent
	for _, c := range clients {
		e := tEvent{ID: c.ID, Lo: c.SendNS, Hi: c.SendNS + c.Latency, Attrs: &Attrs{Vars: vars}}
		if r, ok := recv[c.ID]; ok && r < e.Hi {
			e.Hi = r
		}
		switch c.LimitReq {
		case "PASSED", "DELAYED", "DELAYED_DRY_RUN":
			e.Outcome = Admitted
		case "REJECTED":
			e.Outcome = Rejected
		case "REJECTED_DRY_RUN":
			e.Outcome = ShadowRejected
		default:
			t.Fatalf("%s %s: unexpected limit_req status %q", dir, c.ID, c.LimitReq)
		}
		events = append(events, e)
	}
	return events
}

func TestNginxFixtures(t *testing.T) {
	for _, fx := range nginxFixtures {
		t.Run(fx.dir, func(t *testing.T) {
			spec, ok := specFromConf(t, testfix.ReadFixture(t, "nginx", fx.dir+"/nginx.conf"))
			if !ok {
				t.Fatal("no limit_req in nginx.conf")
			}
			m, err := New(spec)
			if err != nil {
				t.Fatal(err)
			}
			events := fixtureEvents(t, fx.dir)
			adm, rej := 0, 0
			for _, e := range events {
				switch e.Outcome {
				case Admitted:
					adm++
				case Rejected, ShadowRejected:
					rej++
				}
			}
			if adm != fx.admitted || rej != fx.rejected {
				t.Fatalf("capture has %d admitted, %d rejected; README says %d, %d", adm, rej, fx.admitted, fx.rejected)
			}
			opts := Options{ShadowVisible: true}
			res, err := Check(m, mk(events), opts)
			if err != nil {
				t.Fatal(err)
			}
			if v, why := res.Validity(); v != Valid {
				t.Fatalf("validity %s: %v\nover %+v\nunder %+v", v, why, res.Over, res.Under)
			}
			if fx.admitted < res.Total.Min || fx.admitted > res.Total.Max {
				t.Errorf("README count %d outside the model's bounds %d..%d", fx.admitted, res.Total.Min, res.Total.Max)
			}
			for _, b := range res.Buckets {
				if !b.Holds() {
					t.Errorf("bucket %s: %+v does not hold", b.Bucket, b)
				}
			}
			var decided []string
			for j, v := range res.Verdicts {
				if v != Either {
					decided = append(decided, events[j].ID)
				}
			}
			for _, id := range fx.decided {
				if !slices.Contains(decided, id) {
					t.Errorf("%s judged either; want it decided (decided: %v)", id, decided)
				}
			}
			t.Logf("%s: bounds %d..%d, decided %v, uncertainty %+v", fx.dir, res.Total.Min, res.Total.Max, decided, res.Uncertainty)
			// flipping any decided request must be reported, naming it
			for j, v := range res.Verdicts {
				if v == Either {
					continue
				}
				flipped := slices.Clone(events)
				if v == MustReject {
					flipped[j].Outcome = Admitted
				} else if spec.DryRun {
					flipped[j].Outcome = ShadowRejected
				} else {
					flipped[j].Outcome = Rejected
				}
				r2, err := Check(m, mk(flipped), opts)
				if err != nil {
					t.Fatal(err)
				}
				list := r2.Under
				if v == MustReject {
					list = r2.Over
				}
				if !slices.ContainsFunc(list, func(x Violation) bool { return x.ID == events[j].ID }) {
					t.Errorf("flipping %s (%s) not reported: over %v under %v", events[j].ID, v, r2.Over, r2.Under)
				}
				if got, _ := r2.Validity(); got != Invalid {
					t.Errorf("flipping %s: validity %s", events[j].ID, got)
				}
			}
		})
	}
}

// The f* captures are proxy_next_upstream retries without limit_req: no
// limiter to judge there.
func TestNginxRetryFixturesHaveNoLimitReq(t *testing.T) {
	for _, dir := range []string{"f-next-upstream-500", "f2-next-upstream-500-maxfails0", "f3-next-upstream-timeout-error"} {
		if _, ok := specFromConf(t, testfix.ReadFixture(t, "nginx", dir+"/nginx.conf")); ok {
			t.Errorf("%s: limit_req found; judge it like the others", dir)
		}
	}
}
