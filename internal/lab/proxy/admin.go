package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// httpServer is the admin listener's net/http server.
type httpServer struct {
	srv  *http.Server
	done chan struct{}
}

func startHTTPServer(ln net.Listener, h http.Handler) *httpServer {
	s := &httpServer{srv: &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}, done: make(chan struct{})}
	go func() { defer close(s.done); _ = s.srv.Serve(ln) }()
	return s
}

func (s *httpServer) close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

// adminMux serves the Envoy admin endpoints the lab implements
// (docs/root/operations/admin.rst):
//
//	GET  /stats                 text: `name: value`, text readouts first; ?filter=<RE2> (partial match), ?usedonly, ?format=json|prometheus
//	GET  /stats/prometheus      Prometheus text 0.0.4 with Envoy's tag-extracted names
//	GET  /server_info           JSON: version, state LIVE, command_line_options, uptime, node
//	GET  /ready                 200 "LIVE"
//	POST /reset_counters        zeroes counters (GET -> 400)
//	GET  /config_dump           JSON of the effective lab configuration: filters, retry policy, breakers, outlier detection, hosts, seed (not Envoy's proto dump)
func (p *Proxy) adminMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/stats", p.serveStats)
	mux.HandleFunc("/stats/prometheus", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		q.Set("format", "prometheus")
		r.URL.RawQuery = q.Encode()
		p.serveStats(w, r)
	})
	mux.HandleFunc("/server_info", p.serveServerInfo)
	mux.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
		_, _ = io.WriteString(w, "LIVE\n")
	})
	mux.HandleFunc("/reset_counters", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "Method %s not allowed, POST required.\n", r.Method)
			return
		}
		p.stats.resetCounters()
		_, _ = io.WriteString(w, "OK\n")
	})
	mux.HandleFunc("/config_dump", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		_ = enc.Encode(p.configDump())
	})
	return mux
}

func (p *Proxy) serveStats(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var filter *regexp.Regexp
	if f := q.Get("filter"); f != "" {
		re, err := regexp.Compile(f)
		if err != nil {
			w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "Invalid re2 regex: %v\n", err)
			return
		}
		filter = re
	}
	_, usedOnly := q["usedonly"]
	p.stats.gauge("server.uptime").set(uint64(p.now().Sub(p.started) / time.Second))
	snap := p.stats.snapshot(filter, usedOnly)
	switch f := q.Get("format"); f {
	case "", "text":
		w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
		_ = snap.writeText(w)
	case "json":
		w.Header().Set("Content-Type", "application/json")
		_ = snap.writeJSON(w)
	case "prometheus":
		w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
		_ = snap.writePrometheus(w)
	default:
		w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "usage: /stats?format=(html|active-html|json|prometheus|text)\n\ninvalid format %q\n", f)
	}
}

func (p *Proxy) serveServerInfo(w http.ResponseWriter, r *http.Request) {
	up := p.now().Sub(p.started) / time.Second
	parts := strings.Split(Version, "/")
	var major, minor, patch int
	fmt.Sscanf(parts[1], "%d.%d.%d", &major, &minor, &patch)
	info := map[string]any{
		"version":             Version,
		"state":               "LIVE",
		"hot_restart_version": "disabled",
		"command_line_options": map[string]any{
			"base_id":                  "0",
			"concurrency":              1,
			"config_path":              "",
			"config_yaml":              "",
			"admin_address_path":       "",
			"local_address_ip_version": "v4",
			"log_level":                "info",
			"service_cluster":          "rlbench-lab",
			"service_node":             p.name,
			"service_zone":             "",
			"mode":                     "Serve",
			"disable_hot_restart":      true,
			"restart_epoch":            0,
			"drain_time":               "600s",
			"parent_shutdown_time":     "900s",
		},
		"uptime_current_epoch": strconv.FormatInt(int64(up), 10) + "s",
		"uptime_all_epochs":    strconv.FormatInt(int64(up), 10) + "s",
		"node": map[string]any{
			"id":              p.name,
			"cluster":         "rlbench-lab",
			"user_agent_name": "envoy",
			"user_agent_build_version": map[string]any{
				"version":  map[string]any{"major_number": major, "minor_number": minor, "patch": patch},
				"metadata": map[string]any{"build.label": "rlbench-lab", "build.type": "RELEASE", "revision.status": "Clean", "ssl.version": "BoringSSL"},
			},
			"metadata":   map[string]any{"rlbench_lab": true},
			"extensions": []any{},
		},
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	_ = enc.Encode(info)
}
