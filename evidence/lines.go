package evidence

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	json "github.com/goccy/go-json"

	"github.com/rlbench/rlbench/evidence/boundedio"
)

// requests.jsonl and receipts.jsonl are read in byte-range chunks decoded in
// parallel (each chunk owns the lines that start inside it), then merged in
// file order: the merge inserts the request IDs (detecting repeated ones) and
// stops at the first bad line, exactly as a sequential read would.

// chunkBytes is the size of one chunk (a variable for tests); a file is
// split into at most maxChunks of them.
var chunkBytes int64 = 16 << 20

const maxChunks = 64

type loadErrs struct{ requests, receipts error }

// span is a byte range [start, end) of a file and what its lines gave.
type span struct {
	start, end int64
	// lines counts the lines that start in the span (blank ones too).
	lines int
	// err is the first error (a *LineError with a line relative to the span,
	// or a read error); rows after it were not decoded.
	err error
}

// reqChunk is the decoded requests of one span; done is closed when it is.
type reqChunk struct {
	span
	done             chan struct{}
	arena            []byte
	ends             []int
	line             []int32
	target, phase    []uint16
	targets, phases  []string
	targetIx, phasIx map[string]uint16
	flow             []uint16
	flows            []string
	flowIx           map[string]uint16
	url, conn        []uint32
	urls, conns      []string
	urlIx, connIx    map[string]uint32
	sentNs, endNs    []int64
	code             []uint16
	class            []Class
	// rate are the rows' rate-limit headers; Request is the row in the chunk.
	rate []RateHeaders
	// notSent are the rows recorded with not_sent.
	notSent []int32
	// outside is the first row sent outside the attack's span.
	outside lineFinding
}

// recChunk is the decoded receipts of one span, their IDs resolved; next
// is the request index guessed for the next receipt (receipts mostly come in
// the order their requests were recorded).
type recChunk struct {
	span
	done     chan struct{}
	next     int
	recv     []int64
	request  []int32
	phantoms []string
	xrid     []string
	// attempt and endpoint are the receipts' attempt counts and endpoint
	// names (indexes of endpoints), nil until one is known (any).
	attempt    []uint16
	endpoint   []uint16
	endpoints  []string
	endpointIx map[string]uint16
	any        bool
	// early is the first receipt recorded before its request was sent
	// (beyond the clock tolerance), unsent the first of a request
	// recorded as not sent.
	early, unsent lineFinding
}

// spans splits a file of size n into chunks.
func spans(n int64) []span {
	k := int((n + chunkBytes - 1) / chunkBytes)
	k = min(max(k, 1), maxChunks)
	if chunkBytes < 1<<20 {
		k = max(int((n+chunkBytes-1)/chunkBytes), 1) // tests: many small chunks
	}
	out := make([]span, k)
	for i := range out {
		out[i] = span{start: n * int64(i) / int64(k), end: n * int64(i+1) / int64(k)}
	}
	return out
}

// eachSpanLine calls fn with every line that starts in [sp.start, sp.end) of
// f (without newline and surrounding blanks; complete is false for a last line
// without newline) and its 1-based number within the span.
// readers recycles the chunk readers' 1 MiB buffers.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 1<<20) }}

