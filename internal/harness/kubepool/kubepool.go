// Package kubepool shares running API servers between the tests of one
// make test: Run starts a few etcd and kube-apiserver pairs, runs a command
// (the test jobs) with $KUBETEST_POOL naming them, and stops them after it.
// A test that asks internal/harness/kubetest for a server with default
// options leases a free one (Acquire) instead of starting its own; when all
// are leased, or without $KUBETEST_POOL, it starts its own.
//
// A lease starts with the server as it was when it became ready: every etcd
// key created since then (namespaces, Events, RBAC, ServiceAccounts, leases)
// is deleted, then the lease waits until the API server shows only the
// namespaces it started with. The reset is done when a lease begins, not
// when one ends, so that a test process that died mid-test leaves nothing
// behind for the next one. What a reset cannot undo is the API server's own
// memory: its request metrics count on (tests read them as differences), and
// resourceVersions keep growing.
//
// A free server is paused (SIGSTOP to its etcd and kube-apiserver) and a
// lease continues it: an idle API server still runs its controllers and
// timers, and the pool keeps several free for the moments when many tests
// start at once. Paused, they cost no CPU between those moments.
package kubepool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubelocal"
)

// Env names the environment variable holding the pool's directory.
const Env = "KUBETEST_POOL"

// slotState is written into a slot's directory once its server is ready;
// leases reset the server to it.
type slotState struct {
	Revision   int64    `json:"revision"`   // etcd's revision when the server became ready
	Namespaces []string `json:"namespaces"` // the namespaces it had then
	PIDs       []int    `json:"pids"`       // etcd's and kube-apiserver's, paused while the slot is free
	Flags      []string `json:"flags"`      // its API server flags beyond kubelocal's; a lease asks for the same
}

const slotStateFile = "pool.json"

func slotDir(dir string, i int) string { return filepath.Join(dir, "slot-"+strconv.Itoa(i)) }

// Run starts API servers in dir, one per entry of servers, which holds the
// flags each starts with beyond kubelocal's (nil: none); one after the
// other, each free to lease once ready. It runs command with $KUBETEST_POOL
// set to dir. When the command ends it stops every server and removes dir.
// SIGINT and SIGTERM are passed on to the command. The error is the
// command's (an *exec.ExitError for a failed command) or the servers'.
func Run(dir string, servers [][]string, command []string) error {
	if len(command) == 0 {
		return errors.New("kubepool: no command")
	}
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), Env+"="+dir)

	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan []*kubelocal.Cluster, 1)
	go func() { started <- startSlots(ctx, dir, servers) }()

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	err := cmd.Start()
	if err == nil {
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		for done := false; !done; {
			select {
			case sig := <-sigs:
				_ = cmd.Process.Signal(sig)
			case err = <-waited:
				done = true
			}
		}
	}
	cancel()
	clusters := <-started
	reportTally(dir, len(servers))
	errs := []error{err}
	for _, c := range clusters {
		resume(c.PIDs()) // a paused process would take SIGTERM only when continued
		errs = append(errs, c.Stop())
	}
	errs = append(errs, os.RemoveAll(dir))
	return errors.Join(errs...)
}

// startSlots starts the servers until ctx ends, and returns those it started.
// One that fails to start is reported and left out: tests then start their
// own.
func startSlots(ctx context.Context, dir string, servers [][]string) []*kubelocal.Cluster {
	var clusters []*kubelocal.Cluster
	for i, flags := range servers {
		if ctx.Err() != nil {
			break
		}
		c, err := kubelocal.Start(ctx, kubelocal.Options{Dir: slotDir(dir, i), APIServerFlags: flags})
		if err == nil {
			clusters = append(clusters, c)
			err = publish(ctx, c, flags)
		}
		if err != nil && ctx.Err() == nil { // not cut short because the command ended
			fmt.Fprintf(os.Stderr, "kubepool: server %d: %v\n", i, err)
		}
	}
	return clusters
}

// publish writes what Acquire needs into the cluster's directory, the slot
// state last: a slot without it is not leased. The server is paused before
// then, as every free one is.
func publish(ctx context.Context, c *kubelocal.Cluster, flags []string) error {
	if err := c.SaveState(); err != nil {
		return err
	}
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	// The API server makes the default/kubernetes Service a moment after it
	// is ready; the baseline includes it.
	if err := waitForService(ctx, cs); err != nil {
		return err
	}
	// A reset waits until no Event is left: an Event the API server
	// recorded about itself while starting (its ClusterIP repair loop
	// records ClusterIPNotAllocated when it runs before the allocator has
	// seen default/kubernetes) would be part of the baseline and fail every
	// lease of this server, so it goes before the baseline is taken.
	if err := deleteEvents(ctx, cs); err != nil {
		return err
	}
	var st slotState
	if st.Revision, err = newEtcd(c.EtcdEndpoint()).revision(ctx); err != nil {
		return err
	}
	if st.Namespaces, err = namespaces(ctx, cs); err != nil {
		return err
	}
	st.PIDs, st.Flags = c.PIDs(), flags
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := filepath.Join(c.Dir(), slotStateFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	pause(st.PIDs)
	return os.Rename(tmp, filepath.Join(c.Dir(), slotStateFile))
}

// deleteEvents deletes every core/v1 Event (events.k8s.io/v1 shows the
// same objects), saying on stderr which, as they are not expected.
func deleteEvents(ctx context.Context, cs kubernetes.Interface) error {
	list, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list the Events of a new server: %w", err)
	}
	for _, ev := range list.Items {
		fmt.Fprintf(os.Stderr, "kubepool: deleting Event %s/%s (%s: %s) made while the server started\n",
			ev.Namespace, ev.Name, ev.Reason, ev.Message)
		err := cs.CoreV1().Events(ev.Namespace).Delete(ctx, ev.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete Event %s/%s of a new server: %w", ev.Namespace, ev.Name, err)
		}
	}
	return nil
}

// waitForService waits until the API server has made its default/kubernetes
// Service.
func waitForService(ctx context.Context, cs kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, resetTimeout)
	defer cancel()
	for {
		_, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the API server made no default/kubernetes Service: %w", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
