// Package collectorproc runs the project's collector distribution
// (bin/otelcol-k8sevents, built by make otelcol) as a child process, for the
// end-to-end tests and make run.
package collectorproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/harness/childproc"
)

// BinaryEnv names the environment variable that points at a collector binary,
// instead of <repository root>/bin/otelcol-k8sevents.
const BinaryEnv = "OTELCOL_BIN"

// Options describe one collector process.
type Options struct {
	Binary string // default: FindBinary
	Config string // the collector configuration, YAML
	// Overlays are more YAML documents given as further --config files: the
	// collector merges them over Config (maps merge, lists are replaced).
	Overlays []string
	Dir      string   // where config.yaml and collector.log are written
	Env      []string // added to the environment
	// HealthURL, when set, is polled until it answers 200 (the health_check
	// extension's endpoint), for at most StartTimeout (default 60s).
	HealthURL    string
	StartTimeout time.Duration
}

// Collector is a running collector process.
type Collector struct {
	proc *childproc.Process
	http *http.Client
}

// FindBinary returns $OTELCOL_BIN, or bin/otelcol-k8sevents next to the
// nearest go.mod above the working directory.
func FindBinary() (string, error) {
	if b := os.Getenv(BinaryEnv); b != "" {
		return b, statFile(b)
	}
	root, err := childproc.ModuleRoot()
	if err != nil {
		return "", fmt.Errorf("find collector binary: %w", err)
	}
	b := filepath.Join(root, "bin", "otelcol-k8sevents")
	return b, statFile(b)
}

func statFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("collector binary %s (make otelcol builds it): %w", path, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("collector binary %s is a directory", path)
	}
	return nil
}

// Start writes the configuration and starts the collector with it.
func Start(ctx context.Context, opts Options) (*Collector, error) {
	if opts.Binary == "" {
		b, err := FindBinary()
		if err != nil {
			return nil, err
		}
		opts.Binary = b
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("collector dir: %w", err)
	}
	var args []string
	for i, cfg := range append([]string{opts.Config}, opts.Overlays...) {
		path := filepath.Join(opts.Dir, fmt.Sprintf("config-%d.yaml", i))
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			return nil, fmt.Errorf("write collector config: %w", err)
		}
		args = append(args, "--config", path)
	}
	proc, err := childproc.Start(opts.Binary, args, opts.Env, filepath.Join(opts.Dir, "collector.log"))
	if err != nil {
		return nil, err
	}
	c := &Collector{proc: proc, http: &http.Client{Timeout: 5 * time.Second}}
	if opts.HealthURL == "" {
		return c, nil
	}
	if err := c.waitHealthy(ctx, opts.HealthURL, opts.StartTimeout); err != nil {
		_ = proc.Stop(5 * time.Second)
		return nil, fmt.Errorf("%w\ncollector log:\n%s", err, proc.Tail(4096))
	}
	return c, nil
}

func (c *Collector) waitHealthy(ctx context.Context, url string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for {
		if exited, err := c.proc.Exited(); exited {
			return fmt.Errorf("collector exited before it was healthy: %v", err)
		}
		if ok, _ := c.get(ctx, url, func(resp *http.Response) error {
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			return nil
		}); ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("collector not healthy at %s within %v", url, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Collector) get(ctx context.Context, url string, read func(*http.Response) error) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if err := read(resp); err != nil {
		return false, err
	}
	return true, nil
}

// Stop sends SIGTERM (the collector shuts down its pipelines: the processor
// flushes, exporter queues drain) and kills the process after grace.
func (c *Collector) Stop(grace time.Duration) error {
	if err := c.proc.Stop(grace); err != nil {
		return fmt.Errorf("%w\ncollector log:\n%s", err, c.proc.Tail(4096))
	}
	return nil
}

// Kill ends the collector at once, as a crash would.
func (c *Collector) Kill() { c.proc.Kill() }

// Exited says whether the collector has exited, and with what.
func (c *Collector) Exited() (bool, error) { return c.proc.Exited() }

// LogTail is the end of the collector's log.
func (c *Collector) LogTail(maxBytes int) string { return c.proc.Tail(maxBytes) }

// LogPath is the collector's log file.
func (c *Collector) LogPath() string { return c.proc.LogPath }

// Metrics reads a Prometheus text endpoint (the collector's own telemetry).
func (c *Collector) Metrics(ctx context.Context, url string) (Metrics, error) {
	var m Metrics
	_, err := c.get(ctx, url, func(resp *http.Response) error {
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		var err error
		m, err = ParseMetrics(resp.Body)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read metrics %s: %w", url, err)
	}
	return m, nil
}

// Metrics maps a sample's name and labels, written `name{k1="v1",k2="v2"}`
// with labels sorted (or just `name`), to its value.
type Metrics map[string]float64

// Sum adds the samples of a metric whose labels include every given
// "key=value" pair (the otel_scope_* and service labels need not be given).
func (m Metrics) Sum(name string, labels ...string) float64 {
	var sum float64
	for key, v := range m {
		base, ls, _ := strings.Cut(key, "{")
		if base != name {
			continue
		}
		match := true
		for _, l := range labels {
			k, val, _ := strings.Cut(l, "=")
			if !strings.Contains(","+ls, ","+k+`="`+val+`"`) {
				match = false
				break
			}
		}
		if match {
			sum += v
		}
	}
	return sum
}

// ParseMetrics reads the Prometheus text format: comments skipped, labels
// sorted so that a sample has one spelling.
func ParseMetrics(r io.Reader) (Metrics, error) {
	m := Metrics{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("metric line %q: no value", line)
		}
		key, val := line[:i], line[i+1:]
		if j := strings.LastIndexByte(key, ' '); j >= 0 && !strings.Contains(key[j:], "}") {
			// "name{...} value timestamp": the last field was the timestamp.
			key, val = key[:j], key[j+1:]
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			return nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		m[normalize(key)] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, errors.New("no metrics")
	}
	return m, nil
}

func normalize(key string) string {
	name, rest, ok := strings.Cut(key, "{")
	if !ok {
		return key
	}
	labels := splitLabels(strings.TrimSuffix(rest, "}"))
	sort.Strings(labels)
	return name + "{" + strings.Join(labels, ",") + "}"
}

// Series is a sample's name and labels, read back from its Metrics key.
func Series(key string) (name string, labels map[string]string) {
	name, rest, _ := strings.Cut(key, "{")
	labels = map[string]string{}
	for _, l := range splitLabels(strings.TrimSuffix(rest, "}")) {
		k, v, _ := strings.Cut(l, "=")
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		labels[k] = v
	}
	return name, labels
}

// splitLabels splits `a="x",b="y,z"` at the commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	inQuote, start := false, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			inQuote = !inQuote
		case ',':
			if !inQuote {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// PeakRSS is the most resident memory the collector has used, in bytes.
func (c *Collector) PeakRSS() (int64, error) { return c.proc.PeakRSS() }
