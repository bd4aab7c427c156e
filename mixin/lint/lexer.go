package lint

import (
	"fmt"
	"strings"
	"unicode"
)

// tokenKind classifies a lexical token of a PromQL expression.
type tokenKind int

const (
	tokEOF tokenKind = iota
	tokIdent
	tokNumber
	tokString
	tokRange // the raw text between [ and ], brackets excluded
	tokPunct // ( ) { } , and the operators
)

type token struct {
	kind tokenKind
	text string
	pos  int
}

// twoCharOperators are the operators longer than one character; they are
// tried before the one-character ones.
var twoCharOperators = []string{"==", "!=", ">=", "<=", "=~", "!~"}

const oneCharPunct = "(){},+-*/%^<>=!"

// lex splits expr into tokens. It fails on an unterminated string or
// range, and on a character PromQL has no use for.
func lex(expr string) ([]token, error) {
	var toks []token
	for i := 0; i < len(expr); {
		c := rune(expr[i])
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '#':
			// A comment runs to the end of the line.
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			end, err := stringEnd(expr, i)
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tokString, expr[i:end], i})
			i = end
		case c == '[':
			end := strings.IndexByte(expr[i:], ']')
			if end < 0 {
				return nil, fmt.Errorf("unterminated range at offset %d", i)
			}
			if strings.ContainsAny(expr[i+1:i+end], "[({})") {
				return nil, fmt.Errorf("bracket inside range at offset %d", i)
			}
			toks = append(toks, token{tokRange, strings.TrimSpace(expr[i+1 : i+end]), i})
			i += end + 1
		case c == ']':
			return nil, fmt.Errorf("unbalanced ] at offset %d", i)
		case isIdentStart(c):
			j := i + 1
			for j < len(expr) && isIdentPart(rune(expr[j])) {
				j++
			}
			toks = append(toks, token{tokIdent, expr[i:j], i})
			i = j
		case unicode.IsDigit(c) || (c == '.' && i+1 < len(expr) && unicode.IsDigit(rune(expr[i+1]))):
			j := i + 1
			for j < len(expr) && (isIdentPart(rune(expr[j])) || expr[j] == '.' ||
				((expr[j] == '+' || expr[j] == '-') && (expr[j-1] == 'e' || expr[j-1] == 'E'))) {
				j++
			}
			toks = append(toks, token{tokNumber, expr[i:j], i})
			i = j
		default:
			op := ""
			for _, two := range twoCharOperators {
				if strings.HasPrefix(expr[i:], two) {
					op = two
					break
				}
			}
			if op == "" && strings.ContainsRune(oneCharPunct, c) {
				op = string(c)
			}
			if op == "" {
				return nil, fmt.Errorf("unexpected character %q at offset %d", c, i)
			}
			toks = append(toks, token{tokPunct, op, i})
			i += len(op)
		}
	}
	return append(toks, token{tokEOF, "", len(expr)}), nil
}

// stringEnd returns the offset just past the string literal starting at
// start, honouring backslash escapes except in backquoted strings.
func stringEnd(expr string, start int) (int, error) {
	quote := expr[start]
	for i := start + 1; i < len(expr); i++ {
		switch {
		case expr[i] == '\\' && quote != '`':
			i++
		case expr[i] == quote:
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated string at offset %d", start)
}

func isIdentStart(c rune) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c rune) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }
