package config

// DefaultMerge is the fanout.merge format used when the key is not set.
const DefaultMerge = "json_array"

// MergeFormats lists the values fanout.merge accepts, the default first.
// Each names one merge.Merger in collector/fanout/internal/merge; a test there
// fails when this list and the formats there differ, so a new format is
// added in both places.
func MergeFormats() []string { return []string{DefaultMerge, "ndjson"} }
