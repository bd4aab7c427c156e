package proxyheader

import (
	"strings"
	"testing"
)

// TestUnforwardable checks the reason given for each kind of header the
// fan-out must not be told to forward, whatever the case it is written
// in, and that an ordinary header passes.
func TestUnforwardable(t *testing.T) {
	for _, c := range []struct{ name, says string }{
		{"connection", "is a hop-by-hop header"},
		{"Transfer-Encoding", "is a hop-by-hop header"},
		{"TE", "is a hop-by-hop header"},
		{"proxy-authorization", "is a hop-by-hop header"},
		{"host", "is probegate's own to set"},
		{"Accept-Encoding", "is probegate's own to set"},
		{"x-forwarded-host", "and set afresh by probegate"},
		{"X-Real-IP", "and set afresh by probegate"},
		{"Forwarded", "and set afresh by probegate"},
		{"probegate-min-contributors", "is addressed to probegate itself"},
		{"bad header", "is not a header name"},
		{"", "is not a header name"},
		{"Accept", ""},
		{"Authorization", ""},
		{"X-Scope-OrgID", ""},
	} {
		got := Unforwardable(c.name)
		if c.says == "" && got != "" || !strings.Contains(got, c.says) {
			t.Errorf("Unforwardable(%q) = %q; want it to say %q", c.name, got, c.says)
		}
	}
}

// TestIsHopByHop checks the connection-scoped headers against ones that
// describe the message.
func TestIsHopByHop(t *testing.T) {
	for _, name := range []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
		"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"} {
		if !IsHopByHop(name) {
			t.Errorf("IsHopByHop(%q) = false", name)
		}
	}
	for _, name := range []string{"Accept", "Authorization", "Content-Type", "Via", "connection"} {
		if IsHopByHop(name) {
			t.Errorf("IsHopByHop(%q) = true; it takes canonical names only", name)
		}
	}
}