func eachSpanLine(f *os.File, size int64, sp *span, name string, fn func(line int, b []byte, complete bool) error) {
	r := readers.Get().(*bufio.Reader)
	r.Reset(io.NewSectionReader(f, sp.start, size-sp.start))
	defer func() { r.Reset(nil); readers.Put(r) }()
	off := sp.start
	if sp.start > 0 {
		// The line under way at start belongs to the previous span; a line
		// starts here only if the byte before is a newline.
		var prev [1]byte
		if _, err := f.ReadAt(prev[:], sp.start-1); err != nil {
			sp.err = fmt.Errorf("%s: %w", name, err)
			return
		}
		if prev[0] != '\n' {
			skipped, err := r.ReadSlice('\n')
			for err == bufio.ErrBufferFull {
				off += int64(len(skipped))
				skipped, err = r.ReadSlice('\n')
			}
			off += int64(len(skipped))
			if err != nil && err != io.EOF {
				sp.err = fmt.Errorf("%s: %w", name, err)
				return
			}
		}
	}
	var long []byte
	for off < sp.end {
		b, err := readLine(r, &long)
		if err == errLongLine {
			sp.err = &LineError{File: name, Line: sp.lines + 1, Err: err}
			return
		}
		n := int64(len(b))
		if len(b) == 0 && err == io.EOF {
			return
		}
		if err != nil && err != io.EOF {
			sp.err = fmt.Errorf("%s: %w", name, err)
			return
		}
		off += n
		sp.lines++
		complete := b[len(b)-1] == '\n'
		if ferr := fn(sp.lines, trimSpace(b), complete); ferr != nil {
			sp.err = ferr
			return
		}
		if err == io.EOF {
			return
		}
	}
}

// estimateRows guesses how many lines a span of that many bytes of f holds,
// from the line length of f's first 64 KiB, to size the columns once.
func estimateRows(f *os.File, bytes int64) int {
	buf := make([]byte, min(64<<10, max(bytes, 1)))
	n, _ := f.ReadAt(buf, 0)
	nl := 0
	for _, c := range buf[:n] {
		if c == '\n' {
			nl++
		}
	}
	if nl == 0 {
		return 16
	}
	return int(bytes/int64(n/nl)) + 16
}

// readRequests reads requests.jsonl into reqs and receipts.jsonl into recs,
// decoding both files' chunks on every CPU. It returns the lines skipped
// because their ID was recorded before, the lines whose times or not_sent
// contradict the attack (clk) or their request, and the errors that
// stopped each read (fs.ErrNotExist when a file is absent).
func readRequests(ctx context.Context, reqPath string, cls *Classifier, wantXRID bool, reqs *Requests, recs *Receipts, recPath string, clk clockChecks) ([]Problem, loadErrs) {
	var errs loadErrs
	rf, _, err := boundedio.OpenFile(reqPath)
	if err != nil {
		errs.requests = err
	} else {
		defer rf.Close()
	}
	cf, _, err := boundedio.OpenFile(recPath)
	if err != nil {
		errs.receipts = err
	} else {
		defer cf.Close()
	}
	// Requests first: receipts are resolved against their IDs as they are decoded.
	var problems []Problem
	if rf != nil {
		if st, err := rf.Stat(); err != nil {
			errs.requests = err
		} else {
			// The merge (ID insertion, serial) runs while later chunks are decoded.
			size := st.Size()
			var chunks []*reqChunk
			var tasks []func()
			var stop atomic.Bool
			for _, sp := range spans(size) {
				c := &reqChunk{span: sp, done: make(chan struct{})}
				chunks = append(chunks, c)
				tasks = append(tasks, func() {
					defer close(c.done)
					if !stop.Load() {
						c.read(ctx, rf, size, reqPath, cls, &clk)
					}
				})
			}
			finished := make(chan struct{})
			go func() { parallel(tasks); close(finished) }()
			problems, errs.requests = mergeRequests(chunks, reqs, reqPath, estimateRows(rf, size), &clk)
			stop.Store(true)
			<-finished
		}
	}
	if cf != nil {
		if st, err := cf.Stat(); err != nil {
			errs.receipts = err
		} else {
			// As for the requests, the merge runs while later chunks are
			// decoded, and lets each chunk go once appended.
			size := st.Size()
			var chunks []*recChunk
			var tasks []func()
			var stop atomic.Bool
			for _, sp := range spans(size) {
				c := &recChunk{span: sp, done: make(chan struct{})}
				chunks = append(chunks, c)
				tasks = append(tasks, func() {
					defer close(c.done)
					if !stop.Load() {
						c.read(ctx, cf, size, recPath, reqs, wantXRID, &clk)
					}
				})
			}
			finished := make(chan struct{})
			go func() { parallel(tasks); close(finished) }()
			var more []Problem
			more, errs.receipts = mergeReceipts(chunks, recs, wantXRID, recPath, estimateRows(cf, size))
			stop.Store(true)
			<-finished
			problems = append(problems, more...)
		}
	}
	return problems, errs
}

