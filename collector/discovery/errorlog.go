package discovery

import (
	"context"
	"log/slog"
	"regexp"
)

// quotedContent matches what a parser's error quotes of the text it
// parsed: a span in backquotes (YAML's values), double quotes (JSON's
// keys, Go's %q) or single quotes (JSON's characters), and the key YAML
// names in "field KEY not found".
var quotedContent = regexp.MustCompile("`[^`]*`|\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|(field )\\S+( not found)")

// withoutContent is an error message of a discovery file's parser with
// every quotation of the file replaced by "…". What is wrong and where
// (its line) stays; what the file holds, which may be a password, never
// reaches a log line.
func withoutContent(msg string) string {
	return quotedContent.ReplaceAllString(msg, "${1}…${2}")
}

// contentlessHandler is the log handler of the service discovery
// manager and its mechanisms: it passes every record on with the error
// (the "err" attribute) stripped of the content it quotes.
type contentlessHandler struct {
	slog.Handler
}

// Handle passes r on with its error's quotations removed.
func (h contentlessHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			a = slog.String(a.Key, withoutContent(a.Value.String()))
		}
		out.AddAttrs(a)
		return true
	})
	return h.Handler.Handle(ctx, out)
}

// WithAttrs keeps the attributes' handler contentless.
func (h contentlessHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return contentlessHandler{h.Handler.WithAttrs(attrs)}
}

// WithGroup keeps the group's handler contentless.
func (h contentlessHandler) WithGroup(name string) slog.Handler {
	return contentlessHandler{h.Handler.WithGroup(name)}
}
