package discovery

// The reasons a discovered target is not a backend, the values of
// probegate_discovery_dropped_targets_total's reason label and of the
// discovery view's.
const (
	// dropRelabel is a target that relabel_configs dropped.
	dropRelabel = "relabel"
	// dropInvalid is a target whose labels do not make a backend, such
	// as an __address__ that is not host:port.
	dropInvalid = "invalid"
	// dropNameClash is a backend whose name a static backend, or one an
	// earlier target or mechanism found, already has; or one whose name or
	// group would mean both a replica group and a backend outside it.
	dropNameClash = "name_clash"
	// dropLimit is a backend beyond max_discovered_backends.
	dropLimit = "limit"
	// dropLoop is a target that points at one of probegate's own listeners.
	dropLoop = "loop"
)

// dropReasons are every reason, in the order they are shown.
var dropReasons = []string{dropRelabel, dropInvalid, dropNameClash, dropLimit, dropLoop}

// maxShownDropped bounds the dropped targets a source keeps for the
// discovery view: a source that lists millions of bad targets costs their
// count, not their labels.
const maxShownDropped = 1000

// maxExamples bounds the invalid targets quoted in the summary line of
// an update.
const maxExamples = 3
