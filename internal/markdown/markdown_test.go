package markdown

import (
	"slices"
	"strings"
	"testing"
)

func TestCodeBlocks(t *testing.T) {
	doc := "# title\n\n```yaml file_sd\n- targets: [a]\n```\n\ntext\n\n    indented\n\n```sh\nmake run\n\n```\n```\nopen"
	got := CodeBlocks(doc)
	want := []CodeBlock{
		{Info: "yaml file_sd", Text: "- targets: [a]\n", Line: 3},
		{Info: "sh", Text: "make run\n\n", Line: 11},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("CodeBlocks = %#v, want %#v", got, want)
	}
	if got[0].Lang() != "yaml" || got[0].Kind() != "file_sd" || got[1].Lang() != "sh" || got[1].Kind() != "" {
		t.Errorf("Lang, Kind = %q %q, %q %q", got[0].Lang(), got[0].Kind(), got[1].Lang(), got[1].Kind())
	}
}

func TestTables(t *testing.T) {
	data := "text\n\n| name | what |\n|---|:--|\n| `a` | one \\| two |\n| `b`, `c` | `x|y` |\nafter\n```\n| not | a |\n|---|---|\n```\n"
	tables := Tables(data)
	if len(tables) != 1 {
		t.Fatalf("%d tables, want 1", len(tables))
	}
	tb := tables[0]
	if tb.Line != 3 || strings.Join(tb.Header, ",") != "name,what" || len(tb.Rows) != 2 {
		t.Fatalf("table %+v", tb)
	}
	if got := tb.Column("what"); got[0] != "one | two" || got[1] != "`x|y`" {
		t.Errorf("column what = %q", got)
	}
	if got := CodeSpans(tb.Rows[1][0]); strings.Join(got, ",") != "b,c" {
		t.Errorf("code spans %q", got)
	}
}
