package fanout

import "testing"

// TestViaRecognisesThisReplicaWhateverCaseAndPort: received-by is a
// pseudonym or host[:port] (RFC 9110, section 7.6.3), and host names
// compare without case, so this replica's entry is its own in any case
// and with or without a port, commented or not. A port that differs
// from the name's own is another listener, another probegate.
func TestViaRecognisesThisReplicaWhateverCaseAndPort(t *testing.T) {
	for _, c := range []struct {
		replica, via string
		self         bool
	}{
		{"adm1", "1.1 ADM1", true},
		{"adm1", "1.1 adm1:18821", true},
		{"adm1", "1.1 Adm1:18821 (probegate)", true},
		{"adm1:18821", "1.1 ADM1", true},
		{"adm1:18821", "1.1 adm1:18821", true},
		{"Adm1:18821", "1.1 aDM1:18821 (probegate)", true},
		{"adm1:18821", "1.1 adm1:18822", false},
		{"adm1", "1.1 adm10", false},
		{"adm1", "1.1 adm1.example", false},
		{"[::1]:9797", "1.1 [::1]", true},
		{"[::1]:9797", "1.1 [::1]:9797 (probegate)", true},
		{"[::1]:9797", "1.1 [::1]:9798", false},
		{"adm1", "1.1 adm1:", false},
		{"adm1", "1.1 adm1:x", false},
	} {
		if _, self := viaHops([]string{c.via}, c.replica); self != c.self {
			t.Errorf("replica %q, Via %q: self %v; want %v", c.replica, c.via, self, c.self)
		}
	}
}
