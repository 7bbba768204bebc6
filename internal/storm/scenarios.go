package storm

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"
)

// Start is when every scenario begins.
var Start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Scenarios are the built-in storms by name.
var Scenarios = map[string]func() []Occurrence{
	"crashloop":  Crashloop,
	"cronjob":    CronJob,
	"replicaset": ReplicaSet,
	"churn":      Churn,
}

func pod(name string) Ref {
	return Ref{Kind: "Pod", Namespace: "shop", Name: name, UID: uidOf(name), APIVersion: "v1"}
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

// CronJob is the case of seeds/003: a CronJob running every minute for two
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
func Churn() []Occurrence {
	const pods = 50_000
	occs := make([]Occurrence, 0, 2*pods)
	step := 2 * time.Hour / pods
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