// parallel runs the tasks on GOMAXPROCS goroutines, in order of submission.
func parallel(tasks []func()) {
	workers := min(runtime.GOMAXPROCS(0), len(tasks))
	if workers <= 1 {
		for _, t := range tasks {
			t()
		}
		return
	}
	ch := make(chan func())
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for t := range ch {
				t()
			}
		})
	}
	for _, t := range tasks {
		ch <- t
	}
	close(ch)
	wg.Wait()
}

func (c *reqChunk) read(ctx context.Context, f *os.File, size int64, name string, cls *Classifier, clk *clockChecks) {
	n := estimateRows(f, c.end-c.start)
	c.ends = make([]int, 0, n)
	c.line = make([]int32, 0, n)
	c.target = make([]uint16, 0, n)
	c.phase = make([]uint16, 0, n)
	c.flow = make([]uint16, 0, n)
	c.url = make([]uint32, 0, n)
	c.conn = make([]uint32, 0, n)
	c.sentNs = make([]int64, 0, n)
	c.endNs = make([]int64, 0, n)
	c.code = make([]uint16, 0, n)
	c.class = make([]Class, 0, n)
	sc := reqScan{wanted: cls.Headers()}
	rules := cls.HasRules()
	eachSpanLine(f, size, &c.span, name, func(line int, b []byte, complete bool) error {
		if len(b) == 0 {
			return nil
		}
		if line&0xffff == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if scanRequest(b, &sc) && !(sc.bodyEsc && needsBody(sc.code, rules)) {
			if len(sc.id) == 0 {
				return &LineError{File: name, Line: line, Err: errors.New("request without id")}
			}
			if err := requestTimesError(sc.sent, sc.latency); err != nil {
				return &LineError{File: name, Line: line, Err: err}
			}
			if err := requestCodeError(sc.code); err != nil {
				return &LineError{File: name, Line: line, Err: err}
			}
			m := Marks{Code: int(sc.code)}
			if needsBody(sc.code, rules) {
				m = sc.marks()
			}
			var cl Class
			if rules {
				cl = cls.Classify(string(sc.target), m, sc.header)
			} else {
				cl = m.Classify()
			}
			row := c.add(line, sc.id, internBytes(&c.targetIx, &c.targets, sc.target), internBytes(&c.phasIx, &c.phases, sc.phase),
				internBytes(&c.flowIx, &c.flows, sc.flow), internBytes32(&c.urlIx, &c.urls, sc.url), internBytes32(&c.connIx, &c.conns, sc.conn), sc.sent, sc.sent+sc.latency, int(sc.code), cl)
			c.check(line, row, sc.notSent, clk)
			if sc.hasRate != [numRateHeaders]bool{} {
				if h, ok := ParseRateHeaders(sc.rateHeaderByName); ok {
					h.Request = int32(row)
					c.rate = append(c.rate, h)
				}
			}
			return nil
		}
		var r Request
		if err := json.Unmarshal(b, &r); err != nil {
			return &LineError{File: name, Line: line, Err: err, Truncated: !complete}
		}
		if r.ID == "" {
			return &LineError{File: name, Line: line, Err: errors.New("request without id")}
		}
		if err := requestTimesError(r.SentNs, r.LatencyNs); err != nil {
			return &LineError{File: name, Line: line, Err: err}
		}
		if err := requestCodeError(int64(r.Code)); err != nil {
			return &LineError{File: name, Line: line, Err: err}
		}
		row := c.add(line, []byte(r.ID), intern(&c.targetIx, &c.targets, r.Target), intern(&c.phasIx, &c.phases, r.Phase),
			intern(&c.flowIx, &c.flows, r.Flow), intern32(&c.urlIx, &c.urls, r.URL), intern32(&c.connIx, &c.conns, r.Conn), r.SentNs, r.EndNs(), r.Code, cls.ClassifyRequest(&r))
		c.check(line, row, r.NotSent, clk)
		if h, ok := ParseRateHeaders(r.header); ok {
			h.Request = int32(row)
			c.rate = append(c.rate, h)
		}
		return nil
	})
}

