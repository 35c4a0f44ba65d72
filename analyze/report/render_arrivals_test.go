package report

import (
	"strings"
	"testing"
)

// TestSenderRowsWithoutReceipts: a sender whose every request the limiter
// rejected has no receipts but its landing at the limiter: its row is
// kept, with the width; a sender with neither is left out as before.
func TestSenderRowsWithoutReceipts(t *testing.T) {
	rep := &Report{Scenarios: []ScenarioReport{{Name: "s", Arrivals: &Arrivals{Senders: []SenderArrivals{
		{Shard: 0, Requests: 1000, SendWidthNs: 125_000, AtLimiter: 1000, LimiterWidthNs: 5_000_000 - 1},
		{Shard: 1, Requests: 1000, SendWidthNs: 90_000},
	}}}}}
	var got []string
	for _, row := range arrivalRows(rep) {
		got = append(got, row[1])
	}
	joined := strings.Join(got, "\n")
	if !strings.Contains(joined, "sender 0: sent 125µs, at the limiter 5ms (1000), receipts 0s") || strings.Contains(joined, "sender 1") {
		t.Errorf("rows %q", got)
	}
}
