// Package storm reads, writes and generates recorded event storms: JSON
// lines, one Event occurrence per line, in time order. The scenarios are
// deterministic: the same name gives the same stream on every machine.
package storm

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// Ref is an object reference as a stream line holds it.
type Ref struct {
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	FieldPath  string `json:"fieldPath,omitempty"`
}

// Occurrence is one line of a stream: one occurrence of one Event, as a
// recorder is asked to emit it.
type Occurrence struct {
	Time       time.Time `json:"time"`
	Type       string    `json:"type"`
	Reason     string    `json:"reason"`
	Action     string    `json:"action,omitempty"`
	Note       string    `json:"note"`
	Regarding  Ref       `json:"regarding"`
	Related    *Ref      `json:"related,omitempty"`
	Controller string    `json:"controller"` // reporting controller and legacy source component
	Instance   string    `json:"instance"`   // reporting instance and legacy source host
}

// Event is the occurrence as the project's Event model.
func (o *Occurrence) Event() k8sevent.Event {
	ev := k8sevent.Event{
		Type: o.Type, Reason: o.Reason, Action: o.Action, Note: o.Note,
		Regarding:           o.Regarding.ref(),
		ReportingController: o.Controller, ReportingInstance: o.Instance,
		SourceComponent: o.Controller, SourceHost: o.Instance,
		Time: o.Time,
	}
	if o.Related != nil {
		ev.Related = o.Related.ref()
	}
	return ev
}

// Namespaces lists, sorted, the namespaces the storms' Events live in: the
// regarding object's, or "default" for a cluster-scoped one (a Node), as
// the API server stores them (k8sevent.Event.ObjectNamespace).
func Namespaces(storms ...[]Occurrence) []string {
	set := map[string]bool{}
	for _, s := range storms {
		for i := range s {
			ev := s[i].Event()
			set[ev.ObjectNamespace()] = true
		}
	}
	out := make([]string, 0, len(set))
	for ns := range set {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

func (r Ref) ref() k8sevent.ObjectRef {
	return k8sevent.ObjectRef{Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, UID: r.UID, APIVersion: r.APIVersion, FieldPath: r.FieldPath}
}

// Write writes occurrences as JSON lines.
func Write(w io.Writer, occs []Occurrence) error {
	enc := json.NewEncoder(w)
	for i := range occs {
		if err := enc.Encode(&occs[i]); err != nil {
			return fmt.Errorf("write occurrence %d: %w", i, err)
		}
	}
	return nil
}

// WriteFile writes a stream file, gzipped when the name ends in .gz.
func WriteFile(path string, occs []Occurrence) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create stream %s: %w", path, err)
	}
	defer f.Close()
	var w io.Writer = f
	if strings.HasSuffix(path, ".gz") {
		gz := gzip.NewWriter(f)
		defer gz.Close()
		w = gz
	}
	if err := Write(w, occs); err != nil {
		return fmt.Errorf("stream %s: %w", path, err)
	}
	return nil
}

// ReadFile reads a stream file, gunzipping a .gz one.
func ReadFile(path string) ([]Occurrence, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open stream %s: %w", path, err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	occs, err := Read(r)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", path, err)
	}
	return occs, nil
}

// Read reads JSON lines; a line that is not an occurrence is an error with its number.
func Read(r io.Reader) ([]Occurrence, error) {
	var occs []Occurrence
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for line := 1; sc.Scan(); line++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		var o Occurrence
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		occs = append(occs, o)
	}
	return occs, sc.Err()
}
