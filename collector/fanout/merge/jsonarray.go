package merge

import (
	"bytes"
	"encoding/json"
	"errors"
)

// JSONArray expects every backend to answer one JSON array and
// concatenates their elements, in the order given, into one array.
type JSONArray struct{}

// Name implements Merger.
func (JSONArray) Name() string { return "json_array" }

// ContentType implements Merger.
func (JSONArray) ContentType() string { return "application/json" }

// errNotJSONArray is the verdict on a well-formed JSON document that is not
// an array.
var errNotJSONArray = errors.New("body is JSON but not an array")

// Validate implements Merger.
func (JSONArray) Validate(body []byte) error {
	if !json.Valid(body) {
		return errors.New("body is not valid JSON")
	}
	// json.Valid accepted the document, so whatever TrimSpace removes is
	// JSON whitespace and the first byte tells the value's kind.
	if bytes.TrimSpace(body)[0] != '[' {
		return errNotJSONArray
	}
	return nil
}

// Merge implements Merger: one array of every element.
func (JSONArray) Merge(bodies [][]byte) []byte {
	out := make([]byte, 0, mergedSize(bodies))
	out = append(out, '[')
	first := true
	for _, body := range bodies {
		array := bytes.TrimSpace(body)
		elements := bytes.TrimSpace(array[1 : len(array)-1])
		if len(elements) == 0 {
			continue
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = append(out, elements...)
	}
	return append(out, ']')
}

// mergedSize bounds the size of the merged bodies, separators included.
func mergedSize(bodies [][]byte) int {
	size := 2
	for _, b := range bodies {
		size += len(b) + 1
	}
	return size
}