func (c *reqChunk) add(line int, id []byte, target, phase, flow uint16, url, conn uint32, sent, end int64, code int, cl Class) int {
	c.arena = append(c.arena, id...)
	c.ends = append(c.ends, len(c.arena))
	c.line = append(c.line, int32(line))
	c.target = append(c.target, target)
	c.phase = append(c.phase, phase)
	c.flow = append(c.flow, flow)
	c.url = append(c.url, url)
	c.conn = append(c.conn, conn)
	c.sentNs = append(c.sentNs, sent)
	c.endNs = append(c.endNs, end)
	c.code = append(c.code, uint16(min(max(code, 0), 65535)))
	c.class = append(c.class, cl)
	return len(c.ends) - 1
}

// check records row (on line) as not sent, and as sent outside the attack's span.
func (c *reqChunk) check(line, row int, notSent bool, clk *clockChecks) {
	if notSent {
		c.notSent = append(c.notSent, int32(row))
	}
	if sent := c.sentNs[row]; clk.outside(sent) {
		c.outside.note(line, func() string {
			return fmt.Sprintf("id %q: sent_ns %d lies outside the attack's start_ns..end_ns %d..%d (%s, tolerance %v): contradictory evidence",
				c.arena[c.idStart(row):c.ends[row]], sent, clk.startNs, clk.endNs, AttackFile, time.Duration(clk.tolNs))
		})
	}
}

// idStart is where row's ID begins in the arena.
func (c *reqChunk) idStart(row int) int {
	if row == 0 {
		return 0
	}
	return c.ends[row-1]
}

// internBytes32 is intern32 for a name given as bytes.
func internBytes32(idx *map[string]uint32, names *[]string, name []byte) uint32 {
	if i, ok := (*idx)[string(name)]; ok {
		return i
	}
	return intern32(idx, names, string(name))
}

// relocate turns a span-relative *LineError into a file-relative one.
func relocate(err error, offset int) error {
	var le *LineError
	if errors.As(err, &le) {
		cp := *le
		cp.Line += offset
		return &cp
	}
	return err
}

