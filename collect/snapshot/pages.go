package snapshot

import (
	"context"
	"net/http"

	"github.com/rlbench/rlbench/collect/envoy"
	"github.com/rlbench/rlbench/collect/nginx"
	"github.com/rlbench/rlbench/collect/rls"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
	"github.com/rlbench/rlbench/evidence/nginxrec"
	"github.com/rlbench/rlbench/evidence/safefile"
)

// EnvoyStats is an Envoy admin /stats page in format (envoy.Fetch: text
// /stats, JSON /stats?format=json or /stats/prometheus; Envoy's
// docs/root/operations/admin.rst). It is kept by evidence.WriteStats as
// stats/<name>.<label><evidence.RawStatsExt(format)> (raw) and
// stats/<name>.<label>.json (the envoy.Snapshot analyze compares, stamped
// with Name, Label and the admin URL redacted by evidence.RedactURL); a
// failed fetch keeps the raw body only.
func EnvoyStats(format envoyrec.Format) Page[*envoyrec.Snapshot] {
	return Page[*envoyrec.Snapshot]{
		Fetch: func(ctx context.Context, client *http.Client, url string) ([]byte, *envoyrec.Snapshot, error) {
			return envoy.Fetch(ctx, client, url, format)
		},
		KeepRaw: func(o Options, raw []byte) error {
			return evidence.WriteStats(o.Out, o.Name, o.Label, string(format), raw, nil)
		},
		Write: func(o Options, raw []byte, snap *envoyrec.Snapshot) (*envoyrec.Snapshot, error) {
			snap.Proxy, snap.Label, snap.Admin = o.Name, o.Label, evidence.RedactURL(o.URL)
			return snap, evidence.WriteStats(o.Out, o.Name, o.Label, string(format), raw, snap)
		},
	}
}

// RLSPrometheus is envoyproxy/ratelimit's Prometheus page (/metrics with
// USE_PROMETHEUS=true; rls.Fetch and rls.ParsePrometheus). It is kept by
// evidence.WriteRLSMetrics as rls/metrics.<label>.prom (raw) and
// rls/metrics.<label>.json: an evidence.RLSMetrics of the shape the runner
// writes for a real RLS (one process, stable, taken at Options.Now, the URL
// redacted), so analyze reads both. A failed fetch keeps the raw page when
// anything was read.
func RLSPrometheus() Page[*rls.PromSnapshot] {
	return Page[*rls.PromSnapshot]{
		Fetch: rls.Fetch,
		KeepRaw: func(o Options, raw []byte) error {
			if len(raw) == 0 {
				return nil
			}
			if err := safefile.MkdirAll(string(o.Out), o.Out.RLS()); err != nil {
				return err
			}
			return safefile.WriteFile(o.Out.RLSMetrics(o.Label, ".prom"), raw, 0o644)
		},
		Write: func(o Options, raw []byte, snap *rls.PromSnapshot) (*rls.PromSnapshot, error) {
			m := evidence.RLSMetrics{Schema: evidence.RLSMetricsSchema, Label: o.Label, TimeNs: o.now().UnixNano(), URL: evidence.RedactURL(o.URL),
				Process: 1, Stable: true, Prometheus: &snap.RLSPrometheus, Counters: snap.RLSCounters()}
			return snap, evidence.WriteRLSMetrics(o.Out, &m, raw)
		},
	}
}

// NginxStubStatus is nginx's stub_status page (nginx.FetchStubStatus;
// nginx's ngx_http_stub_status_module). It is kept by
// evidence.WriteNginxStubStatus as nginx/<name>/stub_status.<label>.txt
// (raw) and stub_status.<label>.json (parsed); a failed fetch keeps the raw
// body only.
func NginxStubStatus() Page[nginxrec.StubStatus] {
	return Page[nginxrec.StubStatus]{
		Fetch: nginx.FetchStubStatus,
		KeepRaw: func(o Options, raw []byte) error {
			return evidence.WriteNginxStubStatus(o.Out, o.Name, o.Label, raw, nil)
		},
		Write: func(o Options, raw []byte, st nginxrec.StubStatus) (nginxrec.StubStatus, error) {
			return st, evidence.WriteNginxStubStatus(o.Out, o.Name, o.Label, raw, &st)
		},
	}
}
