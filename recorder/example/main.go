// Command example is a fake controller that reports the crashloop storm
// (20 pods restarting with kubelet's back-off) through the recorder to an
// OpenTelemetry collector, the way a controller author would wire it:
//
//	rec, err := recorder.New(ctx, recorder.Options{ReportingController: "example.com/my-controller"})
//	defer rec.Shutdown(ctx)
//	events := rec.GetEventRecorder("example.com/my-controller") // tools/events.EventRecorder
//	events.Eventf(pod, nil, corev1.EventTypeWarning, "BackOff", "Restart", "Back-off restarting %s", name)
//
// The endpoint comes from -endpoint or the OTEL_EXPORTER_OTLP_* variables.
// With -input it reports the occurrences of a file instead (JSON lines, the
// shape -print writes, with an optional action and related object). At the
// end it prints one JSON line: what it emitted and the recorder's counters.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	"github.com/k8sevents/otel-k8sevents/recorder"
)

type flags struct {
	endpoint, protocol, controller, instance string
	tokenFile, input                         string
	insecure, print                          bool
	fallbackKubeconfig                       string
	fallbackAfter, fallbackSettle            time.Duration
	speed, fallbackQPS                       float64
	count, queue                             int
	duration, shutdownTimeout                time.Duration
}

func parseFlags() flags {
	var f flags
	flag.StringVar(&f.endpoint, "endpoint", "", "collector OTLP endpoint host:port (default: OTEL_EXPORTER_OTLP_ENDPOINT)")
	flag.StringVar(&f.protocol, "protocol", "", "grpc or http/protobuf (default: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf)")
	flag.BoolVar(&f.insecure, "insecure", false, "plain-text connection to the collector")
	flag.StringVar(&f.tokenFile, "token-file", "", "ServiceAccount token sent as the bearer token, read before each request (default: "+recorder.DefaultTokenFile+"; "+recorder.NoToken+": none)")
	flag.StringVar(&f.controller, "controller", "example.com/crashloop-controller", "reporting controller")
	flag.StringVar(&f.instance, "instance", "", "reporting instance (default: host name)")
	flag.Float64Var(&f.speed, "speed", 1, "storm speed: 1 real time (2 hours), N times faster, 0 as fast as possible")
	flag.IntVar(&f.count, "count", 0, "emit at most this many events (0: the whole storm, 16,100)")
	flag.DurationVar(&f.duration, "duration", 10*time.Minute, "stop emitting after this long")
	flag.IntVar(&f.queue, "queue", 0, "recorder queue size (0: the default, 10,000)")
	flag.DurationVar(&f.shutdownTimeout, "shutdown-timeout", time.Minute, "how long Shutdown may retry to deliver what is queued")
	flag.BoolVar(&f.print, "print", false, "print the storm as JSON lines and exit")
	flag.StringVar(&f.input, "input", "", "report the occurrences of this JSON-lines file (the -print shape) instead of the crashloop storm")
	flag.StringVar(&f.fallbackKubeconfig, "fallback-kubeconfig", "", "kubeconfig of an API server to write to through client-go's tools/record once the collector has been unreachable for -fallback-after (default: no fallback)")
	flag.DurationVar(&f.fallbackAfter, "fallback-after", 30*time.Second, "how long the collector may be unreachable before the fallback takes over")
	flag.DurationVar(&f.fallbackSettle, "fallback-settle", time.Minute, "at most how long to wait after shutdown for client-go's fallback recorder to finish its writes")
	flag.Float64Var(&f.fallbackQPS, "fallback-qps", 0, "client-side rate limit of the fallback's API client, burst twice that (0: client-go's default, 5 QPS, burst 10)")
	flag.Parse()
	return f
}

// summary is the final JSON line.
type summary struct {
	Emitted         int            `json:"emitted"`
	Elapsed         string         `json:"elapsed"`
	StartGoroutines int            `json:"start_goroutines"`
	PeakGoroutines  int            `json:"peak_goroutines"`
	Stats           recorder.Stats `json:"stats"`
	ShutdownError   string         `json:"shutdown_error,omitempty"`
}

