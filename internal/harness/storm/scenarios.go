package storm

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// Start is when every scenario begins.
var Start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Recorded are the built-in storms (four of ScenarioNames) that are also
// recorded in testdata/streams (make streams), which the processor's golden
// tests replay. Scenario generates every built-in storm, recorded or not.
var Recorded = map[string]func() []Occurrence{
	"crashloop":  Crashloop,
	"cronjob":    CronJob,
	"replicaset": ReplicaSet,
	"churn":      Churn,
}

// builtins are every built-in storm, in the order ScenarioNames lists them.
var builtins = []struct {
	name string
	gen  func() []Occurrence
}{
	{"crashloop", Crashloop}, {"imagepull", ImagePull}, {"failedscheduling", FailedScheduling},
	{"cronjob", CronJob}, {"replicaset", ReplicaSet}, {"churn", Churn}, {"mixed", Mixed},
}

// ScenarioNames lists the built-in storms.
func ScenarioNames() []string {
	names := make([]string, len(builtins))
	for i, b := range builtins {
		names[i] = b.name
	}
	return names
}

// Scenario generates the built-in storm of that name.
func Scenario(name string) ([]Occurrence, error) {
	for _, b := range builtins {
		if b.name == name {
			return b.gen(), nil
		}
	}
	return nil, fmt.Errorf("unknown scenario %q (have %s)", name, strings.Join(ScenarioNames(), ", "))
}

func pod(name string) Ref {
	return Ref{Kind: "Pod", Namespace: "shop", Name: name, UID: uidOf(name), APIVersion: "v1"}
}

// podIn is a pod of namespace ns.
func podIn(ns, name string) Ref {
	return Ref{Kind: "Pod", Namespace: ns, Name: name, UID: uidOf(ns + "/" + name), APIVersion: "v1"}
}

func uidOf(name string) string {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", uint32(h>>32), uint16(h>>16), uint16(h), uint16(h>>48), h&0xffffffffffff)
}

func kubelet(node string, at time.Time, ref Ref, typ, reason, note string) Occurrence {
	return Occurrence{Time: at, Type: typ, Reason: reason, Note: note, Regarding: ref, Controller: "kubelet", Instance: node}
}

func sortByTime(occs []Occurrence) []Occurrence {
	sort.SliceStable(occs, func(i, j int) bool { return occs[i].Time.Before(occs[j].Time) })
	return occs
}

// Crashloop: 20 pods whose container exits at start, for two hours, with
// kubelet's restart back-off (10 s doubling to 5 min): each restart pulls,
// creates and starts the container, and back-off is reported between.
func Crashloop() []Occurrence {
	rng := rand.New(rand.NewPCG(1, 1))
	var occs []Occurrence
	for p := range 20 {
		name := fmt.Sprintf("checkout-7d9f8-%05d", p)
		ref := pod(name)
		ref.FieldPath = "spec.containers{checkout}"
		node := fmt.Sprintf("node-%d", p%4)
		at := Start.Add(time.Duration(rng.IntN(60)) * time.Second)
		backoff := 10 * time.Second
		for at.Before(Start.Add(2 * time.Hour)) {
			occs = append(occs,
				kubelet(node, at, ref, "Normal", "Pulled", `Container image "shop/checkout:1.4.2" already present on machine`),
				kubelet(node, at.Add(100*time.Millisecond), ref, "Normal", "Created", "Created container checkout"),
				kubelet(node, at.Add(300*time.Millisecond), ref, "Normal", "Started", "Started container checkout"))
			// While backing off, kubelet's pod workers report it on every sync (about every 10 s).
			for t := at.Add(2 * time.Second); t.Before(at.Add(backoff)); t = t.Add(10 * time.Second) {
				occs = append(occs, kubelet(node, t, ref, "Warning", "BackOff",
					fmt.Sprintf("Back-off restarting failed container checkout in pod %s_shop(%s)", name, ref.UID)))
			}
			at = at.Add(backoff + time.Duration(rng.IntN(3000))*time.Millisecond)
			backoff = min(2*backoff, 5*time.Minute)
		}
	}
	return sortByTime(occs)
}

