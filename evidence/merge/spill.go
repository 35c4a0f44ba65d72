package merge

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// The join of requests with receipts (duplicate IDs, identical receipts,
// the earliest receipt per ID and replica) is an external sort: every
// request and receipt becomes a fixed-size record keyed by its ID, sorted
// in memory in chunks of spillRecords records (or spillBytes of IDs),
// each chunk written to a run file beside the output, and the runs
// merged, so that the records of one ID arrive together. Memory does not
// grow with the number of requests: one chunk, and a read buffer per run
// being merged (at most fanIn; more runs are merged in several passes).

// Record kinds; requests sort before receipts within an ID.
const (
	kindRequest uint8 = iota
	kindReceipt
)

// spillRec is one record of the join. The fields a..e hold, for a
// request: a its send time, b its end (unix ns), c its shard (index in
// merge order), d 1 when its answer came from the backend; for a receipt:
// a its recv time, b the byte offset of its line in the receipts file
// written, c its replica (index in order of appearance), d its file, e the
// line's length without newline, and h a hash of the line (lineHash).
type spillRec struct {
	id    []byte
	hasID bool // false: a receipt without ID (JSON null)
	kind  uint8
	seq   uint64 // order of reading, per kind: the line of the output file
	h     uint64
	a, b  int64
	c, d  int32
	e     int32
}

// compareRec orders records by ID (receipts without one first), kind,
// line hash and reading order.
func compareRec(x, y *spillRec) int {
	if x.hasID != y.hasID {
		if !x.hasID {
			return -1
		}
		return 1
	}
	if c := bytes.Compare(x.id, y.id); c != 0 {
		return c
	}
	if x.kind != y.kind {
		return cmp.Compare(x.kind, y.kind)
	}
	if x.h != y.h {
		return cmp.Compare(x.h, y.h)
	}
	return cmp.Compare(x.seq, y.seq)
}

// Chunk and merge sizes; variables so that tests spill tiny chunks.
var (
	spillRecords = 1 << 18 // records per sorted chunk (about 80 bytes each in memory)
	spillBytes   = 16 << 20
	fanIn        = 128 // runs merged at once
)

// recHeader is the fixed part of a record in a run file: ID length (4),
// flags (1), seq, h, a, b (8 each), c, d, e (4 each); the ID follows.
const recHeader = 4 + 1 + 8*4 + 4*3

// sorter sorts spillRecs by compareRec in bounded memory.
type sorter struct {
	dir   string // run files; created on the first spill
	arena []byte
	recs  []spillRec
	runs  []string
	nrun  int
	buf   []byte
}

func newSorter(dir string) *sorter {
	return &sorter{dir: dir}
}

// add adds r with the given ID (copied).
func (s *sorter) add(r spillRec, id string) error {
	if s.recs == nil {
		s.recs = make([]spillRec, 0, min(spillRecords, 1<<12))
		s.arena = make([]byte, 0, min(spillBytes, 1<<16))
	}
	if len(s.recs) >= spillRecords || len(s.arena)+len(id) > spillBytes && len(s.recs) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	off := len(s.arena)
	s.arena = append(s.arena, id...)
	r.id = s.arena[off:len(s.arena):len(s.arena)]
	s.recs = append(s.recs, r)
	return nil
}

// spill sorts the chunk in memory and writes it as a run.
func (s *sorter) spill() error {
	slices.SortFunc(s.recs, func(x, y spillRec) int { return compareRec(&x, &y) })
	path, w, err := s.newRun()
	if err != nil {
		return err
	}
	for i := range s.recs {
		if err := s.write(w, &s.recs[i]); err != nil {
			return err
		}
	}
	if err := w.close(); err != nil {
		return err
	}
	s.runs = append(s.runs, path)
	clear(s.recs) // drop the arena's references
	s.recs, s.arena = s.recs[:0], s.arena[:0]
	return nil
}

type runWriter struct {
	f  *os.File
	bw *bufio.Writer
}

