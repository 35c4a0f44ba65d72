package cli

import (
	"bytes"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/backend"
	"github.com/rlbench/rlbench/internal/senders"
)

// senderPID finds the pid of the `rlbench attack` sender process writing
// dir (its command line holds "--out dir"), by /proc.
func senderPID(t *testing.T, dir string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	want := []byte("\x00--out\x00" + dir + "\x00")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, want) {
			return pid
		}
	}
	t.Fatalf("no process with --out %s", dir)
	return 0
}

// TestAttackSendersOneKilled: `rlbench attack --senders 2` with sender 1
// SIGKILLed (by its pid) while the target holds its first requests, which
// the backend has received. attack exits 1 naming the sender, and its
// summary does not count sender 1's IDs as sent: their sent status is
// unknown (previous release: "100 of 100 IDs sent", the killed sender's
// IDs left out of both figures). analyze does not call the killed
// sender's receipted IDs phantom (received but never sent: a fault of the
// system under test) but sent status unknown, and the run is NOT_RUN,
// naming the sender whose record is incomplete.
func TestAttackSendersOneKilled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds the sender's pid in /proc")
	}
	bin := rlbenchBinary(t)
	job := t.TempDir()
	writeFile(t, filepath.Join(job, "scenario", evidence.ScenarioFile),
		`{"schema": "rlbench.scenario/v1", "name": "sender killed", "expect": {"label": "every admission delivered", "receipts_equal_admitted": true}}`)
	receipts := evidence.Dir(filepath.Join(job, "backend")).Receipts()
	if err := os.MkdirAll(filepath.Dir(receipts), 0o755); err != nil {
		t.Fatal(err)
	}
	be, err := backend.Start(t.Context(), backend.Options{ReceiptsFile: receipts, Replica: "lab-backend"})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	u, err := url.Parse(be.URL())
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // sender 1's requests end with it
	// Sender 1 sends the IDs at odd positions: req-...-0002, -0004, ...
	ofSender1 := func(id string) bool {
		k, err := strconv.Atoi(id[strings.LastIndexByte(id, '-')+1:])
		return err == nil && (k-1)%2 == 1
	}
	hit, killed := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	kill := func() { once.Do(func() { close(killed) }) }
	defer kill()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ofSender1(r.Header.Get("X-Rlbench-Id")) {
			rp.ServeHTTP(w, r)
			return
		}
		rp.ServeHTTP(httptest.NewRecorder(), r) // received: the backend has its receipt
		select {
		case hit <- struct{}{}:
		default:
		}
		select { // no answer before sender 1 is gone
		case <-killed:
		case <-r.Context().Done():
		}
	}))
	defer front.Close()

	const ids = 200
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "attack", "--target", "backend="+front.URL, "--ids", strconv.Itoa(ids), "--senders", "2", "--out", job)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hit:
	case <-time.After(2 * time.Minute): // a failure's bound, not a synchronisation
		_ = cmd.Process.Kill()
		t.Fatalf("sender 1 never reached the target: %s", stderr.String())
	}
	dir := senders.SenderDir(job, 1)
	pid := senderPID(t, dir)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	kill()
	err = cmd.Wait()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("attack exit %v, want 1\n%s", err, stderr.String())
	}
	if err := be.Close(); err != nil { // seals the receipts
		t.Fatal(err)
	}
	out := stderr.String()
	t.Logf("attack:\n%s", out)
	if !strings.Contains(out, "sender 1/2 ("+dir+")") || !strings.Contains(out, "killed") {
		t.Errorf("attack does not name the killed sender:\n%s", out)
	}
	if !strings.Contains(out, "attack: 2 senders: 100 of 200 IDs sent; sent status unknown: the 100 IDs of sender 1 (no attack.json)") {
		t.Errorf("summary:\n%s\nwant 100 of 200 sent, the 100 of sender 1 unknown", out)
	}

	code, rep := analyzeJSON(t, job)
	s := rep.Scenarios[0]
	t.Logf("analyze: exit %d, %s, phantom %d, sent unknown %d, reasons %q", code, s.Status, s.Receipts.Phantom, s.Receipts.SentUnknown, s.Reasons)
	if code != ExitNotRun || s.Status != evidence.NotRun {
		t.Errorf("analyze: exit %d, %s, want NOT_RUN", code, s.Status)
	}
	if s.Receipts.Phantom != 0 || s.Receipts.SentUnknown == 0 {
		t.Errorf("phantom %d (%v), sent unknown %d: sender 1's receipted IDs are not phantom, their sent status is unknown",
			s.Receipts.Phantom, s.Receipts.PhantomIDs, s.Receipts.SentUnknown)
	}
	why := strings.Join(s.Reasons, "\n")
	for _, c := range s.Checks {
		if c.Status == "fail" {
			t.Errorf("a killed sender fails %+v", c)
		}
	}
	if !strings.Contains(why, senders.SenderDir(job, 1)+": requests.jsonl without attack.json") || !strings.Contains(why, "the sent status of its IDs is unknown") {
		t.Errorf("reasons do not name sender 1's directory:\n%s", why)
	}
}
