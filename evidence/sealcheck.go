package evidence

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// sealedFiles are the JSON Lines files of a scenario directory whose seal
// Load checks (seal.go), in layout order. (Each nginx proxy's access.jsonl
// is checked where it is read: readNginx.)
var sealedFiles = []string{RequestsFile, ReceiptsFile, FaultsFile, DecisionsFile}

// checkSeals returns a Problem for every sealed file of d whose sidecar
// says it is incomplete: never closed (its recorder died, or still runs),
// closed after a write error, or changed since. A file without a sidecar
// (written before seals, or by hand) and a missing file give none here.
func checkSeals(d Dir) []Problem {
	var out []Problem
	for _, name := range sealedFiles {
		if msg := SealProblem(d.Path(name)); msg != "" {
			out = append(out, Problem{File: name, Msg: msg})
		}
	}
	return out
}

// sealedFileProblem is SealProblem for a file its loader does without
// (nginx/<proxy>/access.jsonl: the raw log is parsed instead): a file that
// is missing while its sidecar is there was created by its writer and then
// removed (or its writer died between the sidecar and the file), so its
// lines are lost, not absent from the start.
func sealedFileProblem(path string) string {
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return SealProblem(path)
	}
	st, err := ReadFileState(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "" // never sealed (an earlier release, or none written)
	case err != nil:
		return fmt.Sprintf("%s: missing, and the close record of its writer is unreadable (%v): the file was written and is lost; not judged", path, err)
	case st.State == StateOpen:
		return fmt.Sprintf("%s: missing, and never closed by its writer (%s, pid %d): the recorder was killed or crashed, or the file was removed; not judged", path, st.Writer, st.PID)
	}
	return fmt.Sprintf("%s: missing, but its writer (%s, pid %d) closed it with %d lines (%d bytes): the file was removed after it was written; not judged",
		path, st.Writer, st.PID, st.Records, st.Bytes)
}

// SealProblem says why the sealed file at path is incomplete, or "".
func SealProblem(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "" // a missing file is reported where it is read
	}
	st, err := ReadFileState(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ""
	case err != nil:
		return fmt.Sprintf("%s: its close record is unreadable (%v): the recorder may have died while closing it; lines may be missing", path, err)
	}
	who := fmt.Sprintf("%s, pid %d", st.Writer, st.PID)
	switch {
	case st.State == StateOpen:
		return fmt.Sprintf("%s: never closed by its writer (%s, opened %s): the recorder was killed or crashed (or still runs), so lines may be missing; not judged",
			path, who, time.Unix(0, st.OpenedNs).UTC().Format(time.RFC3339))
	case st.Error != "":
		return fmt.Sprintf("%s: its writer (%s) failed: %s; lines may be missing", path, who, st.Error)
	case fi.Size() != st.Bytes:
		return fmt.Sprintf("%s: %d bytes, but its writer (%s) closed it at %d bytes: the file changed after it was written", path, fi.Size(), who, st.Bytes)
	}
	return ""
}
