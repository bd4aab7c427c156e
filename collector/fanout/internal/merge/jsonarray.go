package merge

import (
	"bytes"
	"encoding/json"
	"errors"
)

// jsonArray expects every backend to answer one JSON array and
// concatenates their elements, in the order given, into one array.
type jsonArray struct{}

// Name implements Merger.
func (jsonArray) Name() string { return "json_array" }

// ContentType implements Merger.
func (jsonArray) ContentType() string { return "application/json" }

// errNotJSONArray is the verdict on a well-formed JSON document that is not
// an array.
var errNotJSONArray = errors.New("body is JSON but not an array")

// Validate implements Merger.
func (jsonArray) Validate(body []byte) error {
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
func (jsonArray) Merge(bodies [][]byte) Merged { return Merged{jsonArrayPieces, bodies} }

// jsonArrayPieces are "[", the elements of each array with "," between
// arrays that have any, and "]".
var jsonArrayPieces pieces = func(bodies [][]byte, yield func([]byte) bool) {
	if !yield(openBracket) {
		return
	}
	first := true
	for _, body := range bodies {
		array := bytes.TrimSpace(body)
		elements := bytes.TrimSpace(array[1 : len(array)-1])
		if len(elements) == 0 {
			continue
		}
		if !first && !yield(comma) {
			return
		}
		first = false
		if !yield(elements) {
			return
		}
	}
	yield(closeBracket)
}
