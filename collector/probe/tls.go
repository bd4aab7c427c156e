package probe

import (
	"crypto/tls"
	"time"
)

// certExpiry is the earliest NotAfter of the certificate chain a TLS
// connection presented, as blackbox_exporter's
// probe_ssl_earliest_cert_expiry is: the first certificate of the chain
// to expire ends the chain's validity, whichever it is. It is zero
// without TLS or without certificates.
func certExpiry(state *tls.ConnectionState) time.Time {
	if state == nil {
		return time.Time{}
	}
	var earliest time.Time
	for _, cert := range state.PeerCertificates {
		if earliest.IsZero() || cert.NotAfter.Before(earliest) {
			earliest = cert.NotAfter
		}
	}
	return earliest
}
