package evidence

import (
	"path/filepath"
	"testing"

	"github.com/rlbench/rlbench/evidence/envoyrec"
)

func TestSchemaOf(t *testing.T) {
	d := Dir("run/01-x/1")
	cases := []struct {
		rel, id string
		ok      bool
	}{
		{d.Scenario(), ScenarioSchema, true},
		{d.Attack(), AttackSchema, true},
		{d.Requests(), RequestSchema, true},
		{d.Receipts(), ReceiptSchema, true},
		{d.Faults(), FaultSchema, true},
		{d.Decisions(), DecisionSchema, true},
		{d.RLSParsedLog(), RLSLogSchema, true},
		{d.RLSMetrics(LabelAfter, ".json"), RLSMetricsSchema, true},
		{d.RLSMetrics("pre-1-stop-rls", ".json"), RLSMetricsSchema, true},
		{d.RLSMetrics(LabelAfter, ".prom"), "", true},
		{d.RLSLog(), "", true},
		{d.Redis() + "/redis.log", "", true},
		{d.StatsSnapshot("proxy-a", LabelBefore, ".json"), envoyrec.SnapshotSchema, true},
		{d.StatsSnapshot("proxy-a", LabelBefore, ".raw.json"), "", true},
		{d.StatsSnapshot("proxy-a", LabelBefore, ".txt"), "", true},
		{d.StatsSnapshot("proxy-a", LabelBefore, ".prom"), "", true},
		{d.AccessLog("proxy-a"), "", true},
		{d.NotRun(), "", true},
		{Dir("run").Manifest(), ManifestSchema, true},
		{Dir("run").Status(), "", true},
		{NginxPath("edge", NginxAccessFile), NginxAccessSchema, true},
		{NginxPath("edge", NginxLimitReqFile), NginxLimitReqSchema, true},
		{NginxPath("edge", NginxStubStatusJSON(LabelBefore)), NginxStubStatusSchema, true},
		{NginxPath("edge", NginxStubStatusRaw(LabelBefore)), "", true},
		{NginxPath("edge", NginxConfFile), "", true},
		{NginxPath("edge", NginxAccessLogFile), "", true},
		{NginxPath("edge", NginxErrorLogFile), "", true},
		{StatePath(d.Requests()), StateSchema, true},
		{StatePath(d.Receipts()), StateSchema, true},
		{StatePath(d.Decisions()), StateSchema, true},
		{StatePath(NginxPath("edge", NginxAccessFile)), StateSchema, true},
		{StatePath(d.Scenario()), "", false},
		{StatePath("run/01-x/1/other.jsonl"), "", false},
		{"run/01-x/1/notes.json", "", false},
		{"run/01-x/1/rls/other.json", "", false},
		{"run/01-x/1/stats/README", "", false},
		{"nginx/edge/other.json", "", false},
	}
	for _, c := range cases {
		id, ok := SchemaOf(filepath.ToSlash(c.rel))
		if id != c.id || ok != c.ok {
			t.Errorf("SchemaOf(%q) = %q, %v; want %q, %v", c.rel, id, ok, c.id, c.ok)
		}
	}
}
