package sim

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
)

// Result is what one run of a schedule found.
type Result struct {
	Violations []Violation
	Report     string // the run's story, for a failure
	Written    int    // Event objects the collectors wrote
	Writes     int    // their accepted writes
}

// Run runs a schedule in a synctest bubble of its own (virtual time from
// 2000-01-01) and checks the result. An error is a schedule the world
// could not carry out (an unknown process, a component that would not
// start), not a broken property.
func Run(t *testing.T, s Schedule) (Result, error) {
	var res Result
	var runErr error
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		w := newWorld(t, s.Shape, s.Replicas, s.Sink)
		for _, sr := range s.Series {
			w.emitters.add(sr)
		}
		w.startAll(ctx)
		w.settle()
		for i, st := range s.Steps {
			w.logf("step %d: %s", i, st)
			if err := st.apply(ctx, w); err != nil {
				runErr = fmt.Errorf("step %d (%s): %w", i, st, err)
				break
			}
			w.settle()
		}
		w.finish(ctx)
		res.Violations = w.check(w.controllers()...)
		res.Written, res.Writes = w.written(w.controllers()...)
		res.Report = w.report(res.Violations)
	})
	return res, runErr
}

// controllers are the reporting controllers the shape's collectors write as.
func (w *World) controllers() []string {
	if w.shape == ShapeMirror {
		return []string{mirrorCtrl}
	}
	return []string{ingestCtrl}
}
