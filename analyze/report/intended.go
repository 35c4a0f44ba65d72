package report

// IntendedWindow is one window of an intended limit per window
// (evidence.IntendedLimit.Per): [FromNs, ToNs), unix ns, aligned to the
// unix epoch. AdmittedMin counts the admissions surely in it (each
// request's admission lies somewhere between its send and its response or
// receipt, and for these that whole interval lies in the window);
// AdmittedMax adds those that may be in it: an admission whose interval
// crosses the window's edge, and a request without response that may
// have been admitted. Min and Max are AdmittedMin and AdmittedMax minus
// the intended limit: the window's over-admission (negative: room left).
type IntendedWindow struct {
	FromNs      int64 `json:"from_ns"`
	ToNs        int64 `json:"to_ns"`
	AdmittedMin int   `json:"admitted_min"`
	AdmittedMax int   `json:"admitted_max"`
	Min         int   `json:"min"`
	Max         int   `json:"max"`
}
