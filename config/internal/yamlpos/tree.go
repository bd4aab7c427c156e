// Package yamlpos places problems in a YAML document decoded into a Go
// struct: it finds the line of a field path (such as
// backends[1].health_probe.timeout), and turns the YAML library's errors,
// which carry a line at best, into problems that name the field and say
// what would be valid. It knows nothing of what the document configures:
// the Go type to decode into, and words for the values of types the
// library does not know, are given to New.
package yamlpos

import (
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Doc is a YAML document's node tree and the Go type it decodes into.
// A nil *Doc is an empty document, in which no field has a line.
type Doc struct {
	root   *yaml.Node
	into   reflect.Type
	shapes map[reflect.Type]Shape
}

// New is the document whose top-level node is root, decoded into a value
// of type into. shapes describes the values of types the YAML library
// cannot name, for the problems Problems makes.
func New(root *yaml.Node, into reflect.Type, shapes map[reflect.Type]Shape) *Doc {
	return &Doc{root: root, into: into, shapes: shapes}
}

// Line is the line of the field at path (such as
// backends[1].health_probe.timeout), or of its deepest ancestor present in
// the document when the field itself is not; exact says whether the field
// itself was found. A key's line is that of the key, a list item's that of
// its first line.
func (d *Doc) Line(path string) (line int, exact bool) {
	if d == nil || d.root == nil {
		return 0, false
	}
	node := d.root
	for _, seg := range splitPath(path) {
		next, at := child(node, seg)
		if next == nil {
			return line, false
		}
		node, line = next, at
	}
	return line, true
}

// child steps from node to the value of key seg (or to item seg when seg
// is an index), returning the line the step lands on.
func child(node *yaml.Node, seg string) (*yaml.Node, int) {
	if i, err := strconv.Atoi(seg); err == nil {
		if node.Kind != yaml.SequenceNode || i < 0 || i >= len(node.Content) {
			return nil, 0
		}
		return node.Content[i], node.Content[i].Line
	}
	if node.Kind != yaml.MappingNode {
		return nil, 0
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == seg {
			return node.Content[i+1], node.Content[i].Line
		}
	}
	return nil, 0
}

// splitPath turns "backends[1].health_probe.timeout" into
// ["backends", "1", "health_probe", "timeout"].
func splitPath(path string) []string {
	if path == "" {
		return nil
	}
	path = strings.ReplaceAll(path, "[", ".")
	path = strings.ReplaceAll(path, "]", "")
	return strings.Split(path, ".")
}

// joinKey appends a mapping key to a field path.
func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index is the field path of item i of the list at path, such as
// backends[1].
func Index(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// visitFunc is called for every node of the tree with its field path and
// the Go type it decodes into (nil when unknown). Returning false stops
// the walk.
type visitFunc func(n *yaml.Node, t reflect.Type, path string) bool

// walk visits n and everything below it in document order, tracking the
// Go type each node decodes into. It reports whether the walk completed.
func walk(n *yaml.Node, t reflect.Type, path string, visit visitFunc) bool {
	if !visit(n, t, path) {
		return false
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			if !walk(n.Content[i+1], fieldType(t, key), joinKey(path, key), visit) {
				return false
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if !walk(c, elemType(t), Index(path, i), visit) {
				return false
			}
		}
	}
	return true
}

// fieldType is the type a mapping of type t decodes key into: a struct
// field found by its yaml tag (looking through inlined structs), or a
// map's element type. Nil when unknown.
func fieldType(t reflect.Type, key string) reflect.Type {
	t = deref(t)
	if t == nil {
		return nil
	}
	switch t.Kind() {
	case reflect.Map:
		return t.Elem()
	case reflect.Struct:
		var found reflect.Type
		eachYAMLField(t, func(name string, ft reflect.Type) {
			if name == key && found == nil {
				found = ft
			}
		})
		return found
	}
	return nil
}

// elemType is the type the items of a list of type t decode into.
func elemType(t reflect.Type) reflect.Type {
	t = deref(t)
	if t == nil || (t.Kind() != reflect.Slice && t.Kind() != reflect.Array) {
		return nil
	}
	return t.Elem()
}

// Keys lists the keys a mapping of type t accepts, in field order, those
// of inlined structs included; nil when t is not a struct.
func Keys(t reflect.Type) []string {
	t = deref(t)
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	eachYAMLField(t, func(name string, _ reflect.Type) { keys = append(keys, name) })
	return keys
}

// eachYAMLField calls f with the YAML key and type of every field of the
// struct type t the YAML decoder fills, inlined structs included.
func eachYAMLField(t reflect.Type, f func(name string, ft reflect.Type)) {
	for i := range t.NumField() {
		field := t.Field(i)
		if !field.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(field.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			if inner := deref(field.Type); inner != nil && inner.Kind() == reflect.Struct {
				eachYAMLField(inner, f)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(field.Name)
		}
		f(name, field.Type)
	}
}

// deref strips pointers from t.
func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}
