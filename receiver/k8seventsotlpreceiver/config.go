package k8seventsotlpreceiver // import "github.com/k8sevents/otel-k8sevents/receiver/k8seventsotlpreceiver"

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/confignet"
	"go.opentelemetry.io/collector/config/configoptional"

	"github.com/k8sevents/otel-k8sevents/internal/k8sclient"
	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
	"github.com/k8sevents/otel-k8sevents/internal/reviewcache"
)

// Config of the k8seventsotlp receiver. README.md lists every key.
type Config struct {
	// Protocols: the OTLP listeners; each must have auth (an
	// authenticator that puts a Kubernetes identity into client.Info.Auth,
	// such as k8stokenauth): a record is authorized for its sender.
	Protocols Protocols `mapstructure:"protocols"`

	// How the receiver reaches the API server for its
	// SubjectAccessReviews (auth_type, kubeconfig, context): its own
	// identity needs create on subjectaccessreviews.authorization.k8s.io.
	k8sclient.Config `mapstructure:",squash"`
	// Timeout bounds the reviews of one request, their wait for the
	// client's rate limit included; past it the request is refused as
	// retryable (Unavailable / 503).
	Timeout time.Duration `mapstructure:"timeout"`
	// QPS and Burst cap the SubjectAccessReviews sent.
	QPS   float32 `mapstructure:"qps"`
	Burst int     `mapstructure:"burst"`
	// Cache keeps the API server's answers per identity and namespace:
	// allow_ttl bounds how long a Role taken away still lets records
	// through, deny_ttl how long a Role granted is not yet seen.
	Cache reviewcache.Config `mapstructure:"cache"`

	// MaxConnections: connections each listener (grpc, http) keeps open
	// at once; past it, a new one waits to be accepted. With
	// max_concurrent_streams and the message size cap, it bounds what
	// the receiver holds read but not yet decoded.
	MaxConnections int `mapstructure:"max_connections"`
	// MaxConcurrentDecodes: requests decoded at once, across connections
	// and protocols; the others wait (until their deadline).
	MaxConcurrentDecodes int `mapstructure:"max_concurrent_decodes"`

	// MaxNamespacesPerRequest: distinct namespaces one request's records
	// may be in; the records in namespaces past the first this many are
	// refused (partial success), unreviewed.
	MaxNamespacesPerRequest int `mapstructure:"max_namespaces_per_request"`

	// PerClient limits each authenticated client's records.
	PerClient PerClientConfig `mapstructure:"per_client"`

	// ClusterName and ClusterUID are written as k8s.cluster.name and
	// k8s.cluster.uid on every record; what a record states of its cluster
	// is removed either way ("" writes none).
	ClusterName string `mapstructure:"cluster_name"`
	ClusterUID  string `mapstructure:"cluster_uid"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Protocols are the OTLP listeners; at least one.
type Protocols struct {
	GRPC configoptional.Optional[configgrpc.ServerConfig] `mapstructure:"grpc"`
	HTTP configoptional.Optional[confighttp.ServerConfig] `mapstructure:"http"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// PerClientConfig is a token bucket of records per authenticated identity.
type PerClientConfig struct {
	// RecordsPerSecond a client may send on average; a request over its
	// budget is refused whole as retryable (ResourceExhausted / 429) with
	// the time to wait.
	RecordsPerSecond float64 `mapstructure:"records_per_second"`
	// Burst: records a client may send at once; a request larger than
	// this needs a full bucket and is paid in full.
	Burst int `mapstructure:"burst"`
	// MaxClients: identities whose buckets are kept; the least recently
	// seen one goes first and comes back with a full bucket.
	MaxClients int `mapstructure:"max_clients"`
	// ReviewCost: records charged for each SubjectAccessReview a request
	// needs (a namespace the client's answer is not cached for), so that
	// each client's reviews come out of its own budget. 0: none.
	ReviewCost int `mapstructure:"review_cost"`
}

func createDefaultConfig() *Config {
	grpc := configgrpc.NewDefaultServerConfig()
	grpc.NetAddr = confignet.AddrConfig{Endpoint: "localhost:4317", Transport: confignet.TransportTypeTCP}
	grpc.MaxRecvMsgSizeMiB = 1
	grpc.MaxConcurrentStreams = 8
	http := confighttp.NewDefaultServerConfig()
	http.NetAddr.Endpoint = "localhost:4318"
	http.MaxRequestBodySize = 1 << 20
	return &Config{
		Protocols:               Protocols{GRPC: configoptional.Default(grpc), HTTP: configoptional.Default(http)},
		Config:                  k8sclient.Config{AuthType: k8sclient.AuthServiceAccount},
		Timeout:                 5 * time.Second,
		MaxConnections:          1024,
		MaxConcurrentDecodes:    8,
		MaxNamespacesPerRequest: 20,
		QPS:                     50,
		Burst:                   100,
		Cache:                   reviewcache.Config{MaxEntries: 10000, AllowTTL: 5 * time.Minute, DenyTTL: 30 * time.Second},
		PerClient:               PerClientConfig{RecordsPerSecond: 20, Burst: 200, MaxClients: 10000, ReviewCost: 10},
	}
}

// Validate checks the configuration.
func (cfg *Config) Validate() error {
	errs := []error{cfg.Config.Validate()}
	grpc, http := cfg.Protocols.GRPC.Get(), cfg.Protocols.HTTP.Get()
	if grpc == nil && http == nil {
		errs = append(errs, errors.New("protocols: at least one of grpc and http"))
	}
	if grpc != nil && !grpc.Auth.HasValue() {
		errs = append(errs, errors.New("protocols::grpc::auth: required (an authenticator such as k8stokenauth): records are authorized for their sender"))
	}
	if http != nil && !http.Auth.HasValue() {
		errs = append(errs, errors.New("protocols::http::auth: required (an authenticator such as k8stokenauth): records are authorized for their sender"))
	}
	if cfg.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout: must be positive, have %s", cfg.Timeout))
	}
	if cfg.QPS <= 0 || cfg.Burst < 1 {
		errs = append(errs, fmt.Errorf("qps, burst: must be positive, have %v and %d", cfg.QPS, cfg.Burst))
	}
	if cfg.MaxConnections < 1 {
		errs = append(errs, fmt.Errorf("max_connections: must be positive, have %d", cfg.MaxConnections))
	}
	if cfg.MaxConcurrentDecodes < 1 {
		errs = append(errs, fmt.Errorf("max_concurrent_decodes: must be positive, have %d", cfg.MaxConcurrentDecodes))
	}
	if cfg.MaxNamespacesPerRequest < 1 {
		errs = append(errs, fmt.Errorf("max_namespaces_per_request: must be positive, have %d", cfg.MaxNamespacesPerRequest))
	}
	if cfg.PerClient.ReviewCost < 0 {
		errs = append(errs, fmt.Errorf("per_client::review_cost: must not be negative, have %d", cfg.PerClient.ReviewCost))
	}
	errs = append(errs, cfg.Cache.Validate())
	if cfg.PerClient.RecordsPerSecond <= 0 {
		errs = append(errs, fmt.Errorf("per_client::records_per_second: must be positive, have %v", cfg.PerClient.RecordsPerSecond))
	}
	if cfg.PerClient.Burst < 1 {
		errs = append(errs, fmt.Errorf("per_client::burst: must be positive, have %d", cfg.PerClient.Burst))
	}
	if cfg.PerClient.MaxClients < 1 {
		errs = append(errs, fmt.Errorf("per_client::max_clients: must be positive, have %d", cfg.PerClient.MaxClients))
	}
	if len(cfg.ClusterName) > k8sevent.MaxNameBytes {
		errs = append(errs, fmt.Errorf("cluster_name: longer than %d bytes", k8sevent.MaxNameBytes))
	}
	if len(cfg.ClusterUID) > k8sevent.MaxNameBytes {
		errs = append(errs, fmt.Errorf("cluster_uid: longer than %d bytes", k8sevent.MaxNameBytes))
	}
	return errors.Join(errs...)
}