// mergeRequests appends the chunks' requests to reqs in file order, up to the
// first error, and reports repeated IDs (the later line is skipped), the
// first request sent outside the attack's span and the first recorded as
// not sent, unless attack.json reports as many not sent (clk).
func mergeRequests(chunks []*reqChunk, reqs *Requests, name string, estimate int, clk *clockChecks) (problems []Problem, _ error) {
	reqs.grow(reqs.Len() + estimate)
	var outside, notSent lineFinding
	defer func() {
		if p, ok := outside.problem(RequestsFile, name); ok {
			problems = append(problems, p)
		}
		if notSent.n != clk.attackNotSent {
			if p, ok := notSent.problem(RequestsFile, name); ok {
				problems = append(problems, p)
			}
		}
	}()
	lines := make([]int32, 0, estimate) // line of each request kept
	offset := 0
	for _, c := range chunks {
		<-c.done
		tmap := make([]uint16, len(c.targets))
		for i, t := range c.targets {
			tmap[i] = intern(&reqs.targetIdx, &reqs.Targets, t)
		}
		pmap := make([]uint16, len(c.phases))
		for i, p := range c.phases {
			pmap[i] = intern(&reqs.phaseIdx, &reqs.Phases, p)
		}
		fmap := make([]uint16, len(c.flows))
		for i, f := range c.flows {
			fmap[i] = intern(&reqs.flowIdx, &reqs.Flows, f)
		}
		umap := make([]uint32, len(c.urls))
		for i, u := range c.urls {
			umap[i] = intern32(&reqs.urlIdx, &reqs.URLs, u)
		}
		cmap := make([]uint32, len(c.conns))
		for i, cn := range c.conns {
			cmap[i] = reqs.connIndex(cn)
		}
		start, ri, ni := 0, 0, 0
		outside.merge(c.outside, offset)
		for i, e := range c.ends {
			id := c.arena[start:e]
			start = e
			for ; ni < len(c.notSent) && int(c.notSent[ni]) < i; ni++ {
			}
			unsent := ni < len(c.notSent) && int(c.notSent[ni]) == i
			if prev, dup := reqs.IDs.insert(id); dup {
				// The attack records each ID once: a second line is damage.
				problems = append(problems, Problem{File: RequestsFile, Msg: fmt.Sprintf("%s:%d: id %q recorded again (first on line %d)",
					name, offset+int(c.line[i]), id, lines[prev])})
				continue
			}
			for ; ri < len(c.rate) && int(c.rate[ri].Request) < i; ri++ {
			}
			if ri < len(c.rate) && int(c.rate[ri].Request) == i {
				h := c.rate[ri]
				h.Request = int32(reqs.Len())
				reqs.Rate = append(reqs.Rate, h)
			}
			if unsent {
				notSent.note(offset+int(c.line[i]), func() string {
					return fmt.Sprintf("id %q was not sent (not_sent): the attack is incomplete", id)
				})
				reqs.NotSent = append(reqs.NotSent, int32(reqs.Len()))
			}
			lines = append(lines, int32(offset+int(c.line[i])))
			reqs.Target = append(reqs.Target, tmap[c.target[i]])
			reqs.appendIndexes(pmap[c.phase[i]], fmap[c.flow[i]], umap[c.url[i]], cmap[c.conn[i]])
			reqs.SentNs.Add(c.sentNs[i])
			reqs.EndNs.Add(c.endNs[i])
			reqs.Code = append(reqs.Code, c.code[i])
			reqs.Class = append(reqs.Class, c.class[i])
		}
		err := c.err
		*c = reqChunk{span: c.span} // let the collector have it
		if err != nil {
			return problems, relocate(err, offset)
		}
		offset += c.lines
	}
	return problems, nil
}

func (c *recChunk) read(ctx context.Context, f *os.File, size int64, name string, reqs *Requests, wantXRID bool, clk *clockChecks) {
	n := estimateRows(f, c.end-c.start)
	c.recv = make([]int64, 0, n)
	c.request = make([]int32, 0, n)
	intern(&c.endpointIx, &c.endpoints, "") // index 0: no endpoint named
	var sc recScan
	eachSpanLine(f, size, &c.span, name, func(line int, b []byte, complete bool) error {
		if len(b) == 0 {
			return nil
		}
		if line&0xffff == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		sc.wantHeader = wantXRID
		if scanReceipt(b, &sc) {
			c.add(reqs, sc.recv, sc.id, sc.hasID)
			c.check(line, reqs, clk)
			c.addColumns(sc.attempt, internBytes(&c.endpointIx, &c.endpoints, sc.endpoint))
			if wantXRID {
				c.xrid = append(c.xrid, string(sc.xrid))
			}
			return nil
		}
		var r Receipt
		if err := json.Unmarshal(b, &r); err != nil {
			return &LineError{File: name, Line: line, Err: err, Truncated: !complete}
		}
		var id []byte
		if r.ID != nil {
			id = []byte(*r.ID)
		}
		c.add(reqs, r.RecvNs, id, r.ID != nil)
		c.check(line, reqs, clk)
		c.addColumns(attemptCount(r.Headers), intern(&c.endpointIx, &c.endpoints, r.Endpoint))
		if wantXRID {
			c.xrid = append(c.xrid, xRequestID(r.Headers))
		}
		return nil
	})
}

