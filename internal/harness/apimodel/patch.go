// patch: the API server's patch handler. The stored object is shown in
// the request's API version, patched there with the server's own libraries
// (strategicpatch for strategic merge patches, evanphx/json-patch for
// JSON merge and JSON patches), read back, and updated as a PUT of the
// result would be (a resourceVersion the patch states is a precondition).

package apimodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// maxJSONPatchOperations is the API server's limit of operations in one
// JSON patch.
const maxJSONPatchOperations = 10000

func (c *call) patch(contentType string) response {
	pt := types.PatchType(strings.TrimSpace(strings.Split(contentType, ";")[0]))
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
	default:
		return errorResponse(apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", c.rt.groupResource(), c.info.name,
			fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s",
				types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType), 0, false))
	}
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	c.s.maintainLocked()
	old := c.s.st.get(c.rt.store, c.key(c.info.name))
	if old == nil {
		return errorResponse(apierrors.NewNotFound(c.rt.groupResource(), c.info.name))
	}
	current := c.rt.fromStored(old)
	current.GetObjectKind().SetGroupVersionKind(c.rt.gv.WithKind(c.rt.kind))
	patched, err := c.applyPatch(pt, current)
	if err != nil {
		return errorResponse(err)
	}
	if name := objectMeta(patched).GetName(); name != c.info.name {
		return errorResponse(apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", name, c.info.name)))
	}
	stored := c.rt.toStored(patched)
	out, err := c.updateLocked(stored, "patch")
	if err != nil {
		return errorResponse(err)
	}
	return c.objectResponse(http.StatusOK, out)
}

// applyPatch patches current (the API's object) and answers the result.
func (c *call) applyPatch(pt types.PatchType, current runtime.Object) (runtime.Object, error) {
	if pt == types.StrategicMergePatchType {
		return c.strategicPatch(current)
	}
	js, err := json.Marshal(current)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	// fieldValidation defaults to Warn: the patch is decoded strictly first
	// (its unknown or duplicate fields only warn, which the model drops).
	var strict any
	if pt == types.JSONPatchType {
		strict = &[]map[string]any{}
	} else {
		strict = &map[string]any{}
	}
	if _, err := kjson.UnmarshalStrict(c.body, strict); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	var patchedJS []byte
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(c.body)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if len(p) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
		}
		if patchedJS, err = p.Apply(js); err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
	case types.MergePatchType:
		patchedJS, err = jsonpatch.MergePatch(js, c.body)
		if err == jsonpatch.ErrBadJSONPatch {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
	}
	out := c.rt.newObject()
	if err := json.Unmarshal(patchedJS, out); err != nil {
		return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), string(patchedJS), err.Error())})
	}
	return out, nil
}

// strategicPatch applies a strategic merge patch as the API server's
// strategicPatchObject does.
func (c *call) strategicPatch(current runtime.Object) (runtime.Object, error) {
	original, err := runtime.DefaultUnstructuredConverter.ToUnstructured(current)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	patchMap := map[string]any{}
	if _, err := kjson.UnmarshalStrict(c.body, &patchMap); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	patched, err := strategicpatch.StrategicMergeMapPatch(original, patchMap, c.rt.newObject())
	if err != nil {
		return nil, strategicPatchError(err)
	}
	out := c.rt.newObject()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(patched, out); err != nil {
		return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), fmt.Sprintf("%+v", patchMap), err.Error())})
	}
	return out, nil
}

// strategicPatchError is interpretStrategicMergePatchError.
func strategicPatchError(err error) error {
	switch err {
	case mergepatch.ErrBadJSONDoc, mergepatch.ErrBadPatchFormatForPrimitiveList, mergepatch.ErrBadPatchFormatForRetainKeys,
		mergepatch.ErrBadPatchFormatForSetElementOrderList, mergepatch.ErrUnsupportedStrategicMergePatchFormat:
		return apierrors.NewBadRequest(err.Error())
	case mergepatch.ErrNoListOfLists, mergepatch.ErrPatchContentNotMatchRetainKeys:
		return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	}
	return err
}
