package fanout

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzBackendTarget checks the fan-out path decoding on any request
// target: what it accepts is Path's subtree as sent, and decoded as far
// as it goes it has no "." or ".." segment, backslash or NUL, so it
// cannot leave a backend's base path however a backend reads it.
func FuzzBackendTarget(f *testing.F) {
	for _, seed := range []string{
		"/fanout/api/v1/query?query=up", "/fanout", "/fanout/", "/fanout/a//b",
		"/fanout/%2e%2e/x", "/fanout/%252e%252e/x", "/fanout/a%2F..%2Fb", "/fanout/..;x/y",
		"/fanout/a%5cb", "/fanout/a%00b", "/fanoutx", "/fanout/%25%32%65%25%32%65",
		"/fanout/%", "/fanout/a?x=%zz",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, requestTarget string) {
		u, err := url.ParseRequestURI(requestTarget)
		if err != nil {
			return
		}
		target, err := backendTarget(u)
		if err != nil {
			return
		}
		path, query, _ := strings.Cut(target, "?")
		if path != "" && path[0] != '/' {
			t.Fatalf("%q: target %q is not under the backend's URL", requestTarget, target)
		}
		if !strings.HasPrefix(u.EscapedPath(), Path+path) || (u.RawQuery != "" && query != u.RawQuery) {
			t.Fatalf("%q: target %q is not the request's path and query as sent", requestTarget, target)
		}
		decoded := path
		for range maxDecodes + 1 {
			next, err := url.PathUnescape(decoded)
			if err != nil {
				t.Fatalf("%q: accepted %q, which does not decode: %v", requestTarget, target, err)
			}
			decoded = next
		}
		if strings.ContainsAny(decoded, "\\\x00") {
			t.Fatalf("%q: accepted %q, which decodes to %q", requestTarget, target, decoded)
		}
		for segment := range strings.SplitSeq(decoded, "/") {
			if dots, _, _ := strings.Cut(segment, ";"); dots == "." || dots == ".." {
				t.Fatalf("%q: accepted %q, whose decoded segment %q climbs", requestTarget, target, segment)
			}
		}
	})
}
