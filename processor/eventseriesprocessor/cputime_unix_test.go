//go:build unix

package eventseriesprocessor

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used, all threads (the
// garbage collector's included).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
