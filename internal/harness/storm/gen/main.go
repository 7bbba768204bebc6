// Command gen writes the built-in storms as stream files:
//
//	go run ./internal/harness/storm/gen testdata/streams
//
// Large streams are gzipped.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/k8sevents/otel-k8sevents/internal/harness/storm"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen DIR")
		os.Exit(2)
	}
	names := make([]string, 0, len(storm.Recorded))
	for name := range storm.Recorded {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		occs := storm.Recorded[name]()
		path := filepath.Join(os.Args[1], name+".jsonl")
		if len(occs) > 10_000 {
			path += ".gz"
		}
		if err := storm.WriteFile(path, occs); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%s: %d occurrences\n", path, len(occs))
	}
}
