package envoy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/evidence/envoyrec"
)

// MaxResponseBytes bounds the admin response bodies read by Fetch and
// FetchServerInfo (256 MiB); a larger body is an error.
const MaxResponseBytes = 256 << 20

// StatsPath returns the admin path for a rendering: "/stats" (text),
// "/stats?format=json" or "/stats/prometheus". "" means text.
func StatsPath(format envoyrec.Format) (string, error) {
	switch format {
	case envoyrec.FormatText, "":
		return "/stats", nil
	case envoyrec.FormatJSON:
		return "/stats?format=json", nil
	case envoyrec.FormatPrometheus:
		return "/stats/prometheus", nil
	}
	return "", fmt.Errorf("unknown stats format %q (want text, json or prometheus)", format)
}

// Fetch GETs the admin stats of the Envoy whose admin base URL is adminURL
// (e.g. "http://127.0.0.1:9901"; a trailing "/" is ignored) in the given
// rendering ("" = text) and parses it with Parse. raw is the response body as
// received, returned whenever it was read (also when parsing fails), so
// callers can store it (stats/<proxy>.<label>.raw). snap.Admin is adminURL
// redacted (evidence.RedactURL) and snap.TakenNs the unix ns when the body
// was fully read. A nil client means http.DefaultClient; ctx bounds the
// whole exchange. A non-200 status is an error naming the URL (redacted,
// as in every error) and status.
func Fetch(ctx context.Context, client *http.Client, adminURL string, format envoyrec.Format) (raw []byte, snap *envoyrec.Snapshot, err error) {
	path, err := StatsPath(format)
	if err != nil {
		return nil, nil, err
	}
	if format == "" {
		format = envoyrec.FormatText
	}
	url := strings.TrimRight(adminURL, "/") + path
	raw, taken, err := get(ctx, client, url)
	if err != nil {
		return raw, nil, err
	}
	snap, err = Parse(bytes.NewReader(raw), evidence.RedactURL(url), format)
	if err != nil {
		return raw, nil, err
	}
	snap.Admin = evidence.RedactURL(adminURL)
	snap.TakenNs = taken.UnixNano()
	return raw, snap, nil
}

// get GETs url; its errors name url redacted (evidence.RedactURL).
func get(ctx context.Context, client *http.Client, rawURL string) ([]byte, time.Time, error) {
	if client == nil {
		client = http.DefaultClient
	}
	url := evidence.RedactURL(rawURL)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("envoy admin: %w", evidence.RedactError(err))
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("envoy admin GET %s: %w", url, evidence.RedactError(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	taken := time.Now()
	if err != nil {
		return body, taken, fmt.Errorf("envoy admin GET %s: reading body: %w", url, err)
	}
	if len(body) > MaxResponseBytes {
		return nil, taken, fmt.Errorf("envoy admin GET %s: body larger than %d bytes", url, MaxResponseBytes)
	}
	if resp.StatusCode != http.StatusOK {
		return body, taken, fmt.Errorf("envoy admin GET %s: HTTP %d: %s", url, resp.StatusCode, clip(strings.TrimSpace(string(body))))
	}
	return body, taken, nil
}
