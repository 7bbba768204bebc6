package faultproxy

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// NewForREST starts a proxy in front of the API server cfg points at. The
// proxy authenticates upstream with cfg's credentials (TLS, bearer token):
// its clients connect over plain HTTP with no credentials of their own.
func NewForREST(cfg *rest.Config) (*Proxy, error) {
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: transport: %w", err)
	}
	return New(cfg.Host, rt)
}

// RESTConfig is a client config for the proxy (no credentials: the proxy
// adds its own upstream).
func (p *Proxy) RESTConfig() *rest.Config {
	return &rest.Config{Host: p.URL(), QPS: 100, Burst: 200}
}

// WriteKubeconfig writes a kubeconfig that points at the proxy to path.
func (p *Proxy) WriteKubeconfig(path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["faultproxy"] = &clientcmdapi.Cluster{Server: p.URL()}
	kc.AuthInfos["faultproxy"] = &clientcmdapi.AuthInfo{}
	kc.Contexts["faultproxy"] = &clientcmdapi.Context{Cluster: "faultproxy", AuthInfo: "faultproxy", Namespace: "default"}
	kc.CurrentContext = "faultproxy"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("faultproxy: write kubeconfig: %w", err)
	}
	return nil
}
