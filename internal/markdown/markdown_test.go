package markdown

import (
	"slices"
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
