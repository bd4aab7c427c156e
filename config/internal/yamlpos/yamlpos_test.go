package yamlpos

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"
)

// level decodes itself, so the YAML library cannot name what it wants.
type level int

func (l *level) UnmarshalYAML(n *yaml.Node) error {
	if n.Value != "low" && n.Value != "high" {
		return errors.New("not a level")
	}
	*l = level(len(n.Value))
	return nil
}

type doc struct {
	Server struct {
		Port  int   `yaml:"port"`
		Level level `yaml:"level"`
	} `yaml:"server"`
	Items []struct {
		Name string `yaml:"name"`
	} `yaml:"items"`
}

var shapes = map[reflect.Type]Shape{reflect.TypeFor[level](): {Words: "low or high", Hint: "want low or high"}}

// decode decodes data into a doc as a configuration loader would, and
// returns the document and the problems of the decoding error.
func decode(t *testing.T, data string) (*Doc, []Problem) {
	t.Helper()
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(data), &root); err != nil {
		t.Fatal(err)
	}
	d := New(root.Content[0], reflect.TypeFor[doc](), shapes)
	dec := yaml.NewDecoder(bytes.NewReader([]byte(data)))
	dec.KnownFields(true)
	if err := dec.Decode(new(doc)); err != nil {
		return d, d.Problems(err)
	}
	return d, nil
}

func TestLine(t *testing.T) {
	d, _ := decode(t, "server:\n  port: 1\nitems:\n  - name: a\n  -\n    name: b\n")
	for _, c := range []struct {
		path  string
		line  int
		exact bool
	}{
		{"server.port", 2, true},
		{Index("items", 1) + ".name", 6, true},
		{Index("items", 1), 6, true},
		{"server.level", 1, false},
		{"nothing", 0, false},
	} {
		if line, exact := d.Line(c.path); line != c.line || exact != c.exact {
			t.Errorf("Line(%q) = %d, %v; want %d, %v", c.path, line, exact, c.line, c.exact)
		}
	}
	if line, exact := (*Doc)(nil).Line("server"); line != 0 || exact {
		t.Errorf("nil Doc: Line = %d, %v", line, exact)
	}
}

// TestProblems checks that each kind of decoding error names its line and
// field and says what would be valid, in the document's own terms.
func TestProblems(t *testing.T) {
	for _, c := range []struct{ data string }{
		{"server:\n  prot: 1\n"},
		{"server:\n  port: x\n"},
		{"items:\n  - name: a\n  - name: [b]\n"},
		{"server:\n  level: medium\n"},
		{"server:\n  level: [low]\n"},
	} {
		_, got := decode(t, c.data)
		want := map[string]Problem{
			"server:\n  prot: 1\n":                 {2, "server.prot", `unknown key "prot" (did you mean "port"?); valid keys: port, level`},
			"server:\n  port: x\n":                 {2, "server.port", `want an integer, got "x"`},
			"items:\n  - name: a\n  - name: [b]\n": {3, "items[1].name", "want a string, got a list"},
			"server:\n  level: medium\n":           {2, "server.level", "not a level: want low or high"},
			"server:\n  level: [low]\n":            {2, "server.level", "not a level: want low or high"},
		}[c.data]
		if !slices.Equal(got, []Problem{want}) {
			t.Errorf("%q: problems %+v; want %+v", c.data, got, want)
		}
	}
}

func TestSyntax(t *testing.T) {
	data := []byte("server:\n  port: 1\n\tlevel: low\n")
	var n yaml.Node
	err := yaml.Unmarshal(data, &n)
	if err == nil {
		t.Fatal("no syntax error")
	}
	if p := Syntax(data, err); p.Line != 3 || p.Field != "" {
		t.Errorf("Syntax = %+v; want line 3, no field", p)
	}
}

// TestKeys: a struct's keys are its yaml tags in field order, through
// inlined structs and pointers; anything but a struct has none.
func TestKeys(t *testing.T) {
	type Inner struct {
		B int `yaml:"b"`
	}
	type outer struct {
		A     int `yaml:"a"`
		Inner `yaml:",inline"`
		Skip  int `yaml:"-"`
		Plain int
	}
	if got, want := Keys(reflect.TypeFor[*outer]()), []string{"a", "b", "plain"}; !slices.Equal(got, want) {
		t.Errorf("Keys = %v; want %v", got, want)
	}
	if got := Keys(reflect.TypeFor[[]outer]()); got != nil {
		t.Errorf("Keys of a list = %v; want none", got)
	}
}
