package agent

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadName: a line naming a backend as the configuration may name one
// is read, however it trickles in; every other line is refused with the
// reason, before any lookup.
func TestReadName(t *testing.T) {
	longest := strings.Repeat("n", MaxLineBytes-1)
	for _, c := range []struct {
		name, input string
		want        string
		err         error
	}{
		{"a name", "s1-a\n", "s1-a", nil},
		{"CRLF", "s1-a\r\n", "s1-a", nil},
		{"every character a name may hold", "az_AZ.09:-\n", "az_AZ.09:-", nil},
		{"the longest line", longest + "\n", longest, nil},
		{"one byte too long", longest + "n\n", "", errTooLong},
		{"CRLF one byte too long", longest + "\r\n", "", errTooLong},
		{"a flood", strings.Repeat("x", 10000), "", errTooLong},
		{"empty line", "\n", "", errBadName},
		{"empty CRLF line", "\r\n", "", errBadName},
		{"nothing at all", "", "", errUnterminated},
		{"no line feed before the end", "s1-a", "", errUnterminated},
		{"two lines", "s1-a\ns1-b\n", "", errSeveralLines},
		{"a byte after the line", "s1-a\nx", "", errSeveralLines},
		{"two carriage returns", "s1-a\r\r\n", "", errBadName},
		{"a carriage return inside", "s1\r-a\n", "", errBadName},
		{"a space inside", "s1 a\n", "", errBadName},
		{"a trailing space", "s1-a \n", "", errBadName},
		{"a NUL", "s1\x00a\n", "", errBadName},
		{"a tab", "\ts1\n", "", errBadName},
		{"not UTF-8", "s1\xff\xfe\n", "", errBadName},
		{"UTF-8 beyond ASCII", "s1-\u00e9\n", "", errBadName},
		{"a path", "../s1\n", "", errBadName},
		{"a command", "show stat\n", "", errBadName},
		{"binary garbage", "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\n", "", errBadName},
	} {
		for _, reader := range []struct {
			how  string
			wrap func(io.Reader) io.Reader
		}{{"whole", func(r io.Reader) io.Reader { return r }}, {"a byte at a time", iotest.OneByteReader}} {
			if c.err == errSeveralLines && reader.how != "whole" {
				// What follows the line is seen only when it came with
				// it: the reply does not wait for more.
				continue
			}
			got, err := readName(reader.wrap(strings.NewReader(c.input)))
			if got != c.want || !errors.Is(err, c.err) {
				t.Errorf("%s, %s: readName(%q) = %q, %v; want %q, %v", c.name, reader.how, c.input, got, err, c.want, c.err)
			}
		}
	}
}

// TestReadNameReturnsTheReadersError: a read that fails before the line
// ends (its deadline passed) fails the request with that error.
func TestReadNameReturnsTheReadersError(t *testing.T) {
	r := io.MultiReader(strings.NewReader("s1"), iotest.ErrReader(os.ErrDeadlineExceeded))
	if got, err := readName(r); got != "" || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("readName = %q, %v; want the deadline's error", got, err)
	}
}
