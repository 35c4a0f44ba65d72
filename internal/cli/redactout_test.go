package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlbench/rlbench/evidence"
)

// TestRedactingWriter: lines pass through RedactText whatever the write
// boundaries, a line without a secret is unchanged, Flush writes the last
// partial line, and a line longer than the bound is written in pieces.
func TestRedactingWriter(t *testing.T) {
	var out bytes.Buffer
	w := newRedactingWriter(&out)
	in := "plain\nGet \"http://u:S3@h/?token=S4\": refused\nno newline http://h/?sig=S5"
	for i := 0; i < len(in); i += 3 { // a URL split over several writes
		if _, err := w.Write([]byte(in[i:min(i+3, len(in))])); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Contains(out.String(), "no newline") {
		t.Errorf("a partial line was written before Flush: %q", out.String())
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "plain\nGet \"http://u:xxxxx@h/?token=xxxxx\": refused\nno newline http://h/?sig=xxxxx"
	if out.String() != want {
		t.Errorf("got  %q\nwant %q", out.String(), want)
	}
	out.Reset()
	long := strings.Repeat("a", maxHeldLine+5)
	_, _ = w.Write([]byte(long))
	if out.Len() != len(long) {
		t.Errorf("a line over the bound: %d bytes written before its end, want %d", out.Len(), len(long))
	}
}

// TestAnalyzeRedactsOldEvidence (issue 27): evidence written by an older
// release may quote a URL with a query token or a user name that is a
// token (only passwords were masked then); analyze's report, which quotes
// the NOT_RUN reason, prints neither, nor writes them into status.txt or
// report's files.
func TestAnalyzeRedactsOldEvidence(t *testing.T) {
	dir := t.TempDir()
	reason := "receipts: http://" + secretMarker + "@127.0.0.1:1/_rlbench/receipts?token=" + secretMarker + ": connection refused\n"
	if err := os.WriteFile(filepath.Join(dir, evidence.NotRunFile), []byte(reason), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "analyze", "--status-file", "-", dir)
	if code != ExitNotRun || strings.Contains(stdout+stderr, secretMarker) || !strings.Contains(stdout, "http://xxxxx@127.0.0.1:1/_rlbench/receipts?token=xxxxx") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, _, _ = runCLI(t, "analyze", dir); strings.Contains(string(readFile(t, filepath.Join(dir, "status.txt"))), secretMarker) {
		t.Errorf("status.txt holds the secret:\n%s", readFile(t, filepath.Join(dir, "status.txt")))
	}
	html, prom := filepath.Join(t.TempDir(), "r.html"), filepath.Join(t.TempDir(), "r.prom")
	if code, _, stderr := runCLI(t, "report", "--html", html, "--prometheus", prom, dir); code != ExitNotRun {
		t.Errorf("report: exit %d: %s", code, stderr)
	}
	for _, p := range []string{html, prom} {
		if strings.Contains(string(readFile(t, p)), secretMarker) {
			t.Errorf("%s holds the secret", p)
		}
	}
	if !strings.Contains(string(readFile(t, html)), "xxxxx") {
		t.Errorf("%s does not quote the reason, redacted", html)
	}
	for _, f := range []string{"json", "markdown", "junit", "csv", "html"} {
		code, stdout, _ := runCLI(t, "analyze", "--status-file", "-", "--format", f, dir)
		if code != ExitNotRun || strings.Contains(stdout, secretMarker) {
			t.Errorf("--format %s: exit %d, the secret printed: %v", f, code, strings.Contains(stdout, secretMarker))
		}
	}
}
