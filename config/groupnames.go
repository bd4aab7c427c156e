package config

// Replica groups and backends without a group share one namespace: a
// backend without a group is a group of its own, named after it
// (GroupOf), and the fan-out's headers (X-Backends-Missing,
// X-Backends-Served-By) and the group_budget check name groups by that
// name. A group named like a backend outside it would therefore swallow
// that backend, and a client could not tell which of the two a name
// means. GroupNames keeps that namespace while backends are added one at
// a time, and says which of them would make a name ambiguous.

// GroupNames are the backend and group names of a pool being built,
// backend by backend. The zero value is empty and ready to use.
type GroupNames struct {
	// groupOf is the group key of each backend added, by name: empty for
	// a backend without a group.
	groupOf map[string]string
	// firstOf is the first backend added of each group that some backend
	// was given, by group.
	firstOf map[string]string
}

// GroupClash is a backend that would make a name mean both a group and a
// backend outside it.
type GroupClash struct {
	// Name is the contested name.
	Name string
	// Other is the backend already added that holds Name: the backend
	// named Name when the new backend's group is Name, or the first
	// member of the group named Name when the new backend is.
	Other string
	// ByGroup is true when the new backend's group is the contested name,
	// false when its own name is.
	ByGroup bool
}

// Clash reports whether a backend named name whose group key is group
// (empty for none) would clash with the backends added so far: its group
// is the name of a backend outside that group, or its name is the name of
// a group it is not in. Two backends of one name are not a clash here;
// names are unique before groups are looked at.
func (n *GroupNames) Clash(name, group string) (GroupClash, bool) {
	if group != "" {
		if otherGroup, ok := n.groupOf[group]; ok && otherGroup != group {
			return GroupClash{Name: group, Other: group, ByGroup: true}, true
		}
	}
	if first, ok := n.firstOf[name]; ok && group != name {
		return GroupClash{Name: name, Other: first}, true
	}
	return GroupClash{}, false
}

// Add records a backend named name whose group key is group (empty for
// none).
func (n *GroupNames) Add(name, group string) {
	if n.groupOf == nil {
		n.groupOf, n.firstOf = map[string]string{}, map[string]string{}
	}
	n.groupOf[name] = group
	if _, ok := n.firstOf[group]; group != "" && !ok {
		n.firstOf[group] = name
	}
}
