package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ndjson expects newline-delimited JSON and concatenates the lines.
type ndjson struct{}

// Name implements Merger.
func (ndjson) Name() string { return "ndjson" }

// ContentType implements Merger.
func (ndjson) ContentType() string { return "application/x-ndjson" }

// Validate implements Merger: every non-blank line is a JSON value.
func (ndjson) Validate(body []byte) error {
	for n := 1; len(body) > 0; n++ {
		var line []byte
		line, body = nextLine(body)
		if len(line) > 0 && !json.Valid(line) {
			return fmt.Errorf("line %d is not a JSON value", n)
		}
	}
	return nil
}

// Merge implements Merger: every non-blank line, each ending in a newline.
func (ndjson) Merge(bodies [][]byte) Merged { return Merged{ndjsonPieces, bodies} }

// ndjsonPieces are every non-blank line, trimmed, each followed by a
// newline.
var ndjsonPieces pieces = func(bodies [][]byte, yield func([]byte) bool) {
	for _, body := range bodies {
		for len(body) > 0 {
			var line []byte
			line, body = nextLine(body)
			if len(line) > 0 && (!yield(line) || !yield(newline)) {
				return
			}
		}
	}
}

// nextLine splits off the first line of body, without its line ending and
// surrounding whitespace, and returns it with the rest.
func nextLine(body []byte) (line, rest []byte) {
	line, rest, _ = bytes.Cut(body, []byte{'\n'})
	return bytes.TrimSpace(line), rest
}