func (w *runWriter) close() error {
	err := w.bw.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *sorter) newRun() (string, *runWriter, error) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return "", nil, err
	}
	path := filepath.Join(s.dir, fmt.Sprintf("run-%06d", s.nrun))
	s.nrun++
	f, err := os.Create(path)
	if err != nil {
		return "", nil, err
	}
	return path, &runWriter{f: f, bw: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (s *sorter) write(w *runWriter, r *spillRec) error {
	b := s.buf[:0]
	b = binary.LittleEndian.AppendUint32(b, uint32(len(r.id)))
	flags := r.kind
	if r.hasID {
		flags |= 0x80
	}
	b = append(b, flags)
	b = binary.LittleEndian.AppendUint64(b, r.seq)
	b = binary.LittleEndian.AppendUint64(b, r.h)
	b = binary.LittleEndian.AppendUint64(b, uint64(r.a))
	b = binary.LittleEndian.AppendUint64(b, uint64(r.b))
	b = binary.LittleEndian.AppendUint32(b, uint32(r.c))
	b = binary.LittleEndian.AppendUint32(b, uint32(r.d))
	b = binary.LittleEndian.AppendUint32(b, uint32(r.e))
	b = append(b, r.id...)
	s.buf = b
	_, err := w.bw.Write(b)
	return err
}

// runReader reads the records of one run in order.
type runReader struct {
	f   *os.File
	br  *bufio.Reader
	hdr [recHeader]byte
	cur spillRec
	id  []byte
}

func openRun(path string) (*runReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &runReader{f: f, br: bufio.NewReaderSize(f, 64<<10)}, nil
}

// next reads the next record into r.cur; io.EOF at the end.
func (r *runReader) next() error {
	if _, err := io.ReadFull(r.br, r.hdr[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("merge: %s: run file cut short", r.f.Name())
		}
		return err
	}
	h := r.hdr[:]
	n := binary.LittleEndian.Uint32(h)
	flags := h[4]
	c := &r.cur
	c.kind, c.hasID = flags&0x7f, flags&0x80 != 0
	c.seq = binary.LittleEndian.Uint64(h[5:])
	c.h = binary.LittleEndian.Uint64(h[13:])
	c.a = int64(binary.LittleEndian.Uint64(h[21:]))
	c.b = int64(binary.LittleEndian.Uint64(h[29:]))
	c.c = int32(binary.LittleEndian.Uint32(h[37:]))
	c.d = int32(binary.LittleEndian.Uint32(h[41:]))
	c.e = int32(binary.LittleEndian.Uint32(h[45:]))
	if cap(r.id) < int(n) {
		r.id = make([]byte, n)
	}
	r.id = r.id[:n]
	if _, err := io.ReadFull(r.br, r.id); err != nil {
		return fmt.Errorf("merge: %s: run file cut short", r.f.Name())
	}
	c.id = r.id
	return nil
}

// runHeap orders run readers by their current record.
type runHeap []*runReader

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return compareRec(&h[i].cur, &h[j].cur) < 0 }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeRuns calls fn with the records of the runs in order (the record
// is valid during the call) and closes them.
func mergeRuns(paths []string, fn func(*spillRec) error) (err error) {
	h := make(runHeap, 0, len(paths))
	defer func() {
		for _, r := range h {
			_ = r.f.Close()
		}
	}()
	for _, p := range paths {
		r, err := openRun(p)
		if err != nil {
			return err
		}
		if err := r.next(); err == io.EOF {
			_ = r.f.Close()
			continue
		} else if err != nil {
			_ = r.f.Close()
			return err
		}
		h = append(h, r)
	}
	heap.Init(&h)
	for len(h) > 0 {
		r := h[0]
		if err := fn(&r.cur); err != nil {
			return err
		}
		switch err := r.next(); {
		case err == io.EOF:
			_ = r.f.Close()
			heap.Pop(&h)
		case err != nil:
			return err
		default:
			heap.Fix(&h, 0)
		}
	}
	return nil
}

// each calls fn with every record added, in compareRec order (the record
// is valid during the call only), and removes the runs.
func (s *sorter) each(fn func(*spillRec) error) error {
	if len(s.runs) == 0 { // it all fitted in memory
		slices.SortFunc(s.recs, func(x, y spillRec) int { return compareRec(&x, &y) })
		for i := range s.recs {
			if err := fn(&s.recs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.recs) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.recs, s.arena = nil, nil
	defer func() {
		for _, p := range s.runs {
			_ = os.Remove(p)
		}
	}()
	// More runs than fanIn: merge the oldest fanIn into one, until fanIn remain.
	for len(s.runs) > fanIn {
		group := s.runs[:fanIn]
		path, w, err := s.newRun()
		if err != nil {
			return err
		}
		err = mergeRuns(group, func(r *spillRec) error { return s.write(w, r) })
		if cerr := w.close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		for _, p := range group {
			_ = os.Remove(p)
		}
		s.runs = append(s.runs[fanIn:], path)
	}
	return mergeRuns(s.runs, fn)
}

// bitset is a set of small non-negative integers (line numbers).
type bitset []uint64

func (b *bitset) set(i uint64) {
	for uint64(len(*b)) <= i/64 {
		*b = append(*b, 0)
	}
	(*b)[i/64] |= 1 << (i % 64)
}

func (b bitset) has(i uint64) bool {
	return i/64 < uint64(len(b)) && b[i/64]&(1<<(i%64)) != 0
}
