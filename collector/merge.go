package collector

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/probegate/probegate/config"
)

// MergeFormat is how a fan-out joins the bodies of the backends that
// contributed to a round (fanout.merge). The merge is pure: it validates one
// backend's body at a time, as soon as that backend answered, and splices
// the raw bytes of the valid ones without decoding a single element.
type MergeFormat uint8

// The merge formats.
const (
	// MergeJSONArray expects every backend to answer one JSON array and
	// concatenates their elements, in config order, into one array.
	MergeJSONArray MergeFormat = iota
	// MergeNDJSON expects newline-delimited JSON and concatenates the lines.
	MergeNDJSON
	numMergeFormats
)

var mergeFormatNames = [numMergeFormats]string{config.MergeJSONArray, config.MergeNDJSON}

var mergeContentTypes = [numMergeFormats]string{"application/json", "application/x-ndjson"}

func (f MergeFormat) String() string { return mergeFormatNames[f] }

// ContentType is the Content-Type of a merged response.
func (f MergeFormat) ContentType() string { return mergeContentTypes[f] }

// ParseMergeFormat parses fanout.merge. The empty string is the default,
// json_array, so a configuration built in code needs no merge key.
func ParseMergeFormat(s string) (MergeFormat, error) {
	if s == "" {
		return MergeJSONArray, nil
	}
	for f, name := range mergeFormatNames {
		if name == s {
			return MergeFormat(f), nil
		}
	}
	return 0, fmt.Errorf("unknown fanout merge %q: valid are json_array and ndjson", s)
}

// errNotJSONArray is the verdict on a well-formed JSON document that is not
// an array.
var errNotJSONArray = errors.New("body is JSON but not an array")

// Validate checks that body is one backend's answer in this format. A body
// that passes may be given to Merge.
func (f MergeFormat) Validate(body []byte) error {
	if f == MergeNDJSON {
		return validateNDJSON(body)
	}
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

func validateNDJSON(body []byte) error {
	for n := 1; len(body) > 0; n++ {
		var line []byte
		line, body = nextLine(body)
		if len(line) > 0 && !json.Valid(line) {
			return fmt.Errorf("line %d is not a JSON value", n)
		}
	}
	return nil
}

// nextLine splits off the first line of body, without its line ending and
// surrounding whitespace, and returns it with the rest.
func nextLine(body []byte) (line, rest []byte) {
	line, rest, _ = bytes.Cut(body, []byte{'\n'})
	return bytes.TrimSpace(line), rest
}

// Merge joins bodies that passed Validate, in the order given. json_array
// yields one array of every element; ndjson yields every non-blank line,
// each ending in a newline.
func (f MergeFormat) Merge(bodies [][]byte) []byte {
	size := 2
	for _, b := range bodies {
		size += len(b) + 1
	}
	out := make([]byte, 0, size)
	if f == MergeNDJSON {
		for _, body := range bodies {
			for len(body) > 0 {
				var line []byte
				line, body = nextLine(body)
				if len(line) > 0 {
					out = append(append(out, line...), '\n')
				}
			}
		}
		return out
	}
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
