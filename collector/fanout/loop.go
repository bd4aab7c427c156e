package fanout

import (
	"net/http"
	"strconv"
	"strings"
)

// This file keeps a request from going round a ring of probegates: each
// one appends "1.1 <replica name> (probegate)" to the Via of what it
// forwards (RFC 9110, section 7.6.3; the comment marks probegate's hops
// among other proxies'), and refuses a request whose Via already names it
// or holds fanout.max_hops probegate hops. One client request therefore
// causes at most max_hops rounds, through any ring.

// viaComment marks a Via entry as a probegate hop.
const viaComment = "(probegate)"

// viaEntry is this replica's entry in Via.
func viaEntry(replica string) string {
	return "1.1 " + replica + " " + viaComment
}

// viaHops counts the probegate hops in the Via values of a request, and
// reports whether one of the entries is this replica's. A proxy on the way
// may strip comments (RFC 9110 allows it), so this replica's entry is
// recognised without the comment too; only entries with it count as
// probegate hops, since another proxy may well share a name's form. The
// entry's received-by is matched as namesReplica says.
func viaHops(values []string, replica string) (hops int, self bool) {
	for _, v := range values {
		for entry := range viaEntries(v) {
			protocolAndBy, comment, commented := strings.Cut(entry, "(")
			ours := strings.TrimSpace(comment) == viaComment[1:]
			if ours {
				hops++
			}
			fields := strings.Fields(protocolAndBy)
			if len(fields) == 2 && namesReplica(fields[1], replica) && (ours || !commented) {
				self = true
			}
		}
	}
	return hops, self
}

// namesReplica reports whether a Via entry's received-by names replica.
// received-by is a pseudonym or host[:port] (RFC 9110, section 7.6.3), and
// host names compare without case, so a proxy or a client that writes the
// name in another case, or adds or drops the port, still names this
// replica: "ADM1" and "adm1:18821" both name adm1, and "adm1" names
// adm1:18821. Two ports that differ are two listeners, so two probegates.
func namesReplica(receivedBy, replica string) bool {
	if strings.EqualFold(receivedBy, replica) {
		return true
	}
	host, port := splitViaPort(receivedBy)
	replicaHost, replicaPort := splitViaPort(replica)
	return strings.EqualFold(host, replicaHost) && (port == "" || replicaPort == "")
}

// splitViaPort splits a received-by into its host and its port, "" when
// it has none: a pseudonym, a bare host, a bracketed IPv6 address without
// a port, or a colon not followed by digits.
func splitViaPort(s string) (host, port string) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 || !onlyDigits(s[i+1:]) {
		return s, ""
	}
	switch {
	case strings.HasPrefix(s, "["):
		if !strings.HasSuffix(s[:i], "]") {
			return s, "" // A bracketed IPv6 address without a port.
		}
	case strings.Contains(s[:i], ":"):
		return s, "" // A bare IPv6 address, which has no port.
	}
	return s[:i], s[i+1:]
}

// viaEntries yields the comma-separated entries of one Via value, each
// trimmed; a comma inside a comment, (like, this), does not split.
func viaEntries(v string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		depth, start := 0, 0
		for i := 0; i <= len(v); i++ {
			switch {
			case i == len(v) || (v[i] == ',' && depth == 0):
				if e := strings.TrimSpace(v[start:i]); e != "" && !yield(e) {
					return
				}
				start = i + 1
			case v[i] == '(':
				depth++
			case v[i] == ')' && depth > 0:
				depth--
			case v[i] == '\\' && depth > 0:
				i++ // A quoted pair inside a comment.
			}
		}
	}
}

// forwardedVia is the Via a backend request carries: the client's, with
// this replica's entry appended.
func forwardedVia(values []string, replica string) string {
	entry := viaEntry(replica)
	if len(values) == 0 {
		return entry
	}
	return strings.Join(values, ", ") + ", " + entry
}

// loopRefusal says why a request must not start a round, or returns "".
func loopRefusal(r *http.Request, replica string, maxHops int) string {
	hops, self := viaHops(r.Header.Values("Via"), replica)
	switch {
	case self:
		return "the request has been through this probegate (" + replica + ") already: a backend leads back to it"
	case maxHops > 0 && hops >= maxHops:
		return "the request has been through " + strconv.Itoa(hops) + " probegates, the most fanout.max_hops allows"
	}
	return ""
}

// ThroughReplica reports whether r has been forwarded by the fan-out of
// replica: its Via holds replica's entry, which every backend request
// carries. A listener that must never be a backend (the admin listener)
// refuses such a request, whatever address led the fan-out to it.
func ThroughReplica(r *http.Request, replica string) bool {
	_, self := viaHops(r.Header.Values("Via"), replica)
	return self
}
