// Package redact hides the passwords in URLs and in text that may hold
// them, such as a discovered label set or an error that quotes a URL, as
// url.URL.Redacted shows a URL: the password becomes "xxxxx". Everything
// probegate logs, exports or answers that could carry a credential goes
// through it.
package redact

import (
	"net/url"
	"strings"
)

// Userinfo is s with the password of every userinfo in it replaced
// by "xxxxx", as url.URL.Redacted shows a URL: "http://alice:hunter2@h/"
// and "alice:hunter2@h:80" become "http://alice:xxxxx@h/" and
// "alice:xxxxx@h:80". s may be any text, such as a discovered label value
// or a whole label set: each run of characters between spaces, quotes
// and braces is read as a URL or an authority, whose userinfo is what
// precedes the last "@" before the path. Text that merely looks like a
// credential is redacted too: showing less is the safe mistake.
func Userinfo(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for len(s) > 0 {
		i := strings.IndexFunc(s, isTokenSeparator)
		if i < 0 {
			i = len(s)
		}
		b.WriteString(redactToken(s[:i]))
		s = s[i:]
		if j := strings.IndexFunc(s, func(r rune) bool { return !isTokenSeparator(r) }); j >= 0 {
			b.WriteString(s[:j])
			s = s[j:]
		} else {
			b.WriteString(s)
			s = ""
		}
	}
	return b.String()
}

// isTokenSeparator reports whether r ends a run of text that could be a
// URL: white space, quotes, braces and angle brackets, which neither a
// URL nor a label set's values contain unescaped.
func isTokenSeparator(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\r', '"', '\'', '`', '{', '}', '<', '>', '\\':
		return true
	}
	return false
}

// redactToken redacts the password of token read as "scheme://authority
// path" or "authority path".
func redactToken(token string) string {
	prefix, rest := "", token
	if i := strings.Index(token, "://"); i >= 0 {
		prefix, rest = token[:i+3], token[i+3:]
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return token
	}
	user, _, hasPassword := strings.Cut(authority[:at], ":")
	if !hasPassword {
		return token
	}
	return prefix + user + ":xxxxx" + rest[at:]
}

// URL is raw with any password replaced by "xxxxx", as
// url.URL.Redacted shows it. A URL that does not parse has everything
// between "://" and the last "@" of its authority replaced instead, so a
// typo elsewhere in it cannot reveal its password either.
func URL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if _, hasPassword := u.User.Password(); hasPassword {
			return u.Redacted()
		}
		return raw
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	authority, path := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		authority = "xxxxx" + authority[at:]
	}
	return scheme + "://" + authority + path
}
