package evidence

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rlbench/rlbench/evidence/nginxrec"
)

// CountError says which count fields of an evidence file are negative or
// contradict each other (AttackSummary.Sent below its NotSent, class
// counts summing past Sent, Sent past the IDs planned ...). Such a file
// is incomplete evidence: whatever its other fields say is not trusted,
// and the scenario is NOT_RUN naming the fields (Load records it as a
// Problem of the file). Fields are JSON paths ("phases[0].sent = -1:
// negative"), in the file's order.
type CountError struct {
	Fields []string
}

// Error returns "bad counts: <field>; <field>...".
func (e *CountError) Error() string {
	return "bad counts (incomplete evidence): " + strings.Join(e.Fields, "; ")
}

// counts collects the count problems of one file.
type counts struct{ bad []string }

// nonNeg records path when v is negative.
func (c *counts) nonNeg(path string, v int64) {
	if v < 0 {
		c.bad = append(c.bad, fmt.Sprintf("%s = %d: negative", path, v))
	}
}

// atMost records a contradiction when a (at path pa) exceeds b (at pb);
// why says which rule it breaks.
func (c *counts) atMost(pa string, a int64, pb string, b int64, why string) {
	if a > b {
		c.bad = append(c.bad, fmt.Sprintf("%s = %d exceeds %s = %d (%s)", pa, a, pb, b, why))
	}
}

func (c *counts) err() error {
	if len(c.bad) == 0 {
		return nil
	}
	return &CountError{Fields: c.bad}
}

// codeSum checks codes_by_target's counts (at path) and returns their sum,
// saturating at the int64 range.
func (c *counts) codeSum(path string, m map[string]map[string]int) int64 {
	var sum int64
	for _, t := range slices.Sorted(maps.Keys(m)) {
		for _, code := range slices.Sorted(maps.Keys(m[t])) {
			n := int64(m[t][code])
			c.nonNeg(fmt.Sprintf("%s[%q][%q]", path, t, code), n)
			if n > 0 {
				sum = satAdd(sum, n)
			}
		}
	}
	return sum
}

func satAdd(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return 1<<63 - 1
}

// config checks an attack configuration's counts at path.
func (c *counts) config(path string, cf *AttackConfig) {
	c.nonNeg(path+".ids", int64(cf.IDs))
	c.nonNeg(path+".concurrency", int64(cf.Concurrency))
	c.nonNeg(path+".workers", int64(cf.Workers))
	c.nonNeg(path+".body_bytes", int64(cf.BodyBytes))
	c.nonNeg(path+".body_prefix", int64(cf.BodyPrefix))
	c.nonNeg(path+".max_connections", int64(cf.MaxConnections))
	for i, t := range cf.Targets {
		c.nonNeg(fmt.Sprintf("%s.targets[%d].ids", path, i), int64(t.IDs))
	}
}

// sent checks the counts of one attack or flow at path: sent, not_sent,
// recorded and codes_by_target non-negative; not_sent and recorded at
// most sent (every attempted ID has one line, a write failure leaves it
// unrecorded); codes_by_target sums to at most sent (the attack counts
// one code per attempted ID, attack/engine.go); sent at most the IDs
// planned (config.ids, when the file records it).
func (c *counts) sent(path string, sent, notSent, recorded int, codes map[string]map[string]int, cf *AttackConfig) {
	c.nonNeg(path+".sent", int64(sent))
	c.nonNeg(path+".not_sent", int64(notSent))
	c.nonNeg(path+".recorded", int64(recorded))
	c.atMost(path+".not_sent", int64(notSent), path+".sent", int64(sent), "requests not sent are among those attempted")
	c.atMost(path+".recorded", int64(recorded), path+".sent", int64(sent), "one line per attempted ID")
	if sum := c.codeSum(path+".codes_by_target", codes); sum > int64(max(sent, 0)) {
		c.bad = append(c.bad, fmt.Sprintf("%s.codes_by_target sums to %d, more than %s.sent = %d", path, sum, path, sent))
	}
	if cf.IDs > 0 {
		c.atMost(path+".sent", int64(sent), path+".config.ids", int64(cf.IDs), "IDs attempted are among those planned")
	}
}

