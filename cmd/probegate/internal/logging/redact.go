package logging

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/go-kit/log"

	"github.com/probegate/probegate/internal/redact"
)

// redacting is the logger every record passes through last: it replaces
// the password of any URL or address in a record's values with "xxxxx".
// Those who log redact what they know to be a URL; this catches what they
// cannot know, such as a discovered label quoted in an error from a
// library, so that no log line ever shows a password.
type redacting struct{ next log.Logger }

func (r redacting) Log(keyvals ...any) error {
	var out []any
	for i, v := range keyvals {
		shown, changed := redactValue(v)
		if !changed {
			continue
		}
		if out == nil {
			// The caller's slice is its own: change a copy.
			out = append([]any(nil), keyvals...)
		}
		out[i] = shown
	}
	if out == nil {
		out = keyvals
	}
	return r.next.Log(out...)
}

// redactValue is v with passwords redacted, and whether that changed it.
// Only values that print as text can carry one; numbers and times cannot.
func redactValue(v any) (any, bool) {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case *url.URL:
		if _, ok := v.User.Password(); ok {
			return v.Redacted(), true
		}
		return v, false
	case time.Time, time.Duration:
		return v, false
	case error:
		s = v.Error()
	case fmt.Stringer:
		s = v.String()
	default:
		return v, false
	}
	shown := redact.Userinfo(s)
	if shown == s {
		return v, false
	}
	if _, isErr := v.(error); isErr {
		return errors.New(shown), true
	}
	return shown, true
}