func main() {
	f := parseFlags()
	storm := crashloop()
	if f.input != "" {
		var err error
		if storm, err = readOccurrences(f.input); err != nil {
			fail(err)
		}
	}
	if f.count > 0 && f.count < len(storm) {
		storm = storm[:f.count]
	}
	if f.print {
		enc := json.NewEncoder(os.Stdout)
		for i := range storm {
			if err := enc.Encode(&storm[i]); err != nil {
				fail(err)
			}
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := recorder.Options{
		ReportingController: f.controller, ReportingInstance: f.instance,
		Endpoint: f.endpoint, Protocol: f.protocol, Insecure: f.insecure, TokenFile: f.tokenFile, QueueSize: f.queue,
		ErrorHandler: rateLimitedLog(),
	}
	var fb *fallback
	if f.fallbackKubeconfig != "" {
		var err error
		if fb, err = newFallback(f.fallbackKubeconfig, f.controller, f.fallbackQPS); err != nil {
			fail(err)
		}
		opts.Fallback, opts.FallbackAfter = fb.recorder, f.fallbackAfter
	}
	rec, err := recorder.New(ctx, opts)
	if err != nil {
		fail(err)
	}
	start, goroutines := time.Now(), runtime.NumGoroutine()
	emitted, peak := emit(ctx, rec.GetEventRecorder(f.controller), storm, f.speed, f.duration, rec)
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdownTimeout)
	defer cancel()
	s := summary{Emitted: emitted, StartGoroutines: goroutines, PeakGoroutines: peak}
	if err := rec.Shutdown(sctx); err != nil {
		s.ShutdownError = err.Error()
	}
	s.Elapsed, s.Stats = time.Since(start).Round(time.Millisecond).String(), rec.Stats()
	if fb != nil {
		fb.settle(f.fallbackSettle)
	}
	if err := json.NewEncoder(os.Stdout).Encode(&s); err != nil {
		fail(err)
	}
}

// emit is the fake controller loop: each occurrence at its time (divided
// by speed), through the recorder. It reports how many it emitted and the
// most goroutines seen alive (the recorder starts none per call).
func emit(ctx context.Context, events events.EventRecorder, storm []occurrence, speed float64, bound time.Duration, rec *recorder.Recorder) (int, int) {
	start, peak := time.Now(), runtime.NumGoroutine()
	deadline := start.Add(bound)
	progress := time.NewTicker(time.Second)
	defer progress.Stop()
	for i := range storm {
		o := &storm[i]
		if speed > 0 {
			due := start.Add(time.Duration(float64(o.Time.Sub(storm[0].Time)) / speed))
			if due.After(deadline) || wait(ctx, due) != nil {
				return i, peak
			}
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return i, peak
		}
		// events.k8s.io requires an action; the storm's kubelet has none, so the reason is it.
		action := o.Action
		if action == "" {
			action = o.Reason
		}
		var related k8sruntime.Object // a nil *ObjectReference would not be a nil interface
		if o.Related != nil {
			related = o.Related.reference()
		}
		events.Eventf(o.Regarding.reference(), related, o.Type, o.Reason, action, "%s", o.Note)
		peak = max(peak, runtime.NumGoroutine())
		select {
		case <-progress.C:
			s := rec.Stats()
			fmt.Fprintf(os.Stderr, "emitted %d/%d sent %d pending %d dropped %d export failures %d\n", i+1, len(storm), s.Sent, s.Pending, s.Dropped, s.Failures)
		default:
		}
	}
	return len(storm), peak
}

// readOccurrences reads a JSON-lines file of occurrences.
func readOccurrences(path string) ([]occurrence, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var occs []occurrence
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var o occurrence
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, len(occs)+1, err)
		}
		occs = append(occs, o)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return occs, nil
}

func wait(ctx context.Context, at time.Time) error {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// rateLimitedLog logs export failures at most once every 5 seconds.
func rateLimitedLog() func(error) {
	var last time.Time
	return func(err error) {
		if time.Since(last) >= 5*time.Second {
			last = time.Now()
			fmt.Fprintln(os.Stderr, err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "example:", err)
	os.Exit(1)
}
