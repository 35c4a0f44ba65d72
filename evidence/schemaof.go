package evidence

import (
	"path"
	"strings"

	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// SchemaOf returns the schema ID of an evidence file by its place in the
// layout: rel is a slash-separated path relative to a scenario directory or
// a run directory (or to a directory of run directories), and only its last
// components count. It returns "" with ok true for a file rlbench keeps in
// its producer's own format (raw Envoy /stats and RLS /metrics pages, access,
// RLS, Redis and nginx logs, nginx.conf) or as text (NOT_RUN, status.txt),
// and ok false for a name that is not part of the layout. For attack.json
// it returns AttackSchema; a file of the earlier AttackSummarySchema names
// it in its "schema" field.
//
// The seal of a JSON Lines file of the layout, <file>.jsonl.state.json
// (seal.go), has StateSchema.
func SchemaOf(rel string) (id string, ok bool) {
	rel = path.Clean(rel)
	if sealed, isState := strings.CutSuffix(rel, StateSuffix); isState {
		if _, known := SchemaOf(sealed); known && strings.HasSuffix(sealed, ".jsonl") {
			return StateSchema, true
		}
		return "", false
	}
	base := path.Base(rel)
	dir := path.Base(path.Dir(rel))
	grand := path.Base(path.Dir(path.Dir(rel)))
	switch {
	case grand == NginxDir && dir != ".":
		switch {
		case base == NginxAccessFile:
			return NginxAccessSchema, true
		case base == NginxLimitReqFile:
			return NginxLimitReqSchema, true
		case strings.HasPrefix(base, "stub_status.") && strings.HasSuffix(base, ".json"):
			return NginxStubStatusSchema, true
		case base == NginxConfFile || base == NginxAccessLogFile || base == NginxErrorLogFile,
			strings.HasPrefix(base, "stub_status.") && strings.HasSuffix(base, ".txt"):
			return "", true
		}
		return "", false
	case grand == HAProxyDir && dir != ".":
		switch base {
		case HAProxyLogFile:
			return HAProxyLogSchema, true
		case HAProxyConfFile, HAProxyRawLogFile, HAProxyStderrFile:
			return "", true
		}
		return "", false
	case dir == RLSDir:
		switch {
		case RLSDir+"/"+base == DecisionsFile:
			return DecisionSchema, true
		case RLSDir+"/"+base == RLSParsedLogFile:
			return RLSLogSchema, true
		case RLSDir+"/"+base == RLSLogFile:
			return "", true
		case strings.HasPrefix(base, metricsPrefix) && strings.HasSuffix(base, ".json"):
			return RLSMetricsSchema, true
		case strings.HasPrefix(base, metricsPrefix) && strings.HasSuffix(base, ".prom"):
			return "", true
		}
		return "", false
	case path.Base(RedisDir) == dir && grand == RLSDir:
		return "", true
	case dir == GatewayDir && GatewayDir+"/"+base == GatewayScriptFile:
		return "", true
	case path.Base(GatewayRedisDir) == dir && grand == GatewayDir:
		return "", true
	case dir == StatsDir:
		for _, format := range []string{"text", "json", "prometheus"} {
			if ext, _ := RawStatsExt(format); strings.HasSuffix(base, ext) {
				return "", true
			}
		}
		if strings.HasSuffix(base, ".json") {
			return envoyrec.SnapshotSchema, true
		}
		return "", false
	case dir == AccessLogDir:
		return "", strings.HasSuffix(base, ".log")
	case dir == ReceiptsDir && strings.HasSuffix(base, ".jsonl"):
		return ReceiptSchema, true
	}
	switch base {
	case ScenarioFile:
		return ScenarioSchema, true
	case AttackFile:
		return AttackSchema, true
	case RequestsFile:
		return RequestSchema, true
	case ReceiptsFile:
		return ReceiptSchema, true
	case FaultsFile:
		return FaultSchema, true
	case ManifestFile:
		return ManifestSchema, true
	case MergeFile:
		return MergeSchema, true
	case HarnessFile:
		return HarnessSchema, true
	case NotRunFile, StatusFile, LatestLink:
		return "", true
	}
	return "", false
}
