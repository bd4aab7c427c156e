package yamlpos

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong in a document.
type Problem struct {
	// Line is the 1-based line, 0 when unknown.
	Line int
	// Field is the path of the offending key, such as
	// backends[1].health_probe.timeout; empty for a syntax error.
	Field string
	// Message says what is wrong and what would be valid.
	Message string
}

// Shape says in words what a value of a Go type looks like, for a type
// the YAML library cannot name because it decodes itself.
type Shape struct {
	// Words is what a value looks like, such as "a duration such as 5s",
	// for messages of the form "want <Words>, got ...".
	Words string
	// Hint, when not empty, is added as ": <Hint>" to the errors of the
	// type's UnmarshalYAML, for a type whose errors do not say what would
	// be valid.
	Hint string
}

// The messages of the YAML library, which this file turns into problems
// that name the field and say what would be valid.
var (
	syntaxErrorRE     = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	typeErrorLineRE   = regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownFieldRE    = regexp.MustCompile(`^field (.+) not found in type `)
	duplicateKeyRE    = regexp.MustCompile(`^mapping key (".*") already defined at line (\d+)$`)
	cannotUnmarshalRE = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into ")
)

// parserProblems are the YAML parser's messages (as opposed to its
// scanner's), for which the library reports the line counting from 0.
var parserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected <stream-start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// Syntax is the problem of a YAML syntax error err in data, on the line
// at fault. The library leaves the line out when it is the first, so a
// first line that fails to parse on its own is named.
func Syntax(data []byte, err error) Problem {
	msg := err.Error()
	if m := syntaxErrorRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if slices.Contains(parserProblems, m[2]) {
			line++
		} else {
			line = scannerProblemLine(data, line, m[2])
		}
		return Problem{Line: line, Message: "invalid YAML: " + m[2]}
	}
	p := Problem{Message: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	if yaml.Unmarshal(first, new(yaml.Node)) != nil {
		p.Line = 1
	}
	return p
}

// scannerProblemLine is the line a YAML scanner error is on. When the
// scanner fails inside a construct, such as a plain scalar whose next line
// is indented with a tab, the library names the line the construct began
// on, not the line at fault. The shortest run of lines from the start of
// data, ending on or after that line, that fails with the same problem
// ends on the line at fault: for a tab, the line that holds it.
func scannerProblemLine(data []byte, reported int, problem string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	end := 0
	for n, l := range lines {
		end += len(l)
		if n+1 < reported {
			continue
		}
		err := yaml.Unmarshal(data[:end], new(yaml.Node))
		if err != nil && strings.HasSuffix(err.Error(), ": "+problem) {
			return n + 1
		}
	}
	return reported
}

// Problems turns an error from decoding the document into problems with
// lines and field paths.
func (d *Doc) Problems(err error) []Problem {
	var typeErr *yaml.TypeError
	if errors.As(err, &typeErr) {
		problems := make([]Problem, 0, len(typeErr.Errors))
		for _, e := range typeErr.Errors {
			problems = append(problems, d.typeProblem(e))
		}
		return problems
	}
	// An error from an UnmarshalYAML method (a bad duration, size or
	// http_client_config) stops the decoder and carries no line: find the
	// innermost node that fails to decode on its own.
	if p, ok := d.locate(err); ok {
		return p
	}
	return []Problem{{Message: err.Error()}}
}

// typeProblem turns one of the YAML library's "line N: ..." messages into
// a problem.
func (d *Doc) typeProblem(e string) Problem {
	m := typeErrorLineRE.FindStringSubmatch(e)
	if m == nil {
		return Problem{Message: e}
	}
	line, _ := strconv.Atoi(m[1])
	msg := m[2]
	p := Problem{Line: line, Message: msg}
	if sub := unknownFieldRE.FindStringSubmatch(msg); sub != nil {
		if path, parent, ok := d.findKey(line, sub[1]); ok {
			p.Field = path
			p.Message = unknownKeyMessage(sub[1], Keys(parent))
		}
	} else if sub := duplicateKeyRE.FindStringSubmatch(msg); sub != nil {
		key, err := strconv.Unquote(sub[1])
		if path, _, ok := d.findKey(line, key); err == nil && ok {
			p.Field = path
			p.Message = fmt.Sprintf("%q is set twice; it is also set at line %s", key, sub[2])
		}
	} else if sub := cannotUnmarshalRE.FindStringSubmatch(msg); sub != nil {
		if n, t, path, ok := d.findValue(line, sub[1], sub[2]); ok {
			p.Field = path
			p.Message = fmt.Sprintf("want %s, got %s", d.describeType(t), describeNode(n))
		}
	}
	return p
}

