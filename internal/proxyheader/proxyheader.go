// Package proxyheader is what a proxy does with a client's header names:
// the hop-by-hop ones and those addressed to probegate itself are never
// forwarded, and the fan-out will not be told to forward the ones it sets
// itself. The fan-out applies the first
// rule to every request; configuration validation refuses
// fanout.forward_headers by both, so the two cannot disagree.
package proxyheader

import (
	"fmt"
	"net/textproto"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// IsHopByHop reports whether a canonical header name describes one
// connection rather than the message (RFC 9110 section 7.6.1), so that a
// proxy never forwards it.
func IsHopByHop(name string) bool {
	switch name {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// MinContributors is the request header by which a client raises the
// fan-out's quorum for its own request. It is addressed to probegate, not
// to the backends, so it is never forwarded.
const MinContributors = "Probegate-Min-Contributors"

// IsForProbegate reports whether a canonical header name is addressed to
// probegate itself, so that the fan-out never forwards it.
func IsForProbegate(name string) bool {
	return name == MinContributors
}

// Unforwardable says why the fan-out cannot be configured to forward the
// client's header name, or returns "": it is no header name, it is
// hop-by-hop, the fan-out sets it on each backend request, or the fan-out
// drops the client's and sets it afresh.
func Unforwardable(name string) string {
	if !httpguts.ValidHeaderFieldName(name) {
		return fmt.Sprintf("%q is not a header name", name)
	}
	switch canonical := textproto.CanonicalMIMEHeaderKey(name); {
	case IsHopByHop(canonical):
		return fmt.Sprintf("%q is a hop-by-hop header, which a proxy never forwards", name)
	case IsForProbegate(canonical):
		return fmt.Sprintf("%q is addressed to probegate itself, not to the backends", name)
	case canonical == "Host" || canonical == "Content-Length" || canonical == "Expect" || canonical == "Accept-Encoding":
		return fmt.Sprintf("%q is probegate's own to set on each backend request", name)
	case canonical == "Forwarded" || canonical == "X-Real-Ip" || strings.HasPrefix(canonical, "X-Forwarded-"):
		return fmt.Sprintf("%q is dropped from the client and set afresh by probegate", name)
	}
	return ""
}
