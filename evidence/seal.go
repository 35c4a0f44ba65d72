package evidence

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/rlbench/rlbench/evidence/boundedio"
	"github.com/rlbench/rlbench/evidence/buildinfo"
	"github.com/rlbench/rlbench/evidence/safefile"
)

// # Sealed JSON Lines files
//
// A JSON Lines file tells nothing of its own end: a recorder killed between
// two lines leaves a well-formed file that is simply short, and a short
// receipts.jsonl reads as "the system lost requests". So every JSON Lines
// file rlbench writes through Create or CreateSync (requests.jsonl,
// receipts.jsonl, faults.jsonl, rls/decisions.jsonl, ...) has a sidecar,
// <file>.state.json (StateSuffix), a FileState:
//
//	{"schema": "rlbench.jsonl-state/v1", "file": "receipts.jsonl",
//	 "writer": "rlbench backend", "version": "(devel)", "pid": 4242,
//	 "state": "open", "opened_ns": ..., "records": 0, "bytes": 0}
//
// It is written before the file's first line, saying "open", and rewritten
// in place when the writer closes the file, saying "closed" with the number
// of lines and bytes written, or with the first write error. (In place, in
// the space reserved when it was created, so that even a full disk can
// take the close record; a crash mid-rewrite leaves a sidecar that does not
// decode, which is as incomplete as an open one.)
//
// Load (sealcheck.go) judges a file by its sidecar: "open" means the
// recorder died (killed, crashed) or still runs, "closed" with an error
// means a write failed, a size other than the one recorded means the file
// changed afterwards; each is a Problem naming the file, which makes the
// scenario NOT_RUN: incomplete evidence, never blamed on the system under
// test. A file without a sidecar was written by an rlbench before sealing
// (or by hand) and loads as it always did.
//
// A sidecar, rather than a header and a close line inside the file, keeps
// every line of every file a record of its one type (schemas/receipt.v1.json,
// jq, readers of earlier releases), and lets the close record be written on
// a full disk.

// StateSuffix is appended to a JSON Lines file's name to name its sidecar.
const StateSuffix = ".state.json"

// StateSchema is FileState.Schema.
const StateSchema = "rlbench.jsonl-state/v1"

// FileState.State values.
const (
	StateOpen   = "open"
	StateClosed = "closed"
)

// FileState is the sidecar <file>.jsonl.state.json of a sealed JSON Lines
// file (seal.go), padded with spaces to a fixed size.
type FileState struct {
	// Schema is StateSchema.
	Schema string `json:"schema"`
	// File is the JSON Lines file's base name.
	File string `json:"file"`
	// Writer is the program that wrote it: the executable's base name and
	// its subcommand ("rlbench backend").
	Writer string `json:"writer"`
	// Version is the writer's build (evidence/buildinfo: a module version,
	// "(devel)" in a checkout).
	Version string `json:"version,omitempty"`
	// PID is the writer's process.
	PID int `json:"pid"`
	// State is StateOpen until the writer closed the file, then
	// StateClosed. An open file's recorder was killed, crashed, or still runs.
	State string `json:"state"`
	// OpenedNs is when the file was created, unix ns.
	OpenedNs int64 `json:"opened_ns"`
	// ClosedNs is when the writer closed it, unix ns; 0 while open.
	ClosedNs int64 `json:"closed_ns,omitempty"`
	// Records is the number of lines the writer wrote; set when closed.
	// After a write error, the lines that are true: those a write-through
	// writer acknowledged, the complete ones of a buffered writer (the file
	// is cut back to them; Writer).
	Records int64 `json:"records"`
	// Bytes is their bytes, newlines included: the file's size when
	// closed; set when closed. After a write error whose partial lines the
	// writer could not cut off (Error says so), where the true lines end.
	Bytes int64 `json:"bytes"`
	// Error is the first write (or close) error: the file may miss lines.
	Error string `json:"error,omitempty"`
}

// StatePath is the sidecar of the JSON Lines file at path.
func StatePath(path string) string { return path + StateSuffix }

// stateBytes is the space reserved for a sidecar (padded with spaces), so
// that the close record overwrites it in place; maxStateError bounds the
// error it quotes.
const (
	stateBytes    = 4096
	maxStateError = 2048
)

// seal is the open sidecar of a file being written.
type seal struct {
	f  *os.File
	st FileState
}

// writerName is "<executable> <subcommand>" ("rlbench backend").
func writerName() string {
	if len(os.Args) == 0 {
		return ""
	}
	name := filepath.Base(os.Args[0])
	if len(os.Args) > 1 && !strings.HasPrefix(os.Args[1], "-") {
		name += " " + os.Args[1]
	}
	return name
}

// openSeal creates the sidecar of path, saying "open".
func openSeal(path string) (*seal, error) {
	f, err := safefile.Create(StatePath(path), 0o666)
	if err != nil {
		return nil, err
	}
	s := &seal{f: f, st: FileState{Schema: StateSchema, File: filepath.Base(path), Writer: writerName(), Version: buildinfo.Version(),
		PID: os.Getpid(), State: StateOpen, OpenedNs: time.Now().UnixNano()}}
	if err := s.write(); err != nil {
		s.discard()
		return nil, err
	}
	return s, nil
}

// write writes the state over the reserved space.
func (s *seal) write() error {
	b, err := json.MarshalIndent(&s.st, "", "  ")
	if err != nil {
		return err
	}
	for len(b) >= stateBytes && s.st.Error != "" { // an error with many escapes
		s.st.Error = s.st.Error[:len(s.st.Error)/2] + "..."
		if b, err = json.MarshalIndent(&s.st, "", "  "); err != nil {
			return err
		}
	}
	buf := bytes.Repeat([]byte{' '}, stateBytes)
	copy(buf, b)
	buf[stateBytes-1] = '\n'
	_, err = s.f.WriteAt(buf, 0)
	return err
}

// close records the end of the file: its lines and bytes, or err.
func (s *seal) close(records, n int64, err error) error {
	s.st.State, s.st.ClosedNs, s.st.Records, s.st.Bytes = StateClosed, time.Now().UnixNano(), records, n
	if err != nil {
		msg := err.Error()
		if len(msg) > maxStateError {
			msg = msg[:maxStateError] + "..."
		}
		s.st.Error = msg
	}
	werr := s.write()
	if cerr := s.f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("%s: close record: %w", s.f.Name(), werr)
	}
	return nil
}

// discard removes a sidecar whose file was never created.
func (s *seal) discard() {
	_ = s.f.Close()
	_ = os.Remove(s.f.Name())
}

// ReadFileState reads the sidecar of the JSON Lines file at path; an
// absent sidecar is an error satisfying errors.Is(err, fs.ErrNotExist).
func ReadFileState(path string) (*FileState, error) {
	b, err := boundedio.ReadRegular(context.Background(), StatePath(path), MaxDocumentBytes)
	if err != nil {
		return nil, err
	}
	var st FileState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", StatePath(path), JSONError(b, err))
	}
	if st.Schema != StateSchema {
		return nil, fmt.Errorf("%s: not a file state (want schema %q)", StatePath(path), StateSchema)
	}
	if st.State != StateOpen && st.State != StateClosed {
		return nil, fmt.Errorf("%s: state %q: want open or closed", StatePath(path), st.State)
	}
	return &st, nil
}