// CronJob is the CronJob case (docs/design.md, Sources): a CronJob running every minute for two
// hours; per run the controller reports SuccessfulCreate, SawCompletedJob
// and (history limit 3) SuccessfulDelete on the CronJob, the Job and its Pod
// report their own events.
func CronJob() []Occurrence {
	cron := Ref{Kind: "CronJob", Namespace: "shop", Name: "hello", UID: uidOf("cronjob/hello"), APIVersion: "batch/v1"}
	ctl := func(at time.Time, ref Ref, reason, note, controller string) Occurrence {
		return Occurrence{Time: at, Type: "Normal", Reason: reason, Note: note, Regarding: ref, Controller: controller, Instance: "kube-controller-manager-0"}
	}
	var occs []Occurrence
	for run := range 120 {
		at := Start.Add(time.Duration(run) * time.Minute)
		job := fmt.Sprintf("hello-%d", 29440000+run)
		jobRef := Ref{Kind: "Job", Namespace: "shop", Name: job, UID: uidOf("job/" + job), APIVersion: "batch/v1"}
		podName := fmt.Sprintf("%s-%05x", job, run*7919%0xfffff)
		podRef := pod(podName)
		occs = append(occs,
			ctl(at, cron, "SuccessfulCreate", "Created job "+job, "cronjob-controller"),
			ctl(at.Add(50*time.Millisecond), jobRef, "SuccessfulCreate", "Created pod: "+podName, "job-controller"),
			Occurrence{Time: at.Add(80 * time.Millisecond), Type: "Normal", Reason: "Scheduled", Note: "Successfully assigned shop/" + podName + " to node-1", Regarding: podRef, Controller: "default-scheduler", Instance: "default-scheduler-0"},
			kubelet("node-1", at.Add(time.Second), podRef, "Normal", "Pulled", `Container image "busybox:1.28" already present on machine`),
			kubelet("node-1", at.Add(1100*time.Millisecond), podRef, "Normal", "Created", "Created container hello"),
			kubelet("node-1", at.Add(1200*time.Millisecond), podRef, "Normal", "Started", "Started container hello"),
			ctl(at.Add(7*time.Second), jobRef, "Completed", "Job completed", "job-controller"),
			ctl(at.Add(8*time.Second), cron, "SawCompletedJob", "Saw completed job: "+job+", status: Complete", "cronjob-controller"))
		if run >= 3 {
			occs = append(occs, ctl(at.Add(8*time.Second+100*time.Millisecond), cron, "SuccessfulDelete",
				fmt.Sprintf("Deleted job hello-%d", 29440000+run-3), "cronjob-controller"))
		}
	}
	return sortByTime(occs)
}

// ReplicaSet: a Deployment scaled to 200 replicas; the ReplicaSet reports
// one SuccessfulCreate per pod, each with its own message, and every pod is
// scheduled, pulled, created and started.
func ReplicaSet() []Occurrence {
	rng := rand.New(rand.NewPCG(3, 3))
	rs := Ref{Kind: "ReplicaSet", Namespace: "shop", Name: "frontend-5c8bf76b5b", UID: uidOf("rs/frontend"), APIVersion: "apps/v1"}
	var occs []Occurrence
	for i := range 200 {
		at := Start.Add(time.Duration(i*250+rng.IntN(200)) * time.Millisecond)
		name := fmt.Sprintf("frontend-5c8bf76b5b-%05d", i)
		ref := pod(name)
		node := fmt.Sprintf("node-%d", i%10)
		occs = append(occs,
			Occurrence{Time: at, Type: "Normal", Reason: "SuccessfulCreate", Note: "Created pod: " + name, Regarding: rs, Controller: "replicaset-controller", Instance: "kube-controller-manager-0"},
			Occurrence{Time: at.Add(20 * time.Millisecond), Type: "Normal", Reason: "Scheduled", Note: "Successfully assigned shop/" + name + " to " + node, Regarding: ref, Controller: "default-scheduler", Instance: "default-scheduler-0"},
			kubelet(node, at.Add(2*time.Second), ref, "Normal", "Pulled", `Container image "shop/frontend:2.0" already present on machine`),
			kubelet(node, at.Add(2100*time.Millisecond), ref, "Normal", "Created", "Created container frontend"),
			kubelet(node, at.Add(2200*time.Millisecond), ref, "Normal", "Started", "Started container frontend"))
	}
	return sortByTime(occs)
}

// Churn: 50,000 short-lived pods over two hours, each scheduled and started
// once; nothing repeats, so nothing can be compressed, and the caches see
// twelve times max_keys distinct objects.
func Churn() []Occurrence { return churn(50_000) }

