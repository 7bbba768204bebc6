// Package k8sclient turns the auth settings every component shares
// (auth_type, kubeconfig, context) into a client-go configuration.
package k8sclient

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Auth types.
const (
	AuthServiceAccount = "serviceAccount"
	AuthKubeConfig     = "kubeConfig"
	AuthNone           = "none"
)

// Config is how a component reaches the API server.
type Config struct {
	// AuthType: serviceAccount (in-cluster), kubeConfig, or none (in-cluster
	// address, no credentials).
	AuthType string `mapstructure:"auth_type"`
	// KubeConfig is the kubeconfig path with auth_type kubeConfig; empty
	// means $KUBECONFIG, then ~/.kube/config.
	KubeConfig string `mapstructure:"kubeconfig"`
	// Context is the kubeconfig context; empty means its current one.
	Context string `mapstructure:"context"`

	// InProcess, when set, is the client configuration itself, whatever
	// auth_type says: an in-process harness (the fault simulator) reaches
	// its API server model through it. Never read from a configuration
	// file.
	InProcess func() *rest.Config `mapstructure:"-"`
}

// Validate checks the auth type.
func (c Config) Validate() error {
	switch c.AuthType {
	case AuthServiceAccount, AuthKubeConfig, AuthNone:
		return nil
	}
	return fmt.Errorf("auth_type: %q is not %s, %s or %s", c.AuthType, AuthServiceAccount, AuthKubeConfig, AuthNone)
}

// RESTConfig builds the client configuration.
func (c Config) RESTConfig() (*rest.Config, error) {
	if c.InProcess != nil {
		return c.InProcess(), nil
	}
	switch c.AuthType {
	case AuthKubeConfig:
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		if c.KubeConfig != "" {
			rules.ExplicitPath = c.KubeConfig
		}
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
			&clientcmd.ConfigOverrides{CurrentContext: c.Context}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("load kubeconfig (context %q): %w", c.Context, err)
		}
		return cfg, nil
	case AuthServiceAccount:
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config: %w", err)
		}
		return cfg, nil
	case AuthNone:
		host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
		if host == "" || port == "" {
			return nil, errors.New("auth_type none: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set")
		}
		return &rest.Config{Host: "https://" + host + ":" + port, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, nil
	}
	return nil, c.Validate()
}

// Clientset builds a clientset with the given client-side rate limits
// (0: client-go's defaults).
func (c Config) Clientset(qps float32, burst int) (*kubernetes.Clientset, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = qps, burst
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return cs, nil
}
