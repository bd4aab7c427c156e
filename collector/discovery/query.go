package discovery

import (
	"net/url"
	"strings"
)

// targetQuery is what the discovery view is asked to find (?target=): a
// piece of a discovered address, of a backend's name or of its host:port,
// in any case. An operator pastes what they have at hand, and that is as
// often a backend's URL as an address, so a URL stands for its host:port:
// http://10.0.0.1:8080/metrics finds 10.0.0.1:8080.
type targetQuery string

// queryOf is the query for what a client asked for.
func queryOf(target string) targetQuery {
	target = strings.TrimSpace(target)
	if strings.Contains(target, "://") {
		if u, err := url.Parse(target); err == nil && u.Host != "" {
			target = u.Host
		}
	}
	return targetQuery(strings.ToLower(target))
}

// matches reports whether any of values holds the query, without case.
// The empty query matches nothing: the caller asks only when a target
// was given.
func (q targetQuery) matches(values ...string) bool {
	if q == "" {
		return false
	}
	for _, v := range values {
		// ToLower allocates nothing for a value already in lower case,
		// which discovered addresses nearly always are.
		if strings.Contains(strings.ToLower(v), string(q)) {
			return true
		}
	}
	return false
}
