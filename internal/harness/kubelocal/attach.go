package kubelocal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// stateFile holds what another process needs to use a running cluster: the
// certificates, keys and logs are in the same directory already.
const stateFile = "cluster.json"

type state struct {
	APIServerPort int    `json:"apiserverPort"`
	EtcdURL       string `json:"etcdURL"`
	AdminToken    string `json:"adminToken"`
}

// errAttached is what a cluster attached to another process's servers
// answers to StopAPIServer and StartAPIServer: the processes are not its own.
var errAttached = errors.New("kubelocal: the cluster's processes belong to another process (attached)")

// SaveState writes the cluster's ports and admin token into its directory,
// for Attach in another process.
func (c *Cluster) SaveState() error {
	data, err := json.Marshal(state{APIServerPort: c.apiserverPort, EtcdURL: c.etcdURL, AdminToken: c.adminToken})
	if err != nil {
		return err
	}
	tmp := filepath.Join(c.dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("kubelocal: save state: %w", err)
	}
	// A rename, so that a reader never sees half a file.
	if err := os.Rename(tmp, filepath.Join(c.dir, stateFile)); err != nil {
		return fmt.Errorf("kubelocal: save state: %w", err)
	}
	return nil
}

// Attach returns the cluster whose directory is dir (SaveState wrote it),
// run by another process. The API server is reached at apiserverPort on
// 127.0.0.1 (0: its own port), which lets the caller put a proxy in front.
// Stop does nothing to it; StopAPIServer and StartAPIServer fail.
func Attach(dir string, apiserverPort int) (*Cluster, error) {
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, fmt.Errorf("kubelocal: attach: %w", err)
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("kubelocal: attach %s: %w", dir, err)
	}
	ca, err := os.ReadFile(filepath.Join(dir, "certs", "apiserver.crt"))
	if err != nil {
		return nil, fmt.Errorf("kubelocal: attach: %w", err)
	}
	if apiserverPort == 0 {
		apiserverPort = s.APIServerPort
	}
	return &Cluster{
		dir: dir, attached: true,
		etcdURL: s.EtcdURL, apiserverPort: apiserverPort, adminToken: s.AdminToken,
		caData: ca,
	}, nil
}

// APIServerPort is the port the API server listens on (as this process
// reaches it, for an attached cluster).
func (c *Cluster) APIServerPort() int { return c.apiserverPort }
