package merge

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/probegate/probegate/config"
)

func bodiesOf(bodies ...string) [][]byte {
	out := make([][]byte, len(bodies))
	for i, b := range bodies {
		out[i] = []byte(b)
	}
	return out
}

func TestLookup(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Merger
	}{{"", jsonArray{}}, {"json_array", jsonArray{}}, {"ndjson", ndjson{}}} {
		got, err := Lookup(c.in)
		if err != nil || got != c.want {
			t.Errorf("Lookup(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	_, err := Lookup("csv")
	if err == nil || !strings.Contains(err.Error(), `"csv"`) || !strings.Contains(err.Error(), "json_array, ndjson") {
		t.Errorf("Lookup(csv) error = %v; want one naming the value and the valid ones", err)
	}
	if (jsonArray{}).ContentType() != "application/json" || (ndjson{}).ContentType() != "application/x-ndjson" {
		t.Errorf("content types %q, %q", (jsonArray{}).ContentType(), (ndjson{}).ContentType())
	}
}

// TestFormatsAreConfigs checks that the formats here and the names
// configuration validation accepts are the same list with the same
// default, and that every name selects the merger that carries it: a
// format added in one place only fails here.
func TestFormatsAreConfigs(t *testing.T) {
	if got, want := names(), config.MergeFormats(); !slices.Equal(got, want) {
		t.Errorf("merge formats %v, config.MergeFormats() %v: want the same names in the same order", got, want)
	}
	if m, err := Lookup(""); err != nil || m.Name() != config.DefaultMerge {
		t.Errorf("Lookup(\"\") = %v, %v; want config.DefaultMerge %q", m, err, config.DefaultMerge)
	}
	for _, name := range config.MergeFormats() {
		m, err := Lookup(name)
		if err != nil || m.Name() != name {
			t.Errorf("Lookup(%q) = %v, %v", name, m, err)
		}
	}
}

func TestMergeJSONArrayValidate(t *testing.T) {
	for _, c := range []struct {
		body  string
		valid bool
	}{
		{`[]`, true},
		{` [1, 2] `, true},
		{"\n[{\"a\":[1,2]},\"x\"]\r\n", true},
		{`{"a":1}`, false},
		{`"[1]"`, false},
		{`1`, false},
		{``, false},
		{`[1,2`, false},
		{`[1] [2]`, false},
		{`[1],`, false},
		{`<html>oops</html>`, false},
	} {
		err := (jsonArray{}).Validate([]byte(c.body))
		if (err == nil) != c.valid {
			t.Errorf("Validate(%q) = %v; want valid %v", c.body, err, c.valid)
		}
	}
}

func TestMergeJSONArrayConcatenatesInOrder(t *testing.T) {
	for _, c := range []struct {
		name   string
		bodies []string
		want   string
	}{
		{"none", nil, `[]`},
		{"all empty", []string{`[]`, ` [ ] `}, `[]`},
		{"order kept", []string{`[1,2]`, `["b"]`, `[{"c":[3]}]`}, `[1,2,"b",{"c":[3]}]`},
		{"empty in the middle", []string{`[1]`, `[]`, `[2]`}, `[1,2]`},
		{"whitespace around", []string{"\n [ 1 , 2 ]\n", "\t[3]"}, `[1 , 2,3]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := string(written(t, (jsonArray{}).Merge(bodiesOf(c.bodies...))))
			if got != c.want {
				t.Errorf("Merge = %s; want %s", got, c.want)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("merged %s is not valid JSON", got)
			}
		})
	}
}

func TestMergeNDJSON(t *testing.T) {
	for _, c := range []struct {
		body  string
		valid bool
	}{
		{``, true},
		{"{\"a\":1}\n{\"b\":2}\n", true},
		{"{\"a\":1}\r\n\r\n[1]", true},
		{"{\"a\":1} {\"b\":2}\n", false},
		{"{\"a\":1}\nnot json\n", false},
		{"[1,\n2]\n", false},
	} {
		err := (ndjson{}).Validate([]byte(c.body))
		if (err == nil) != c.valid {
			t.Errorf("Validate(%q) = %v; want valid %v", c.body, err, c.valid)
		}
	}
	got := string(written(t, (ndjson{}).Merge(bodiesOf("{\"a\":1}\n{\"b\":2}\n", "", "[3]", "\r\n\"x\"\r\n\n"))))
	if want := "{\"a\":1}\n{\"b\":2}\n[3]\n\"x\"\n"; got != want {
		t.Errorf("Merge = %q; want %q", got, want)
	}
}

// FuzzMergeJSONArray checks that splicing valid arrays without decoding
// them yields one valid array holding every element, in order.
func FuzzMergeJSONArray(f *testing.F) {
	f.Add(`[1,2]`, `[]`, `["a",{"b":[null]}]`)
	f.Add(" [ ] ", "\n[true]\n", `[[],[[]]]`)
	f.Add(`{"x":1}`, `[1]`, `nope`)
	f.Fuzz(func(t *testing.T, a, b, c string) {
		var valid [][]byte
		var want []json.RawMessage
		for _, body := range []string{a, b, c} {
			if (jsonArray{}).Validate([]byte(body)) != nil {
				continue
			}
			var elements []json.RawMessage
			if err := json.Unmarshal([]byte(body), &elements); err != nil {
				t.Fatalf("Validate accepted %q, which is not an array: %v", body, err)
			}
			valid = append(valid, []byte(body))
			want = append(want, elements...)
		}
		merged := written(t, (jsonArray{}).Merge(valid))
		var got []json.RawMessage
		if err := json.Unmarshal(merged, &got); err != nil {
			t.Fatalf("merged %q is not an array: %v", merged, err)
		}
		if len(got) != len(want) {
			t.Fatalf("merged %d elements, want %d: %s", len(got), len(want), merged)
		}
		for i := range got {
			if string(got[i]) != string(want[i]) {
				t.Fatalf("element %d = %s, want %s", i, got[i], want[i])
			}
		}
	})
}

// TestLenAgreesWithWriteTo: the Content-Length given is exactly what
// WriteTo writes, and WriteTo reports it.
func TestLenAgreesWithWriteTo(t *testing.T) {
	for _, m := range all() {
		for _, bodies := range [][]string{nil, {`[1,2]`, ` [] `, "\n[\"b\"]\n"}, {"{\"a\":1}\n\n{\"b\":2}\r\n", "", "[3]"}} {
			valid := bodiesOf()
			for _, b := range bodies {
				if m.Validate([]byte(b)) == nil {
					valid = append(valid, []byte(b))
				}
			}
			merged := m.Merge(valid)
			var buf bytes.Buffer
			n, err := merged.WriteTo(&buf)
			if err != nil || n != int64(buf.Len()) || merged.Len() != buf.Len() {
				t.Errorf("%s of %q: WriteTo wrote %d bytes, reported %d (%v); Len %d", m.Name(), bodies, buf.Len(), n, err, merged.Len())
			}
		}
	}
}

// written is what m writes.
func written(t *testing.T, m Merged) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := m.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
