//go:build !unix

package eventseriesprocessor

import "time"

// processCPU is not measured here: cpu-ns/record reads 0.
func processCPU() time.Duration { return 0 }