// churn is the first pods pods of Churn.
func churn(pods int) []Occurrence {
	occs := make([]Occurrence, 0, 2*pods)
	step := 2 * time.Hour / 50_000
	for i := range pods {
		at := Start.Add(time.Duration(i) * step)
		name := fmt.Sprintf("batch-%06d", i)
		ref := pod(name)
		node := fmt.Sprintf("node-%d", i%50)
		occs = append(occs,
			Occurrence{Time: at, Type: "Normal", Reason: "Scheduled", Note: "Successfully assigned shop/" + name + " to " + node, Regarding: ref, Controller: "default-scheduler", Instance: "default-scheduler-0"},
			kubelet(node, at.Add(time.Second), ref, "Normal", "Started", "Started container batch"))
	}
	return sortByTime(occs)
}

// ImagePull: 10 pods of two Deployments whose image cannot be pulled (a tag
// that does not exist, a private registry without credentials), for an
// hour. Each pull attempt reports Pulling and two Failed; between attempts
// kubelet's image back-off (10 s doubling to 5 min) is reported as BackOff
// and Failed ImagePullBackOff on every pod sync.
func ImagePull() []Occurrence {
	rng := rand.New(rand.NewPCG(5, 5))
	var occs []Occurrence
	for p := range 10 {
		app, image := "payments", "registry.example.com/shop/payments:2.3.1-rc"
		cause := fmt.Sprintf("rpc error: code = NotFound desc = failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", image, image, image)
		if p >= 6 {
			app, image = "ledger", "private.example.com/finance/ledger:1.0"
			cause = fmt.Sprintf("rpc error: code = Unknown desc = failed to pull and unpack image %q: failed to resolve reference %q: "+
				"pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed", image, image)
		}
		name := fmt.Sprintf("%s-6b7c9d8f4-%05d", app, p)
		ref := pod(name)
		ref.FieldPath = "spec.containers{" + app + "}"
		node := fmt.Sprintf("node-%d", p%4)
		at := Start.Add(time.Duration(rng.IntN(30_000)) * time.Millisecond)
		occs = append(occs, Occurrence{Time: at, Type: "Normal", Reason: "Scheduled", Note: "Successfully assigned shop/" + name + " to " + node,
			Regarding: pod(name), Controller: "default-scheduler", Instance: "default-scheduler-0"})
		backoff := 10 * time.Second
		for at = at.Add(time.Second); at.Before(Start.Add(time.Hour)); {
			failed := at.Add(time.Duration(500+rng.IntN(2000)) * time.Millisecond)
			occs = append(occs,
				kubelet(node, at, ref, "Normal", "Pulling", fmt.Sprintf("Pulling image %q", image)),
				kubelet(node, failed, ref, "Warning", "Failed", fmt.Sprintf("Failed to pull image %q: %s", image, cause)),
				kubelet(node, failed.Add(time.Millisecond), ref, "Warning", "Failed", "Error: ErrImagePull"))
			// The pod is synced again every 10 to 20 s while its image backs off.
			next := failed.Add(backoff)
			for t := failed.Add(podSync(rng)); t.Before(next); t = t.Add(podSync(rng)) {
				occs = append(occs,
					kubelet(node, t, ref, "Normal", "BackOff", fmt.Sprintf("Back-off pulling image %q", image)),
					kubelet(node, t.Add(time.Millisecond), ref, "Warning", "Failed", "Error: ImagePullBackOff"))
			}
			at, backoff = next, min(2*backoff, 5*time.Minute)
		}
	}
	return sortByTime(occs)
}

func podSync(rng *rand.Rand) time.Duration {
	return time.Duration(10_000+rng.IntN(10_000)) * time.Millisecond
}

