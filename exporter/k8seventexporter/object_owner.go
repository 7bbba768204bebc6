package k8seventexporter // import "github.com/k8sevents/otel-k8sevents/exporter/k8seventexporter"

import (
	"errors"
	"fmt"

	"github.com/k8sevents/otel-k8sevents/internal/k8sevent"
)

// maxRenames bounds how many other names a record tries when the names
// before are taken by objects that are not its own. Only a writer that
// created objects under the record's derived names can take them, so a
// second conflict is already hostile; past the bound the record is dropped.
const maxRenames = 2

// errNotOurs: the object under the record's name exists and is not the
// record's (another controller's, about another object, another reason).
var errNotOurs = errors.New("the object under this name is not this record's")

// errNameTaken marks a record dropped because every name it may use is
// held by an object that is not its own (permanent_failures{reason=conflict}).
var errNameTaken = errors.New("every name this record may use belongs to another object")

// owner is what makes an existing Event object a record's own: the object
// it regards, its reason and the controller that reports it. The exporter
// patches an existing object only when its owner matches the record's, so
// an app cannot rewrite another Event (kubelet's, another controller's, one
// about another pod) by naming it in k8s.event.name.
type owner struct {
	kind, namespace, name, uid string // the regarding object
	reason                     string
	controller                 string // reportingController as written
	instance                   string // reportingInstance, when it names the sender (keep_record_instance)
}

// ownerOf is ev's owner; bySender adds its reporting instance, which then
// names the client the record came from: one client's record never takes
// over another client's object.
func ownerOf(ev *k8sevent.Event, bySender bool) owner {
	r := ev.Regarding
	o := owner{kind: r.Kind, namespace: r.Namespace, name: r.Name, uid: r.UID, reason: ev.Reason, controller: ev.ReportingController}
	if bySender {
		o.instance = ev.ReportingInstance
	}
	return o
}

// matches compares every field; the uid only when both have one (a record
// may not know its object's uid, and an object written without one does
// not tell).
func (o owner) matches(p owner) bool {
	uid := o.uid == p.uid || o.uid == "" || p.uid == ""
	return uid && o.kind == p.kind && o.namespace == p.namespace && o.name == p.name &&
		o.reason == p.reason && o.controller == p.controller && o.instance == p.instance
}

// renamed is the n-th (1-based) other name of a record whose own name is
// held by an object that is not its own: deterministic in what identifies
// the record's object, so every record of one series (and a restarted
// exporter) finds the same object under it.
func renamed(ev *k8sevent.Event, o owner, original string, n int) string {
	seed := fmt.Sprintf("%s\x00%s\x00%s\x00%s\x00%s\x00%s\x00%d", original, o.kind, o.namespace, o.name, o.reason, o.controller, n)
	if o.instance != "" {
		seed += "\x00" + o.instance
	}
	return k8sevent.GenerateName(o.name, ev.FirstTime(), seed)
}
