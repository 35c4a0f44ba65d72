package envoy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/internal/jsonline"
)

// ServerInfo is the part of Envoy's GET /server_info (admin.v3.ServerInfo)
// that matters for interpreting rate limit evidence.
type ServerInfo struct {
	// Version is the full build string "<sha>/<x.y.z[-dev]>/<Clean|Modified>/<RELEASE|DEBUG>[/<TLS lib>]".
	Version string `json:"version"`
	// Release is the second "/"-separated field of Version, e.g. "1.9.0-dev" ("" if absent).
	Release string `json:"release,omitempty"`
	// State is LIVE, DRAINING, PRE_INITIALIZING or INITIALIZING.
	State string `json:"state"`
	// Concurrency is command_line_options.concurrency, the number of worker
	// threads (0 when absent). Local rate limit buckets are per process, not per worker.
	Concurrency int `json:"concurrency"`
	// UptimeCurrentEpoch is uptime_current_epoch as rendered (e.g. "6s").
	UptimeCurrentEpoch string `json:"uptime_current_epoch,omitempty"`
	// NodeID and NodeCluster are node.id and node.cluster.
	NodeID      string `json:"node_id,omitempty"`
	NodeCluster string `json:"node_cluster,omitempty"`
}

// ParseServerInfo parses a /server_info JSON document read from r. name is
// used in errors ("<name>:<line>: ..."). concurrency may be a JSON number or
// a decimal string. A document without "version" is an error. At most
// MaxResponseBytes are read.
func ParseServerInfo(r io.Reader, name string) (*ServerInfo, error) {
	data, err := boundedio.ReadAll(context.Background(), r, name, MaxResponseBytes)
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", name, err)
	}
	var doc struct {
		Version            string `json:"version"`
		State              string `json:"state"`
		UptimeCurrentEpoch string `json:"uptime_current_epoch"`
		CommandLineOptions struct {
			Concurrency json.RawMessage `json:"concurrency"`
		} `json:"command_line_options"`
		Node struct {
			ID      string `json:"id"`
			Cluster string `json:"cluster"`
		} `json:"node"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		off, _ := jsonline.Offset(err)
		return nil, lineErr(name, jsonline.Line(data, off), "invalid server_info JSON: %v", err)
	}
	if doc.Version == "" {
		return nil, lineErr(name, 1, "server_info has no \"version\"")
	}
	info := &ServerInfo{
		Version:            doc.Version,
		State:              doc.State,
		UptimeCurrentEpoch: doc.UptimeCurrentEpoch,
		NodeID:             doc.Node.ID,
		NodeCluster:        doc.Node.Cluster,
	}
	if parts := strings.Split(doc.Version, "/"); len(parts) >= 2 {
		info.Release = parts[1]
	}
	if c := strings.Trim(string(bytes.TrimSpace(doc.CommandLineOptions.Concurrency)), `"`); c != "" && c != "null" {
		n, err := strconv.Atoi(c)
		if err != nil {
			return nil, lineErr(name, 0, "command_line_options.concurrency %q is not an integer", c)
		}
		info.Concurrency = n
	}
	return info, nil
}

// FetchServerInfo GETs <adminURL>/server_info and parses it with
// ParseServerInfo. raw is the body as received. A nil client means
// http.DefaultClient.
func FetchServerInfo(ctx context.Context, client *http.Client, adminURL string) (raw []byte, info *ServerInfo, err error) {
	url := strings.TrimRight(adminURL, "/") + "/server_info"
	raw, _, err = get(ctx, client, url)
	if err != nil {
		return raw, nil, err
	}
	info, err = ParseServerInfo(bytes.NewReader(raw), evidence.RedactURL(url))
	return raw, info, err
}
