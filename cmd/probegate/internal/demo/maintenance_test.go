package demo

import (
	"os/exec"
	"testing"
)

// TestShellQuote: the demo's hint names the binary as it was run, which a
// shell must read back as that one word.
func TestShellQuote(t *testing.T) {
	for _, s := range []string{"./probegate", "/usr/local/bin/probegate", "/tmp/my builds/probegate", "it's", "$HOME/x", "a;b", ""} {
		out, err := exec.Command("sh", "-c", `printf %s `+shellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("shellQuote(%q) = %s, which sh reads as %q (%v)", s, shellQuote(s), out, err)
		}
	}
	if got := shellQuote("./probegate"); got != "./probegate" {
		t.Errorf("shellQuote(./probegate) = %s, want it unquoted", got)
	}
}
