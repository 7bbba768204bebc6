// list: selectors, the resourceVersion a list reads at, and limit and
// continue pagination (a continue token reads at its first page's
// revision, as etcd does, so 410 once that is compacted).

package apimodel

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// selection is what a list or watch keeps: a namespace ("" all), a field
// and a label selector.
type selection struct {
	namespace string
	fields    fields.Selector
	labels    labels.Selector
	fieldSet  func(runtime.Object) fields.Set
}

func (sel selection) keeps(key string, obj runtime.Object) bool {
	if ns, _ := splitKey(key); sel.namespace != "" && ns != sel.namespace {
		return false
	}
	return sel.fields.Matches(sel.fieldSet(obj)) && sel.labels.Matches(labels.Set(objectMeta(obj).GetLabels()))
}

// listOptions reads the request's ListOptions and its selection; a
// selector the API does not support is 400, as is a malformed option.
func (c *call) listOptions() (metav1.ListOptions, selection, error) {
	var opts metav1.ListOptions
	if err := scheme.ParameterCodec.DecodeParameters(c.query, corev1.SchemeGroupVersion, &opts); err != nil {
		return opts, selection{}, apierrors.NewBadRequest(err.Error())
	}
	sel := selection{namespace: c.info.ns, fields: fields.Everything(), labels: labels.Everything(), fieldSet: c.rt.fieldSet}
	if c.rt.resource == "namespaces" {
		sel.namespace = ""
	}
	if opts.FieldSelector != "" {
		fs, err := fields.ParseSelector(opts.FieldSelector)
		if err == nil {
			fs, err = fs.Transform(func(label, value string) (string, string, error) {
				l, err := c.rt.fieldLabel(label)
				return l, value, err
			})
		}
		if err != nil {
			return opts, selection{}, apierrors.NewBadRequest(err.Error())
		}
		sel.fields = fs
	}
	if opts.LabelSelector != "" {
		ls, err := labels.Parse(opts.LabelSelector)
		if err != nil {
			return opts, selection{}, apierrors.NewBadRequest(err.Error())
		}
		sel.labels = ls
	}
	return opts, sel, nil
}

// continueToken is the API server's continue token: the revision of the
// first page and the key to start after.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

func encodeContinue(rv int64, start string) string {
	b, _ := json.Marshal(continueToken{APIVersion: "meta.k8s.io/v1", ResourceVersion: rv, StartKey: start})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (continueToken, error) {
	var t continueToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &t)
	}
	// -1: continue at the current revision (the token a 410 answers).
	if err != nil || t.APIVersion != "meta.k8s.io/v1" || t.ResourceVersion == 0 || t.ResourceVersion < -1 {
		return t, apierrors.NewBadRequest(fmt.Sprintf("invalid continue token: continue key is not valid: %v", err))
	}
	return t, nil
}

// tooOldContinue is the 410 of a continue token whose revision was
// compacted.
const tooOldContinue = "The provided continue parameter is too old to display a consistent list result. " +
	"You can start a new list without the continue parameter, or use the continue token in this response to " +
	"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
	"objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."

func (c *call) list() response {
	opts, sel, err := c.listOptions()
	if err != nil {
		return errorResponse(err)
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.maintainLocked()
	rv, start, err := c.listRevisionLocked(opts)
	if err != nil {
		return errorResponse(err)
	}
	objs := c.s.st.snapshot(c.rt.store, rv, func(key string, o runtime.Object) bool {
		return key >= start && sel.keeps(key, o)
	})
	items := objs
	var cont string
	var remaining *int64
	limit := opts.Limit
	if limit > 0 && int64(len(objs)) > limit {
		items = objs[:limit]
		last := objectMeta(items[len(items)-1])
		cont = encodeContinue(rv, c.key(last.GetName())+"\x00")
		if sel.fields.Empty() && sel.labels.Empty() {
			n := int64(len(objs)) - limit
			remaining = &n
		}
	}
	return jsonResponse(http.StatusOK, c.listBody(items, rv, cont, remaining))
}

// listRevisionLocked is the revision a list reads at and the key it
// starts from.
func (c *call) listRevisionLocked(opts metav1.ListOptions) (int64, string, error) {
	st := c.s.st
	if opts.Continue != "" {
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return 0, "", apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		t, err := decodeContinue(opts.Continue)
		if err != nil {
			return 0, "", err
		}
		if t.ResourceVersion == -1 {
			return st.rv, t.StartKey, nil
		}
		if t.ResourceVersion < st.compacted {
			status := apierrors.NewResourceExpired(tooOldContinue)
			status.ErrStatus.ListMeta.Continue = encodeContinue(-1, t.StartKey)
			return 0, "", status
		}
		return t.ResourceVersion, t.StartKey, nil
	}
	if opts.ResourceVersion == "" || opts.ResourceVersion == "0" {
		return st.rv, "", nil
	}
	rv, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	if err != nil || rv <= 0 {
		return 0, "", apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %s", opts.ResourceVersion))
	}
	if rv > st.rv {
		return 0, "", tooLargeResourceVersion(rv, st.rv)
	}
	if opts.ResourceVersionMatch != metav1.ResourceVersionMatchExact {
		return st.rv, "", nil // not older than rv: the current state
	}
	if rv < st.compacted {
		return 0, "", apierrors.NewResourceExpired("The resourceVersion for the provided list is too old.")
	}
	return rv, "", nil
}

// tooLargeResourceVersion is the API server's answer to a resourceVersion
// it has not reached (after waiting for it, which the model does not).
func tooLargeResourceVersion(asked, current int64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", asked, current), 0)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return err
}

// listBody is the API's list object holding items.
func (c *call) listBody(items []runtime.Object, rv int64, cont string, remaining *int64) any {
	out := make([]json.RawMessage, len(items))
	for i, o := range items {
		b, _ := json.Marshal(c.rt.fromStored(o)) // items carry no kind, as the API server's
		out[i] = b
	}
	return struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ListMeta   `json:"metadata"`
		Items           []json.RawMessage `json:"items"`
	}{
		TypeMeta: metav1.TypeMeta{APIVersion: apiVersionOf(c.rt.gv), Kind: c.rt.listKind()},
		Metadata: metav1.ListMeta{ResourceVersion: strconv.FormatInt(rv, 10), Continue: cont, RemainingItemCount: remaining},
		Items:    out,
	}
}
