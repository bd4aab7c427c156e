// Package probegate holds what belongs to the repository as a whole rather
// than to one command or library: today, its release version.
package probegate

import (
	_ "embed"
	"strings"
)

// versionFile is the VERSION file next to this one, the release this tree
// is (or is becoming).
//
//go:embed VERSION
var versionFile string

// Version is the release version of this tree, from the VERSION file, such
// as 0.5.0: what a build shows when nothing stamped another.
func Version() string {
	return strings.TrimSpace(versionFile)
}