// checkCounts checks attack.json's count fields (see CountError): each
// phase (AttackSummary) and flow (AttackFlow) as counts.sent says, the
// flows' sent summing to at most their phase's, the shard's index in
// 0..count-1 and ids at most total_ids, and the phases' sent and recorded
// summing to at most the file's (Attack.Add sums them).
func (a *Attack) checkCounts() error {
	var c counts
	c.nonNeg("sent", int64(a.Sent))
	c.nonNeg("recorded", int64(a.Recorded))
	var sent, recorded int64
	for i := range a.Phases {
		p := &a.Phases[i]
		path := fmt.Sprintf("phases[%d]", i)
		c.config(path+".config", &p.Config)
		c.sent(path, p.Sent, p.NotSent, p.Recorded, p.CodesByTarget, &p.Config)
		c.nonNeg(path+".resent", int64(p.Resent))
		c.nonNeg(path+".latency_ns.n", int64(p.LatencyNs.N))
		var flowSent int64
		for j := range p.Flows {
			f := &p.Flows[j]
			fp := fmt.Sprintf("%s.flows[%d]", path, j)
			c.config(fp+".config", &f.Config)
			c.sent(fp, f.Sent, f.NotSent, f.Recorded, f.CodesByTarget, &f.Config)
			if f.Sent > 0 {
				flowSent = satAdd(flowSent, int64(f.Sent))
			}
		}
		if len(p.Flows) > 0 && flowSent > int64(max(p.Sent, 0)) {
			c.bad = append(c.bad, fmt.Sprintf("%s.flows[*].sent sums to %d, more than %s.sent = %d", path, flowSent, path, p.Sent))
		}
		if sh := p.Shard; sh != nil {
			c.nonNeg(path+".shard.ids", int64(sh.IDs))
			c.nonNeg(path+".shard.total_ids", int64(sh.TotalIDs))
			c.nonNeg(path+".shard.index", int64(sh.Index))
			if sh.Count < 1 {
				c.bad = append(c.bad, fmt.Sprintf("%s.shard.count = %d: not a number of shards", path, sh.Count))
			}
			c.atMost(path+".shard.index", int64(sh.Index), path+".shard.count", int64(sh.Count)-1, "the index is 0-based")
			c.atMost(path+".shard.ids", int64(sh.IDs), path+".shard.total_ids", int64(sh.TotalIDs), "a shard sends part of the IDs")
			for j, f := range sh.Flows {
				fp := fmt.Sprintf("%s.shard.flows[%d]", path, j)
				c.nonNeg(fp+".ids", int64(f.IDs))
				c.nonNeg(fp+".total_ids", int64(f.TotalIDs))
				c.atMost(fp+".ids", int64(f.IDs), fp+".total_ids", int64(f.TotalIDs), "a shard sends part of the IDs")
			}
		}
		if p.Sent > 0 {
			sent = satAdd(sent, int64(p.Sent))
		}
		if p.Recorded > 0 {
			recorded = satAdd(recorded, int64(p.Recorded))
		}
	}
	if a.Sent >= 0 && sent > int64(a.Sent) {
		c.bad = append(c.bad, fmt.Sprintf("phases[*].sent sums to %d, more than sent = %d", sent, a.Sent))
	}
	if a.Recorded >= 0 && recorded > int64(a.Recorded) {
		c.bad = append(c.bad, fmt.Sprintf("phases[*].recorded sums to %d, more than recorded = %d", recorded, a.Recorded))
	}
	return c.err()
}

// checkCounts checks merge.json's count fields (see CountError): count,
// total_ids, receipt counts and each shard's ids and requests
// non-negative; receipts_identical at most receipts_read.
func (m *MergeRecord) checkCounts() error {
	var c counts
	c.nonNeg("count", int64(m.Count))
	c.nonNeg("total_ids", int64(m.TotalIDs))
	c.nonNeg("receipts_read", int64(m.ReceiptsRead))
	c.nonNeg("receipts_identical", int64(m.ReceiptsIdentical))
	c.atMost("receipts_identical", int64(m.ReceiptsIdentical), "receipts_read", int64(m.ReceiptsRead), "identical receipts are among those read")
	for i, s := range m.Shards {
		path := fmt.Sprintf("shards[%d]", i)
		c.nonNeg(path+".index", int64(s.Index))
		c.nonNeg(path+".ids", int64(s.IDs))
		c.nonNeg(path+".requests", int64(s.Requests))
		for j, o := range s.Offsets {
			c.nonNeg(fmt.Sprintf("%s.offsets[%d].pairs", path, j), int64(o.Pairs))
		}
	}
	return c.err()
}

// checkStubStatus checks an nginx stub_status snapshot's counts (see
// CountError): all non-negative, handled at most accepts (nginx counts a
// connection accepted before it handles it, ngx_http_stub_status_module).
func checkStubStatus(st *nginxrec.StubStatus) error {
	var c counts
	for _, f := range []struct {
		name string
		v    int64
	}{{"active", st.Active}, {"accepts", st.Accepts}, {"handled", st.Handled}, {"requests", st.Requests},
		{"reading", st.Reading}, {"writing", st.Writing}, {"waiting", st.Waiting}} {
		c.nonNeg(f.name, f.v)
	}
	c.atMost("handled", st.Handled, "accepts", st.Accepts, "a connection is accepted before it is handled")
	return c.err()
}
