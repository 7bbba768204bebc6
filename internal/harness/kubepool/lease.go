package kubepool

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/k8sevents/otel-k8sevents/internal/harness/kubelocal"
)

// resetTimeout bounds a reset: the deletes and the waits for the API server
// to show them. It is there for a server that stopped answering, not as a
// measure of speed: on a machine busy compiling, deleting what a storm test
// left can take many seconds.
const resetTimeout = 2 * time.Minute

// Lease is one test's use of a pooled server.
type Lease struct {
	// Cluster is the server, reached through a proxy that Release closes.
	Cluster *kubelocal.Cluster
	proxy   *proxy
	lock    *os.File
	pids    []int // the server's processes, paused again at Release
}

// Acquire leases a free server of the pool in dir that was started with
// the given API server flags (none: a default one), and resets it; nil when
// every such server is leased (or none is ready yet).
func Acquire(ctx context.Context, dir string, flags []string) (*Lease, error) {
	slots, err := filepath.Glob(filepath.Join(dir, "slot-*", slotStateFile))
	if err != nil {
		return nil, err
	}
	slices.Sort(slots)
	for _, stateFile := range slots {
		slot := filepath.Dir(stateFile)
		st, err := readState(stateFile)
		if err != nil {
			return nil, fmt.Errorf("kubepool: %w", err)
		}
		if !slices.Equal(st.Flags, flags) {
			continue
		}
		lock := tryLock(slot + ".lock")
		if lock == nil {
			continue
		}
		l, err := lease(ctx, slot, lock, st)
		if err != nil {
			pause(st.PIDs) // free again, so paused like every free server
			lock.Close()
			return nil, fmt.Errorf("kubepool: lease %s: %w", slot, err)
		}
		tally(dir, leased+filepath.Base(slot)+"\n")
		return l, nil
	}
	tally(dir, noneFree)
	return nil, nil
}

func readState(path string) (slotState, error) {
	var st slotState
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &st)
	}
	return st, err
}

// The tally is a file of one line per Acquire, which Run sums up: how
// many tests leased each server, and how many found none free (and started
// their own), which is what POOL_SERVERS is tuned by.
const (
	tallyFile = "tally"
	leased    = "leased "
	noneFree  = "none free\n"
)

// reportTally writes the tally's sums to stderr.
func reportTally(dir string, servers int) {
	data, err := os.ReadFile(filepath.Join(dir, tallyFile))
	if err != nil {
		return // no lease was asked for
	}
	leases := make([]int, servers)
	for i := range leases {
		leases[i] = strings.Count(string(data), leased+filepath.Base(slotDir(dir, i))+"\n")
	}
	fmt.Fprintf(os.Stderr, "kubepool: %d servers, leased %v times each; tests found none free %d times\n",
		servers, leases, strings.Count(string(data), noneFree))
}

// tally appends one line; a write of a few bytes with O_APPEND is atomic
// between processes. A failed write loses a line of a diagnostic, nothing
// a test depends on.
func tally(dir, line string) {
	f, err := os.OpenFile(filepath.Join(dir, tallyFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	_, _ = f.WriteString(line)
	f.Close()
}

func lease(ctx context.Context, slot string, lock *os.File, st slotState) (*Lease, error) {
	resume(st.PIDs)
	direct, err := kubelocal.Attach(slot, 0)
	if err != nil {
		return nil, err
	}
	p, err := newProxy(net.JoinHostPort("127.0.0.1", strconv.Itoa(direct.APIServerPort())))
	if err != nil {
		return nil, err
	}
	l := &Lease{proxy: p, lock: lock, pids: st.PIDs}
	if l.Cluster, err = kubelocal.Attach(slot, p.port()); err == nil {
		err = reset(ctx, l.Cluster, st)
	}
	if err != nil {
		p.close()
		return nil, err
	}
	return l, nil
}

// Release ends the lease: the proxy closes every connection the test's
// clients still hold, the server is paused, and it is free for the next
// lease.
func (l *Lease) Release() {
	l.proxy.close()
	pause(l.pids)
	l.lock.Close()
}

// reset deletes what was stored after the server became ready, and waits
// until the API server shows the namespaces it had then and no Event (its
// watch caches have seen the deletes) and its authorizer has seen them too.
func reset(ctx context.Context, c *kubelocal.Cluster, st slotState) error {
	ctx, cancel := context.WithTimeout(ctx, resetTimeout)
	defer cancel()
	if err := newEtcd(c.EtcdEndpoint()).deleteCreatedAfter(ctx, st.Revision); err != nil {
		return err
	}
	cs, err := c.Clientset()
	if err != nil {
		return err
	}
	for {
		have, err := namespaces(ctx, cs)
		if err != nil {
			return err
		}
		events, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return err
		}
		if slices.Equal(have, st.Namespaces) && len(events.Items) == 0 {
			return waitForAuthorizer(ctx, cs)
		}
		select {
		case <-ctx.Done():
			left := ""
			if len(events.Items) > 0 {
				ev := events.Items[0]
				left = fmt.Sprintf(" (%s/%s: %s, %s)", ev.Namespace, ev.Name, ev.Reason, ev.Message)
			}
			return fmt.Errorf("reset: the API server still shows namespaces %v and %d+ Events%s: %w", have, len(events.Items), left, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// namespaces lists the server's namespaces by name, sorted.
func namespaces(ctx context.Context, cs kubernetes.Interface) ([]string, error) {
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Items))
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	slices.Sort(names)
	return names, nil
}
