package eventsumconnector // import "github.com/k8sevents/otel-k8sevents/connector/eventsumconnector"

import (
	"errors"
	"fmt"
	"sort"
)

// Config of the eventsum connector. README.md lists every key. Its shape is
// that of contrib's sum connector for logs (logs → metric name →
// source_attribute, attributes, description), so either can replace the
// other; max_series is this connector's own.
type Config struct {
	// Logs maps the name of each metric to make to what it sums.
	Logs map[string]MetricInfo `mapstructure:"logs"`
	// MaxSeries bounds the attribute sets held per metric; records past it
	// are summed in the metric's overflow series.
	MaxSeries int `mapstructure:"max_series"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// MetricInfo is one metric: the attribute whose values it sums and the
// attributes that split it into series.
type MetricInfo struct {
	Description string `mapstructure:"description"`
	// Conditions are OTTL conditions in contrib's sum connector; this
	// connector has no OTTL and refuses any (filter records before it).
	Conditions      []string          `mapstructure:"conditions"`
	Attributes      []AttributeConfig `mapstructure:"attributes"`
	SourceAttribute string            `mapstructure:"source_attribute"`
}

// AttributeConfig is one attribute of a metric's series: its key, read from
// the record's attributes, then its resource's, and the value taken when
// neither has it (a record without it and without a default is not summed
// in that metric).
type AttributeConfig struct {
	Key          string `mapstructure:"key"`
	DefaultValue any    `mapstructure:"default_value"`
}

const defaultMaxSeries = 10000

func createDefaultConfig() *Config {
	return &Config{MaxSeries: defaultMaxSeries}
}

// Validate checks the configuration; each error names its key.
func (cfg *Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(len(cfg.Logs) > 0, "logs: at least one metric is required")
	check(cfg.MaxSeries > 0, "max_series: must be positive, have %d", cfg.MaxSeries)
	names := make([]string, 0, len(cfg.Logs))
	for name := range cfg.Logs {
		names = append(names, name)
	}
	sort.Strings(names) // errors in a stable order
	for _, name := range names {
		info := cfg.Logs[name]
		check(name != "", "logs: metric name missing")
		check(info.SourceAttribute != "", "logs::%s::source_attribute: missing", name)
		check(len(info.Conditions) == 0,
			"logs::%s::conditions: not supported (this connector has no OTTL); drop records before it, e.g. with the filter processor", name)
		seen := map[string]bool{}
		for i, a := range info.Attributes {
			check(a.Key != "", "logs::%s::attributes[%d]::key: missing", name, i)
			check(a.Key == "" || !seen[a.Key], "logs::%s::attributes[%d]::key: %q twice", name, i, a.Key)
			seen[a.Key] = true
			switch a.DefaultValue.(type) {
			case nil, string, int, int64, float64, bool:
			default:
				check(false, "logs::%s::attributes[%d]::default_value: %T is not a string, number or bool", name, i, a.DefaultValue)
			}
		}
	}
	return errors.Join(errs...)
}