// check records the receipt just added (on line) when it precedes its
// request's sent_ns by more than the clock tolerance, or its request was
// recorded as not sent: a receipt is the backend's proof that the
// request arrived.
func (c *recChunk) check(line int, reqs *Requests, clk *clockChecks) {
	k := c.request[len(c.request)-1]
	if k < 0 {
		return
	}
	recv, sent := c.recv[len(c.recv)-1], reqs.SentNs.At(int(k))
	if recv < sent-clk.tolNs {
		c.early.note(line, func() string {
			return fmt.Sprintf("receipt of id %q: recv_ns %d is %v before its request was sent (sent_ns %d in %s; tolerance %v): contradictory evidence",
				reqs.IDs.ID(int(k)), recv, time.Duration(sent-recv), sent, RequestsFile, time.Duration(clk.tolNs))
		})
	}
	if reqs.IsNotSent(int(k)) {
		c.unsent.note(line, func() string {
			return fmt.Sprintf("receipt of id %q, which %s records as not sent (not_sent): contradictory evidence", reqs.IDs.ID(int(k)), RequestsFile)
		})
	}
}

// addColumns records a receipt's attempt count and endpoint index (after
// add); the columns are allocated at the first receipt with either (any).
func (c *recChunk) addColumns(attempt uint16, endpoint uint16) {
	if !c.any && attempt == 0 && endpoint == 0 {
		return
	}
	if !c.any {
		c.any = true
		c.attempt = make([]uint16, len(c.recv)-1, cap(c.recv))
		c.endpoint = make([]uint16, len(c.recv)-1, cap(c.recv))
	}
	c.attempt = append(c.attempt, attempt)
	c.endpoint = append(c.endpoint, endpoint)
}

// columnsOf returns receipt i's attempt count and endpoint name.
func (c *recChunk) columnsOf(i int) (uint16, string) {
	if !c.any {
		return 0, ""
	}
	return c.attempt[i], c.endpoints[c.endpoint[i]]
}

func (c *recChunk) add(reqs *Requests, recv int64, id []byte, hasID bool) {
	c.recv = append(c.recv, recv)
	if !hasID {
		c.request = append(c.request, NoID)
		return
	}
	k, ok := c.next, reqs.IDs.is(c.next, id)
	if !ok {
		k, ok = reqs.IDs.lookup(id)
	}
	if !ok {
		c.request = append(c.request, Phantom)
		c.phantoms = append(c.phantoms, string(id))
		return
	}
	c.request = append(c.request, int32(k))
	c.next = k + 1
}

// mergeReceipts appends the chunks' receipts to recs in file order as
// each is decoded (done), up to the first error (estimate: the receipts
// expected, to size the columns), and returns the first receipt (of file
// name) that precedes its request and the first of a request not sent.
func mergeReceipts(chunks []*recChunk, recs *Receipts, wantXRID bool, name string, estimate int) ([]Problem, error) {
	var err error
	var early, unsent lineFinding
	recs.RecvNs.Grow(estimate)
	recs.Request = growTo(recs.Request, recs.Len()+estimate)
	if wantXRID && recs.XRequestID == nil {
		recs.XRequestID = make([]string, recs.Len(), recs.Len()+estimate)
	}
	offset := 0
	for _, c := range chunks {
		<-c.done
		early.merge(c.early, offset)
		unsent.merge(c.unsent, offset)
		n := recs.Len()
		for _, t := range c.recv {
			recs.RecvNs.Add(t)
		}
		recs.Request = append(recs.Request, c.request...)
		recs.PhantomIDs = append(recs.PhantomIDs, c.phantoms...)
		if wantXRID {
			recs.XRequestID = append(recs.XRequestID, c.xrid...)
		}
		// The columns exist from the first receipt with an attempt count
		// or endpoint on (Receipts.addColumns): a chunk without either
		// adds nothing before that, zeros after.
		if c.any || recs.Attempt != nil || recs.Endpoint != nil {
			for i := range c.recv {
				attempt, endpoint := c.columnsOf(i)
				recs.addColumns(n+i+1, attempt, endpoint)
			}
		}
		cerr := c.err
		*c = recChunk{span: c.span} // let the collector have it
		if cerr != nil {
			err = relocate(cerr, offset)
			break
		}
		offset += c.lines
	}
	var problems []Problem
	for _, f := range []*lineFinding{&early, &unsent} {
		if p, ok := f.problem(ReceiptsFile, name); ok {
			problems = append(problems, p)
		}
	}
	return problems, err
}