// findKey finds the mapping key named key on the given line, returning its
// field path and the Go type of the mapping that holds it.
func (d *Doc) findKey(line int, key string) (path string, parent reflect.Type, ok bool) {
	walk(d.root, d.into, "", func(n *yaml.Node, t reflect.Type, at string) bool {
		if n.Kind != yaml.MappingNode {
			return true
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Line == line && k.Value == key {
				path, parent, ok = joinKey(at, key), t, true
				return false
			}
		}
		return true
	})
	return path, parent, ok
}

// findValue finds the node on the given line that the YAML library could
// not decode: a mapping or list by its tag, a scalar by its (possibly
// shortened) text.
func (d *Doc) findValue(line int, tag, shown string) (node *yaml.Node, t reflect.Type, path string, ok bool) {
	prefix := strings.TrimSuffix(shown, "...")
	walk(d.root, d.into, "", func(n *yaml.Node, nt reflect.Type, at string) bool {
		if n.Line != line {
			return true
		}
		var match bool
		switch tag {
		case "map":
			match = n.Kind == yaml.MappingNode
		case "seq":
			match = n.Kind == yaml.SequenceNode
		default:
			match = n.Kind == yaml.ScalarNode && strings.HasPrefix(n.Value, prefix)
		}
		if match {
			node, t, path, ok = n, nt, at, true
			return false
		}
		return true
	})
	return node, t, path, ok
}

// locate finds where an error without a line comes from by decoding
// subtrees on their own, down to the innermost one that still fails.
func (d *Doc) locate(err error) ([]Problem, bool) {
	n, key, t, path, found := innermostFailure(d.root, nil, d.into, "")
	if n == nil {
		return nil, false
	}
	var typeErr *yaml.TypeError
	if errors.As(found, &typeErr) {
		return d.Problems(found), true
	}
	at := n
	if key != nil {
		at = key
	}
	return []Problem{{Line: at.Line, Field: path, Message: d.withHint(t, found)}}, true
}

// innermostFailure decodes n into a new value of type t; when that fails it
// tries n's children and returns the innermost failing node, the key that
// names it, its type, its field path and the error.
func innermostFailure(n, key *yaml.Node, t reflect.Type, path string) (*yaml.Node, *yaml.Node, reflect.Type, string, error) {
	if t == nil {
		return nil, nil, nil, "", nil
	}
	err := n.Decode(reflect.New(t).Interface())
	if err == nil {
		return nil, nil, nil, "", nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if fn, fk, ft, fp, ferr := innermostFailure(n.Content[i+1], k, fieldType(t, k.Value), joinKey(path, k.Value)); fn != nil {
				return fn, fk, ft, fp, ferr
			}
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			if fn, fk, ft, fp, ferr := innermostFailure(item, nil, elemType(t), Index(path, i)); fn != nil {
				return fn, fk, ft, fp, ferr
			}
		}
	}
	return n, key, t, path, err
}

// withHint adds what a valid value looks like to errors that do not say.
func (d *Doc) withHint(t reflect.Type, err error) string {
	if hint := d.shapes[deref(t)].Hint; hint != "" {
		return err.Error() + ": " + hint
	}
	return err.Error()
}

// describeType says in words what a value of type t looks like in YAML.
func (d *Doc) describeType(t reflect.Type) string {
	t = deref(t)
	if t == nil {
		return "another type"
	}
	if words := d.shapes[t].Words; words != "" {
		return words
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping of keys to values"
	}
	return t.String()
}

// describeNode says in words what a YAML node holds.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return strconv.Quote(n.Value)
}

// unknownKeyMessage names the unknown key, the closest valid key when one
// is a likely typo, and every valid key.
func unknownKeyMessage(key string, valid []string) string {
	msg := fmt.Sprintf("unknown key %q", key)
	if len(valid) == 0 {
		return msg
	}
	best, bestDistance := "", len(key)/3+2
	for _, v := range valid {
		if d := editDistance(key, v); d < bestDistance {
			best, bestDistance = v, d
		}
	}
	if best != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", best)
	}
	return msg + "; valid keys: " + strings.Join(valid, ", ")
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
