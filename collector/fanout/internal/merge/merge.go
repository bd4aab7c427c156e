// Package merge joins the answers of the backends that contributed to a
// fan-out round into one. A merge format is one Merger, in a file of its
// own, listed in all; fanout.merge names one. The names configuration
// validation accepts are config.MergeFormats, which a test keeps in step
// with all.
//
// Merging is pure: a Merger validates one backend's body at a time, as soon
// as that backend answered, and splices the raw bytes of the valid ones
// without decoding a single element.
package merge

import (
	"fmt"
	"io"
	"strings"
)

// Merger is one merge format.
type Merger interface {
	// Name is the fanout.merge value that selects the format.
	Name() string
	// ContentType is the Content-Type of a merged response.
	ContentType() string
	// Validate checks that body is one backend's answer in this format.
	// A body that passes may be given to Merge.
	Validate(body []byte) error
	// Merge joins bodies that passed Validate, in the order given,
	// without copying them.
	Merge(bodies [][]byte) Merged
}

// Merged is a merged answer, written piece by piece from the backends'
// bodies: a merged copy would double what the round holds. Len and
// WriteTo walk the same pieces, so they cannot disagree.
type Merged struct {
	pieces pieces
	bodies [][]byte
}

// Len is the length in bytes of the merged answer.
func (m Merged) Len() int {
	n := 0
	m.pieces(m.bodies, func(b []byte) bool { n += len(b); return true })
	return n
}

// WriteTo writes the merged answer to w, stopping at the first error
// (io.WriterTo).
func (m Merged) WriteTo(w io.Writer) (written int64, err error) {
	m.pieces(m.bodies, func(b []byte) bool {
		var n int
		n, err = w.Write(b)
		written += int64(n)
		return err == nil
	})
	return written, err
}

// pieces is how a format merges: it yields the pieces of the merged
// answer, slices of the bodies and separators, in order, until yield
// returns false.
type pieces func(bodies [][]byte, yield func([]byte) bool)

// The separators the formats put between pieces.
var (
	openBracket  = []byte{'['}
	closeBracket = []byte{']'}
	comma        = []byte{','}
	newline      = []byte{'\n'}
)

// all lists every merge format, the default first. config.MergeFormats
// lists the same names in the same order: configuration validation
// accepts those, and TestFormatsAreConfigs fails when the two differ.
func all() []Merger {
	return []Merger{jsonArray{}, ndjson{}}
}

// names lists the names of every merge format.
func names() []string {
	var names []string
	for _, m := range all() {
		names = append(names, m.Name())
	}
	return names
}

// Lookup returns the merge format of that name. The empty string is the
// default, the first format of all, so a configuration built in code
// needs no merge key.
func Lookup(name string) (Merger, error) {
	if name == "" {
		return all()[0], nil
	}
	for _, m := range all() {
		if m.Name() == name {
			return m, nil
		}
	}
	return nil, fmt.Errorf("unknown fanout merge %q: valid are %s", name, strings.Join(names(), ", "))
}
