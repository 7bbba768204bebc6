// Package k8sauth is the Kubernetes identity an authenticator puts into
// client.Info.Auth and a receiver reads back to authorize the request:
// the user of a TokenReview's answer, which a SubjectAccessReview asks about.
package k8sauth

import (
	"maps"
	"slices"

	"go.opentelemetry.io/collector/client"
)

// The attribute names of an Identity in client.Info.Auth.
const (
	AttrUsername = "username" // string, e.g. system:serviceaccount:<namespace>:<name>
	AttrUID      = "uid"      // string
	AttrGroups   = "groups"   // []string
	AttrExtra    = "extra"    // map[string][]string
)

// Identity is an authenticated Kubernetes user.
type Identity struct {
	Username string
	UID      string
	Groups   []string
	Extra    map[string][]string
}

var _ client.AuthData = (*Identity)(nil)

// GetAttribute answers one of the Attr names; nil for any other.
func (id *Identity) GetAttribute(name string) any {
	switch name {
	case AttrUsername:
		return id.Username
	case AttrUID:
		return id.UID
	case AttrGroups:
		return slices.Clone(id.Groups)
	case AttrExtra:
		return maps.Clone(id.Extra)
	}
	return nil
}

// GetAttributeNames lists the Attr names.
func (*Identity) GetAttributeNames() []string {
	return []string{AttrUsername, AttrUID, AttrGroups, AttrExtra}
}

// FromAuth reads an Identity from what an authenticator put into
// client.Info.Auth (any authenticator that answers the Attr names with
// their types); false when there is none or it names no user.
func FromAuth(auth client.AuthData) (Identity, bool) {
	if auth == nil {
		return Identity{}, false
	}
	if id, ok := auth.(*Identity); ok {
		return *id, id.Username != ""
	}
	var id Identity
	id.Username, _ = auth.GetAttribute(AttrUsername).(string)
	id.UID, _ = auth.GetAttribute(AttrUID).(string)
	id.Groups, _ = auth.GetAttribute(AttrGroups).([]string)
	id.Extra, _ = auth.GetAttribute(AttrExtra).(map[string][]string)
	return id, id.Username != ""
}
