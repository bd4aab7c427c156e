package yamlpos

import "go.yaml.in/yaml/v3"

// Cut places err, an error that stopped decoding the document (such as a
// bad duration, which the YAML library reports without a line), as
// Problems does, and removes the node at fault from the document, with
// its key, so that decoding the rest again goes past it and finds the
// problems after it. cut is false when nothing was removed: the error
// is not in one node below the top, and decoding again would stop at it
// again.
func (d *Doc) Cut(err error) (problems []Problem, cut bool) {
	if d == nil || d.root == nil {
		return []Problem{{Message: err.Error()}}, false
	}
	n, _, _, _, _ := innermostFailure(d.root, nil, d.into, "")
	problems = d.Problems(err)
	if n == nil || n == d.root {
		return problems, false
	}
	return problems, remove(d.root, n)
}

// remove deletes target, a mapping's value, together with its key from
// the tree under n, and reports whether it did. A list's item is left in
// place: removing it would renumber the items after it, and their
// problems would name the wrong ones.
func remove(n, target *yaml.Node) bool {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i+1] == target || n.Content[i] == target {
				n.Content = append(n.Content[:i], n.Content[i+2:]...)
				return true
			}
		}
	}
	for _, c := range n.Content {
		if remove(c, target) {
			return true
		}
	}
	return false
}
