package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
)

// The simulator runs the ready configurations (testdata/config) as they
// are written: each process reads its file with its own environment, and
// its pipeline is built from the file's service section.

// configDir is testdata/config of the repository: the first directory
// above the working directory (a test runs in its package's directory)
// that holds go.mod. Source paths are not used: builds run with -trimpath.
func configDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return filepath.Join("testdata", "config")
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "testdata", "config")
		}
		if filepath.Dir(d) == d {
			return filepath.Join(dir, "testdata", "config")
		}
	}
}

// loadConfig reads a ready configuration with env as its environment
// (${env:NAME:-default}: env's value, else the default).
func loadConfig(ctx context.Context, name string, env map[string]string) (*confmap.Conf, error) {
	resolver, err := confmap.NewResolver(confmap.ResolverSettings{
		URIs:              []string{"file:" + filepath.Join(configDir(), name)},
		ProviderFactories: []confmap.ProviderFactory{confmap.NewProviderFactory(newFileProvider), envProviderFactory(env)},
		DefaultScheme:     "env",
	})
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	conf, err := resolver.Resolve(ctx)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	return conf, nil
}

// pipelineIDs is the logs pipeline of a configuration's service section.
type pipelineIDs struct {
	extensions, receivers, processors, exporters []component.ID
}

func pipelineOf(conf *confmap.Conf) (pipelineIDs, error) {
	var svc struct {
		Extensions []component.ID `mapstructure:"extensions"`
		Pipelines  map[string]struct {
			Receivers  []component.ID `mapstructure:"receivers"`
			Processors []component.ID `mapstructure:"processors"`
			Exporters  []component.ID `mapstructure:"exporters"`
		} `mapstructure:"pipelines"`
	}
	sub, err := conf.Sub("service")
	if err != nil {
		return pipelineIDs{}, err
	}
	if err := sub.Unmarshal(&svc, confmap.WithIgnoreUnused()); err != nil {
		return pipelineIDs{}, fmt.Errorf("service: %w", err)
	}
	logs, ok := svc.Pipelines["logs"]
	if !ok || len(svc.Pipelines) != 1 {
		return pipelineIDs{}, fmt.Errorf("service: want one logs pipeline, have %d pipelines", len(svc.Pipelines))
	}
	return pipelineIDs{extensions: svc.Extensions, receivers: logs.Receivers, processors: logs.Processors, exporters: logs.Exporters}, nil
}

// section unmarshals the configuration of one component (kind: receivers,
// processors, exporters, extensions) into cfg, which holds its defaults.
func section(conf *confmap.Conf, kind string, id component.ID, cfg any) error {
	sub, err := conf.Sub(kind + "::" + id.String())
	if err != nil {
		return err
	}
	if err := sub.Unmarshal(cfg); err != nil {
		return fmt.Errorf("%s %s: %w", kind, id, err)
	}
	return nil
}

type fileProvider struct{}

func newFileProvider(confmap.ProviderSettings) confmap.Provider { return fileProvider{} }

func (fileProvider) Retrieve(_ context.Context, uri string, _ confmap.WatcherFunc) (*confmap.Retrieved, error) {
	b, err := os.ReadFile(strings.TrimPrefix(uri, "file:"))
	if err != nil {
		return nil, err
	}
	return confmap.NewRetrievedFromYAML(b)
}
func (fileProvider) Scheme() string                 { return "file" }
func (fileProvider) Shutdown(context.Context) error { return nil }

// envProvider is the collector's env provider over a map: each simulated
// process has an environment of its own.
type envProvider map[string]string

func envProviderFactory(env map[string]string) confmap.ProviderFactory {
	return confmap.NewProviderFactory(func(confmap.ProviderSettings) confmap.Provider { return envProvider(env) })
}

func (e envProvider) Retrieve(_ context.Context, uri string, _ confmap.WatcherFunc) (*confmap.Retrieved, error) {
	name, def, hasDefault := strings.Cut(strings.TrimPrefix(uri, "env:"), ":-")
	v, ok := e[name]
	switch {
	case ok:
	case hasDefault:
		v = def
	default:
		return nil, fmt.Errorf("environment variable %s is not set and has no default", name)
	}
	if v == "" {
		return confmap.NewRetrieved("")
	}
	return confmap.NewRetrievedFromYAML([]byte(v))
}
func (envProvider) Scheme() string                 { return "env" }
func (envProvider) Shutdown(context.Context) error { return nil }

// sectionLoose is section for a simulated stand-in that reads only part
// of its component's configuration.
func sectionLoose(conf *confmap.Conf, kind string, id component.ID, cfg any) error {
	sub, err := conf.Sub(kind + "::" + id.String())
	if err != nil {
		return err
	}
	if err := sub.Unmarshal(cfg, confmap.WithIgnoreUnused()); err != nil {
		return fmt.Errorf("%s %s: %w", kind, id, err)
	}
	return nil
}
