package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rlbench/rlbench/attack"
	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/senders"
)

// idPrefix is the prefix of an attack step's generated IDs: unique per
// run, scenario, repeat and step.
func (r *scenarioRun) idPrefix(st Step) string {
	return fmt.Sprintf("%s-s%dr%d-%s", r.runID, r.index+1, r.repeat, slug(st.Name))
}

// senderArgs are the `rlbench attack` arguments of an attack step with
// senders: the scenario's targets and the step's single flow (flows with
// senders are refused when the plan is loaded).
func (r *scenarioRun) senderArgs(st Step) []string {
	ap := st.Attack
	var args []string
	for _, t := range r.targets {
		args = append(args, "--target="+t.Name+"="+t.URL)
	}
	args = append(args, "--ids="+strconv.Itoa(ap.IDs), "--id-prefix="+r.idPrefix(st))
	if ap.Split != "" {
		args = append(args, "--split="+ap.Split)
	}
	if ap.Seed != 0 {
		args = append(args, "--seed="+strconv.FormatInt(ap.Seed, 10))
	}
	if ap.Concurrency > 0 {
		args = append(args, "--concurrency="+strconv.Itoa(ap.Concurrency))
	}
	if rt := vegeta.Rate(ap.Rate); rt != (vegeta.Rate{}) {
		args = append(args, "--rate="+attack.FormatRate(rt))
	}
	if ap.Method != "" {
		args = append(args, "--method="+ap.Method)
	}
	if ap.Path != "" {
		args = append(args, "--path="+ap.Path)
	}
	names := make([]string, 0, len(ap.Headers))
	for k := range ap.Headers {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		args = append(args, "--header="+k+": "+ap.Headers[k])
	}
	if ap.Body != "" {
		args = append(args, "--body="+ap.Body)
	}
	if ap.Timeout > 0 {
		args = append(args, "--timeout="+time.Duration(ap.Timeout).String())
	}
	if ap.NoKeepAlive {
		args = append(args, "--no-keepalive")
	}
	if ap.Pipeline > 0 {
		args = append(args, "--pipeline="+strconv.Itoa(ap.Pipeline))
	}
	for _, h := range r.captureHeaders {
		args = append(args, "--capture-header="+h)
	}
	return args
}

// attackSenders runs an attack step with senders (AttackPlan.Senders) as
// that many sender processes (internal/senders), each a shard of the
// step's attack with its own warm connections, all released at one start
// instant: at it, onStart arms the step's timed faults. Their requests
// are appended to requests.jsonl sender by sender, in shard order, each
// line with the step's name as its phase; their summaries are returned in
// the same order, one attack.json phase per sender (with its shard), which
// is how analyze tells each sender's requests (report.SenderArrivals). A
// sender that failed is an error naming it (the attack is then
// incomplete: NOT_RUN); the others' requests are kept.
func (r *scenarioRun) attackSenders(ctx context.Context, st Step, w *evidence.Writer, onStart func(time.Time)) ([]*evidence.AttackSummary, error) {
	ap := st.Attack
	if r.exe == "" {
		return nil, errors.New("attack.senders: no rlbench executable to run the senders (runner.Options.Exe)")
	}
	dir, err := os.MkdirTemp("", "rlbench-senders-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	startAt := time.Now().Add(senders.DefaultLead)
	armed := time.AfterFunc(time.Until(startAt), func() { onStart(startAt) })
	fmt.Fprintf(r.progress, "%s: %d senders, start at %s\n", attackLabel(st), ap.Senders, startAt.UTC().Format(time.RFC3339Nano))
	res, err := senders.Run(ctx, senders.Options{Exe: r.exe, Args: r.senderArgs(st), N: ap.Senders, Out: dir, StartAt: startAt})
	if err != nil {
		armed.Stop()
		return nil, err
	}
	var sums []*evidence.AttackSummary
	var problems []string
	for _, s := range res.Senders {
		if s.Err != nil {
			problems = append(problems, s.Err.Error())
		}
		if s.Summary == nil {
			continue
		}
		s.Summary.Config.Name = st.Name
		sums = append(sums, s.Summary)
		err := evidence.ReadFile(evidence.Dir(s.Dir).Requests(), func(_ int, q *evidence.Request) error {
			q.Phase = st.Name
			return w.Write(q)
		})
		if err != nil {
			problems = append(problems, fmt.Sprintf("sender %d/%d: %s: %v", s.Index, ap.Senders, evidence.RequestsFile, err))
		}
	}
	if len(problems) > 0 {
		return sums, fmt.Errorf("%d of %d senders failed: %s", len(res.Failed()), ap.Senders, strings.Join(problems, "; "))
	}
	return sums, nil
}
