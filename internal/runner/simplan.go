package runner

import (
	"fmt"

	"github.com/rlbench/rlbench/evidence"
	"github.com/rlbench/rlbench/internal/lab/proxy"
)

// Arrival processes of SimulatePlan.Arrivals.
const (
	// ArrivalsUniform spaces a paced flow's requests evenly at its rate, as
	// `rlbench attack` paces them open-loop (vegeta's constant pacer).
	ArrivalsUniform = "uniform"
	// ArrivalsPoisson draws exponential gaps of mean 1/rate (a Poisson
	// process of the flow's rate), seeded by `rlbench simulate --seed`.
	ArrivalsPoisson = "poisson"
)

// SimulatePlan is what `rlbench simulate` needs of a scenario beyond what
// the lab runs; `rlbench run` ignores it. Without it a simulation runs the
// scenario's own limiters (limiters:, else the lab's: one local bucket set
// per proxy, the RLS's fixed windows) on the attack's flows, their splits
// over the targets and uniform arrivals.
type SimulatePlan struct {
	// Arrivals is how each paced flow's requests arrive on the virtual
	// clock: uniform (default) or poisson. A flow without a rate sends all
	// its requests at its start either way.
	Arrivals string `json:"arrivals,omitempty"`
	// Limiters replace the limiters the simulation runs (and declares in
	// its scenario): one the lab cannot build, such as a single token bucket
	// shared by every instance ({key: shared}). Names are unique.
	Limiters []evidence.Limiter `json:"limiters,omitempty"`
	// Row and Column place the scenario in the grid simulate prints after
	// the tables (admitted per second over the scenario's active time, first
	// send to last send): give both or neither.
	Row    string `json:"row,omitempty"`
	Column string `json:"column,omitempty"`
	// Latency is each request's virtual response time; 0 or absent means the
	// default, 1ms (sim.DefaultLatency).
	// The limiters decide a tenth of it after the send.
	Latency proxy.Duration `json:"latency,omitempty"`
}

// validate checks a scenario's simulate section; sp is its path.
func (s *SimulatePlan) validate(sp, where string) error {
	switch s.Arrivals {
	case "", ArrivalsUniform, ArrivalsPoisson:
	default:
		return at(sp+".arrivals", where, "simulate.arrivals must be %s or %s, not %q", ArrivalsUniform, ArrivalsPoisson, s.Arrivals)
	}
	if (s.Row == "") != (s.Column == "") {
		return at(sp, where, "simulate: give row and column together")
	}
	if s.Latency < 0 {
		return at(sp+".latency", where, "simulate.latency must not be negative (0 or absent: the default 1ms)")
	}
	return validateLimiters(s.Limiters, sp, where, "simulate.limiters")
}

// validateLimiters checks limiter declarations (evidence.Limiter.Validate)
// and that their names are unique; sp is the path of the section holding
// them, field their key as messages name it ("limiters").
func validateLimiters(ls []evidence.Limiter, sp, where, field string) error {
	names := map[string]bool{}
	for j := range ls {
		l := &ls[j]
		lp := fmt.Sprintf("%s.limiters[%d]", sp, j)
		if err := l.Validate(); err != nil {
			return at(lp, where, "%s[%d].%w", field, j, err)
		}
		if names[l.Name] {
			return at(lp+".name", where, "%s[%d].name: %q is used twice", field, j, l.Name)
		}
		names[l.Name] = true
	}
	return nil
}

// Count is the flow's number of request IDs: ids, or rate x duration.
func (f *FlowPlan) Count() int { return f.ids() }

// ScenarioDir is a scenario repeat's directory in a run directory,
// NN-<slug>/<repeat>, as `rlbench run` names it.
func ScenarioDir(index int, sc *ScenarioPlan, repeat int) string {
	return scenarioDir(index, sc, repeat)
}

// Slug is a plan name as the runner puts it in directory names and IDs.
func Slug(s string) string { return slug(s) }
