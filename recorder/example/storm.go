package main

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// occurrence is one event the fake controller reports, in the JSON shape
// of the otel-k8sevents stream files (one per line with -print), so that a
// test can check it is the project's crashloop storm.
type occurrence struct {
	Time       time.Time `json:"time"`
	Type       string    `json:"type"`
	Reason     string    `json:"reason"`
	Action     string    `json:"action,omitempty"`
	Note       string    `json:"note"`
	Regarding  ref       `json:"regarding"`
	Related    *ref      `json:"related,omitempty"`
	Controller string    `json:"controller"`
	Instance   string    `json:"instance"`
}

type ref struct {
	Kind            string `json:"kind"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name"`
	UID             string `json:"uid,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	FieldPath       string `json:"fieldPath,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// reference is r as the object reference a controller holds (kubelet
// names the container by the field path).
func (r *ref) reference() *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: r.Kind, APIVersion: r.APIVersion, Namespace: r.Namespace, Name: r.Name,
		UID: types.UID(r.UID), FieldPath: r.FieldPath, ResourceVersion: r.ResourceVersion}
}

// stormStart is when the storm's clock begins; only the gaps matter.
var stormStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// crashloop is the crashloop storm: 20 pods whose container exits at start,
// for two hours, with kubelet's restart back-off (10 s doubling to 5 min).
// Each restart is reported as Pulled, Created, Started, and while backing
// off kubelet reports BackOff on every pod sync (about every 10 s). The
// same seed gives the same storm on every run.
func crashloop() []occurrence {
	rng := rand.New(rand.NewPCG(1, 1))
	var occs []occurrence
	for p := range 20 {
		name := fmt.Sprintf("checkout-7d9f8-%05d", p)
		pod := ref{Kind: "Pod", Namespace: "shop", Name: name, UID: uidOf(name), APIVersion: "v1", FieldPath: "spec.containers{checkout}"}
		node := fmt.Sprintf("node-%d", p%4)
		emit := func(at time.Time, typ, reason, note string) {
			occs = append(occs, occurrence{Time: at, Type: typ, Reason: reason, Note: note, Regarding: pod, Controller: "kubelet", Instance: node})
		}
		at := stormStart.Add(time.Duration(rng.IntN(60)) * time.Second)
		backoff := 10 * time.Second
		for at.Before(stormStart.Add(2 * time.Hour)) {
			emit(at, "Normal", "Pulled", `Container image "shop/checkout:1.4.2" already present on machine`)
			emit(at.Add(100*time.Millisecond), "Normal", "Created", "Created container checkout")
			emit(at.Add(300*time.Millisecond), "Normal", "Started", "Started container checkout")
			for t := at.Add(2 * time.Second); t.Before(at.Add(backoff)); t = t.Add(10 * time.Second) {
				emit(t, "Warning", "BackOff", fmt.Sprintf("Back-off restarting failed container checkout in pod %s_shop(%s)", name, pod.UID))
			}
			at = at.Add(backoff + time.Duration(rng.IntN(3000))*time.Millisecond)
			backoff = min(2*backoff, 5*time.Minute)
		}
	}
	sort.SliceStable(occs, func(i, j int) bool { return occs[i].Time.Before(occs[j].Time) })
	return occs
}

// uidOf is a stable made-up UID (FNV-1a of the name, in UUID layout).
func uidOf(name string) string {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", uint32(h>>32), uint16(h>>16), uint16(h), uint16(h>>48), h&0xffffffffffff)
}
