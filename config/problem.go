package config

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a configuration, and where it is.
type Problem struct {
	// File is the configuration file, empty when the configuration was
	// built without one.
	File string
	// Line is the 1-based line in File, 0 when the value is not in the file.
	Line int
	// Field is the path of the offending key, such as
	// backends[1].health_probe.timeout (indexes count from 0). It is empty
	// for a YAML syntax error.
	Field string
	// Origin is the flag or environment variable that set the field, such
	// as --health-probe.timeout; empty when the value came from the file or
	// the defaults.
	Origin string
	// Message says what is wrong and what would be valid.
	Message string
}

// String formats the problem as "file:line: field: message", or
// "origin (field): message" when a flag or environment variable set it.
func (p Problem) String() string {
	var b strings.Builder
	switch {
	case p.Origin != "":
		b.WriteString(p.Origin)
		if p.Field != "" {
			fmt.Fprintf(&b, " (%s)", p.Field)
		}
	default:
		parts := make([]string, 0, 3)
		if p.File != "" {
			if p.Line > 0 {
				parts = append(parts, fmt.Sprintf("%s:%d", p.File, p.Line))
			} else {
				parts = append(parts, p.File)
			}
		}
		if p.Field != "" {
			parts = append(parts, p.Field)
		}
		b.WriteString(strings.Join(parts, ": "))
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// ProblemAt is a problem with field, placed as Validate places its own:
// at the field's line in the file (or its nearest enclosing block's), or
// blamed on the flag or environment variable that set it. It is for the
// checks made outside this package, such as check-config's.
func (c *Config) ProblemAt(field, format string, args ...any) Problem {
	p := Problem{Field: field, Message: fmt.Sprintf(format, args...)}
	if origin := c.originOf(field); origin != "" {
		p.Origin = origin
	} else if c.src != nil {
		p.File = c.src.file
		p.Line, _ = c.src.lineOf(field)
	}
	return p
}

// Error is an invalid configuration: every problem found, one per line.
type Error struct {
	Problems []Problem
}

// Error lists the problems, one per line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
