package merge

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzMergeNDJSON checks that the bodies Validate accepts merge into one
// body that Validate accepts too, holding every value of every body in
// order, one per line, and that a body Validate refuses has a line that
// is not JSON.
func FuzzMergeNDJSON(f *testing.F) {
	f.Add("{\"a\":1}\n{\"b\":2}\n", "", "[3]")
	f.Add("\r\n\"x\"\r\n\n", "  1  \n\n\t2\t", "null")
	f.Add("{\"a\":1} {\"b\":2}\n", "[1,\n2]", "not json")
	f.Add("\"a\\nb\"\n", "\u00a01", "{}\r")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		var valid [][]byte
		var want []string
		for _, body := range []string{a, b, c} {
			err := (ndjson{}).Validate([]byte(body))
			lines := bytes.Split([]byte(body), []byte{'\n'})
			if err != nil {
				if !hasInvalidLine(lines) {
					t.Fatalf("Validate refused %q, whose every line is JSON: %v", body, err)
				}
				continue
			}
			valid = append(valid, []byte(body))
			for _, line := range lines {
				if line = bytes.TrimSpace(line); len(line) > 0 {
					want = append(want, compact(t, line))
				}
			}
		}
		merged := written(t, (ndjson{}).Merge(valid))
		if err := (ndjson{}).Validate(merged); err != nil {
			t.Fatalf("merged %q does not validate: %v", merged, err)
		}
		if len(merged) > 0 && merged[len(merged)-1] != '\n' {
			t.Fatalf("merged %q does not end in a newline", merged)
		}
		var got []string
		for _, line := range bytes.Split(bytes.TrimSuffix(merged, []byte{'\n'}), []byte{'\n'}) {
			if len(merged) > 0 {
				got = append(got, compact(t, line))
			}
		}
		if len(got) != len(want) {
			t.Fatalf("merged %d values, want %d: %q", len(got), len(want), merged)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("value %d = %s, want %s", i, got[i], want[i])
			}
		}
	})
}

// hasInvalidLine reports whether a line, trimmed, is neither blank nor
// a JSON value.
func hasInvalidLine(lines [][]byte) bool {
	for _, line := range lines {
		if line = bytes.TrimSpace(line); len(line) > 0 && !json.Valid(line) {
			return true
		}
	}
	return false
}

// compact is a JSON value without insignificant white space.
func compact(t *testing.T, value []byte) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, value); err != nil {
		t.Fatalf("%q is not a JSON value: %v", value, err)
	}
	return buf.String()
}
