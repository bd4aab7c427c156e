package markdown

import (
	"regexp"
	"strings"
)

// Table is one pipe table of a Markdown file: its header cells and the
// cells of each row, trimmed.
type Table struct {
	Header []string
	Rows   [][]string
	// Line is the line of the header, counting from 1.
	Line int
}

// Column is the cells of the column whose header is name, or nil.
func (t Table) Column(name string) []string {
	for i, h := range t.Header {
		if h == name {
			cells := make([]string, 0, len(t.Rows))
			for _, r := range t.Rows {
				if i < len(r) {
					cells = append(cells, r[i])
				}
			}
			return cells
		}
	}
	return nil
}

// delimiterRow is a table's second line: |---|:--:|...
var delimiterRow = regexp.MustCompile(`^\|(\s*:?-+:?\s*\|)+\s*$`)

// Tables lists the pipe tables outside code blocks, in order: a line of
// cells between pipes, a delimiter row, and the rows up to the first line
// that is not one. A pipe inside backticks is text, not a cell border.
func Tables(data string) []Table {
	lines := strings.Split(data, "\n")
	var tables []Table
	inCode := false
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if inCode || !strings.HasPrefix(line, "|") || i+1 >= len(lines) || !delimiterRow.MatchString(strings.TrimSpace(lines[i+1])) {
			continue
		}
		t := Table{Header: cells(line), Line: i + 1}
		i += 2
		for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
			t.Rows = append(t.Rows, cells(strings.TrimSpace(lines[i])))
		}
		tables = append(tables, t)
	}
	return tables
}

// cells splits a table line into its trimmed cells.
func cells(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	var out []string
	var cur strings.Builder
	code := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case c == '`':
			code = !code
			cur.WriteByte(c)
		case c == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case c == '|' && !code:
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}

// codeSpan is one `code span`.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// CodeSpans are the texts of the code spans of a cell, in order.
func CodeSpans(cell string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}
