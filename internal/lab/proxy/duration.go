package proxy

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration written as a Go duration string ("1h", "20ms").
type Duration time.Duration

// UnmarshalJSON accepts a duration string (time.ParseDuration), the form
// Envoy's proto JSON gives a google.protobuf.Duration such as
// token_bucket.fill_interval.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"1h\" or \"20ms\": %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// String is time.Duration's String ("1h0m0s").
func (d Duration) String() string { return time.Duration(d).String() }
