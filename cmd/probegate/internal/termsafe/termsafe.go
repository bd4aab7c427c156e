// Package termsafe keeps data from steering the terminal that shows
// probegate's command-line output. A maintenance reason, a backend name or
// an error a server sent can hold escape sequences that erase lines, move
// the cursor or forge table rows; kubectl escapes such characters since
// CVE-2021-25743, and so does every command of probegate's.
package termsafe

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every character a terminal could act on replaced
// by its Go escape: control characters (ESC as \x1b, newline as \n, tab as
// \t, C1 controls as \u009b), format characters such as the bidirectional
// overrides (\u202e), line and paragraph separators, and each byte of
// invalid UTF-8 (\xff). Everything printable, spaces included, is kept as
// it is, so ordinary text reads unchanged.
func Escape(s string) string {
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], string(utf8.RuneError)):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsGraphic(r):
			b.WriteRune(r)
		default:
			quoted := strconv.QuoteRune(r)
			b.WriteString(quoted[1 : len(quoted)-1])
		}
	}
	return b.String()
}

// Lines is Escape applied to each line of s, for text whose line breaks
// are probegate's own layout (a configuration's problems, one a line):
// the lines stay lines, and nothing else in them reaches the terminal.
func Lines(s string) string {
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		lines[i] = Escape(line)
	}
	return strings.Join(lines, "\n")
}

// isPlain reports whether s is printable ASCII only, which Escape keeps.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' {
			return false
		}
	}
	return true
}

// Fprintf is fmt.Fprintf with every string, error and fmt.Stringer among
// args escaped (Escape) before formatting: the format is probegate's
// own, its newlines and tabs lay out the output, and the arguments are
// data.
func Fprintf(w io.Writer, format string, args ...any) (int, error) {
	safe := make([]any, len(args))
	for i, arg := range args {
		switch v := arg.(type) {
		case string:
			safe[i] = Escape(v)
		case error:
			safe[i] = Escape(v.Error())
		case fmt.Stringer:
			safe[i] = Escape(v.String())
		default:
			safe[i] = arg
		}
	}
	return fmt.Fprintf(w, format, safe...)
}

// Fprintln is fmt.Fprintln with every argument escaped as Fprintf does.
func Fprintln(w io.Writer, args ...any) (int, error) {
	return Fprintf(w, strings.TrimSuffix(strings.Repeat("%v ", len(args)), " ")+"\n", args...)
}
