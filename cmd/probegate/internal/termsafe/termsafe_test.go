package termsafe

import (
	"bytes"
	"errors"
	"testing"
)

// TestEscape: every character a terminal acts on shows as its escape;
// printable text, in any script, is kept.
func TestEscape(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"disk swap", "disk swap"},
		{"Plattentausch für b0 — 交换磁盘", "Plattentausch für b0 — 交换磁盘"},
		{"a\x1b[1A\x1b[2Kforged", `a\x1b[1A\x1b[2Kforged`},
		{"row\nb9\tmaintenance", `row\nb9\tmaintenance`},
		{"over\rwrite", `over\rwrite`},
		{"bell\a del\x7f", `bell\a del\x7f`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bidi \u202eevil", `bidi \u202eevil`},
		{"line\u2028sep", `line\u2028sep`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"real \uFFFD kept", "real \uFFFD kept"},
		{"non-breaking\u00a0space", "non-breaking\u00a0space"},
	} {
		if got := Escape(c.in); got != c.want {
			t.Errorf("Escape(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestFprintfEscapesDataNotFormat: the format's own newlines and tabs lay
// out the output; strings, errors and Stringers among the arguments are
// escaped, numbers are left alone.
func TestFprintfEscapesDataNotFormat(t *testing.T) {
	var b bytes.Buffer
	Fprintf(&b, "%s\t%v\t%d\t%s\n", "a\x1b]0;title\a", errors.New("boom\nforged"), 7, stringer("x\ry"))
	if got, want := b.String(), "a\\x1b]0;title\\a\tboom\\nforged\t7\tx\\ry\n"; got != want {
		t.Errorf("Fprintf wrote %q, want %q", got, want)
	}
	b.Reset()
	Fprintln(&b, "warning:", "\x1b[2J")
	if got, want := b.String(), "warning: \\x1b[2J\n"; got != want {
		t.Errorf("Fprintln wrote %q, want %q", got, want)
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

// TestLinesKeepsLineBreaks: a list of problems stays one a line, each
// line escaped.
func TestLinesKeepsLineBreaks(t *testing.T) {
	in := "config.yml:3: bad key \x1b[31mred\nconfig.yml:9: tab\there\r"
	if got, want := Lines(in), "config.yml:3: bad key \\x1b[31mred\nconfig.yml:9: tab\\there\\r"; got != want {
		t.Errorf("Lines(%q) = %q, want %q", in, got, want)
	}
}
