// Package hostname is how probegate compares host names: DNS names are
// case-insensitive, and a fully qualified name's trailing dot names the
// same host. The admin listener's guard (a request's Host against the
// listener's own name) and the fan-out's self-detection (a backend's
// host against this replica's names) compare by it, so that a name one
// of them takes for probegate's own the other does too.
package hostname

import "strings"

// Normal is h as names compare: lower case, without the root's trailing
// dot.
func Normal(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}
