package fanout

import (
	"fmt"
	"net/url"
	"strings"
)

// maxDecodes bounds how often a fan-out path is percent-decoded while
// looking for what it finally means. A path still changing after that is
// refused: nothing legitimate is encoded that deep.
const maxDecodes = 8

// backendTarget returns the part of the client's URL that is appended to
// every backend's URL: the path after Path as the client escaped it, and
// the query.
//
// A path that is not Path or under Path + "/" as sent is refused, and so
// is one that could leave the backend URL's base path or be read
// differently by the backend or anything in front of it: a "." or ".."
// segment (also "..;x", which some Java servers take for ".."), a
// backslash (which some servers take for a slash) or a NUL. The checks
// apply to the path decoded until it no longer changes, so %2e%2e,
// %252e%252e and a%2F..%2Fb are refused too. Empty segments (a//b) are
// forwarded as they are: they cannot leave the base path, and collapsing
// them would change what a backend that tells them apart is asked.
func backendTarget(u *url.URL) (string, error) {
	escaped := u.EscapedPath()
	target, ok := strings.CutPrefix(escaped, Path)
	if !ok || (target != "" && target[0] != '/') {
		return "", fmt.Errorf("fan-out path %q is neither %s nor under %s/", escaped, Path, Path)
	}
	decoded, err := decodeUntilStable(target)
	if err != nil {
		return "", fmt.Errorf("fan-out path %q: %w", escaped, err)
	}
	if strings.ContainsAny(decoded, "\\\x00") {
		return "", fmt.Errorf("fan-out path %q has a backslash or a NUL, which backends may read differently", escaped)
	}
	for segment := range strings.SplitSeq(decoded, "/") {
		dots, _, _ := strings.Cut(segment, ";")
		if dots == "." || dots == ".." {
			return "", fmt.Errorf("fan-out path %q has a %q segment, which could leave the backends' base path", escaped, segment)
		}
	}
	if u.RawQuery != "" {
		target += "?" + u.RawQuery
	}
	return target, nil
}

// decodeUntilStable percent-decodes s until it no longer changes.
func decodeUntilStable(s string) (string, error) {
	for range maxDecodes {
		decoded, err := url.PathUnescape(s)
		if err != nil {
			return "", fmt.Errorf("not a valid escaped path: %w", err)
		}
		if decoded == s {
			return s, nil
		}
		s = decoded
	}
	return "", fmt.Errorf("still encoded after %d decodings", maxDecodes)
}