// FailedScheduling: a Job of 100 GPU trainers and 20 pods whose node
// selector no node matches, pending in namespace ml for an hour on a cluster
// of a control-plane node and 4 CPU workers. The scheduler retries every
// unschedulable pod at least every 5 minutes and whenever a node is added
// (the autoscaler adds a GPU node at 6, 20, 21 and 40 minutes); its message
// counts nodes by reason, so it changes as the cluster grows. Each new GPU
// node takes the next 4 trainers, which report Scheduled.
func FailedScheduling() []Occurrence {
	rng := rand.New(rand.NewPCG(7, 7))
	adds := []time.Time{Start.Add(6 * time.Minute), Start.Add(20 * time.Minute), Start.Add(21 * time.Minute), Start.Add(40 * time.Minute)}
	gpus := func(at time.Time) (n int) {
		for n < len(adds) && !adds[n].After(at) {
			n++
		}
		return n
	}
	const taint = "1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }"
	sched := func(at time.Time, ref Ref, typ, reason, action, note string) Occurrence {
		return Occurrence{Time: at, Type: typ, Reason: reason, Action: action, Note: note, Regarding: ref, Controller: "default-scheduler", Instance: "default-scheduler-0"}
	}
	var occs []Occurrence
	for i := range 120 {
		trainer := i < 100
		name, created := fmt.Sprintf("train-resnet-%03d", i), Start.Add(time.Duration(i*40)*time.Millisecond)
		if !trainer {
			name, created = fmt.Sprintf("analytics-7f9c5d-%03d", i-100), Start.Add(2*time.Minute+time.Duration(i)*time.Second)
		}
		ref := podIn("ml", name)
		for at := created; at.Before(Start.Add(time.Hour)); {
			g := gpus(at)
			nodes := 5 + g
			if trainer && i/4 < g {
				occs = append(occs, sched(at, ref, "Normal", "Scheduled", "Binding", fmt.Sprintf("Successfully assigned ml/%s to gpu-node-%d", name, i/4)))
				break
			}
			msg := fmt.Sprintf("0/%d nodes are available: %s, %d Insufficient nvidia.com/gpu. preemption: 0/%d nodes are available: "+
				"1 Preemption is not helpful for scheduling, %d No preemption victims found for incoming pod.", nodes, taint, nodes-1, nodes, nodes-1)
			if !trainer {
				msg = fmt.Sprintf("0/%d nodes are available: %s, %d node(s) didn't match Pod's node affinity/selector. preemption: 0/%d nodes are available: "+
					"%d Preemption is not helpful for scheduling.", nodes, taint, nodes-1, nodes, nodes)
			}
			occs = append(occs, sched(at, ref, "Warning", "FailedScheduling", "Scheduling", msg))
			// Retried by the 5-minute flush of unschedulable pods (checked every
			// 30 s), or sooner when a node is added.
			next := at.Add(5*time.Minute + time.Duration(rng.IntN(30_000))*time.Millisecond)
			if g < len(adds) && adds[g].Before(next) {
				next = adds[g].Add(time.Duration(1000+rng.IntN(2000)) * time.Millisecond)
			}
			at = next
		}
	}
	return sortByTime(occs)
}

// Mixed interleaves the first minutes of six scenarios, each moved to a
// namespace of its own (uids follow) and shifted in time: a few thousand
// occurrences over ten minutes on many distinct objects, the load of the
// scale-out test, where series must spread over several collectors.
func Mixed() []Occurrence {
	parts := []struct {
		ns            string
		gen           func() []Occurrence
		shift, window time.Duration
	}{
		{"mixed-crashloop", Crashloop, 0, 10 * time.Minute},
		{"mixed-imagepull", ImagePull, 20 * time.Second, 10 * time.Minute},
		{"mixed-scheduling", FailedScheduling, 40 * time.Second, 10 * time.Minute},
		{"mixed-cronjob", CronJob, 10 * time.Second, 10 * time.Minute},
		{"mixed-replicaset", ReplicaSet, 3 * time.Minute, time.Hour},
		{"mixed-churn", func() []Occurrence { return churn(1000) }, 5 * time.Minute, time.Minute}, // 144 s of it
	}
	var occs []Occurrence
	for _, p := range parts {
		for _, o := range p.gen() {
			if !o.Time.Before(Start.Add(p.window)) {
				break // streams are in time order
			}
			occs = append(occs, moved(o, p.ns, p.shift))
		}
	}
	return sortByTime(occs)
}

// moved is o on objects of namespace ns, later by shift; the notes that name
// the namespace or a uid are rewritten so that they stay consistent.
func moved(o Occurrence, ns string, shift time.Duration) Occurrence {
	from := o.Regarding.Namespace
	move := func(r Ref) Ref {
		if r.Namespace == "" {
			return r
		}
		uid := uidOf(ns + "/" + r.Kind + "/" + r.Name)
		o.Note = strings.ReplaceAll(o.Note, r.UID, uid)
		r.Namespace, r.UID = ns, uid
		return r
	}
	o.Time = o.Time.Add(shift)
	o.Regarding = move(o.Regarding)
	if o.Related != nil {
		rel := move(*o.Related)
		o.Related = &rel
	}
	if from != "" {
		o.Note = strings.NewReplacer(" "+from+"/", " "+ns+"/", "_"+from+"(", "_"+ns+"(").Replace(o.Note)
	}
	return o
}
