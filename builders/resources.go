// This file turns the short resource maps of test tables into ResourceLists.

package builders

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ResourceList turns {"cpu": "500m"} into a v1.ResourceList. It panics on a
// malformed quantity, which in a test table is a typo to fix.
func ResourceList(m map[v1.ResourceName]string) v1.ResourceList {
	if m == nil {
		return nil
	}
	rl := make(v1.ResourceList, len(m))
	for name, q := range m {
		rl[name] = resource.MustParse(q)
	}
	return rl
}

// overcommitAllowed tells whether a container may request more of name than
// its limit, as upstream's helper of that name: native resources may, except
// huge pages; extended resources (example.com/gpu) may not.
func overcommitAllowed(name v1.ResourceName) bool {
	s := string(name)
	native := !strings.Contains(s, "/") || strings.Contains(s, v1.ResourceDefaultNamespacePrefix)
	return native && !strings.HasPrefix(s, v1.ResourceHugePagesPrefix)
}
