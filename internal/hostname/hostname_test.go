package hostname

import "testing"

func TestNormal(t *testing.T) {
	for in, want := range map[string]string{
		"Gate-1.Example.": "gate-1.example",
		"gate-1.example":  "gate-1.example",
		"LOCALHOST":       "localhost",
		"127.0.0.1":       "127.0.0.1",
		"":                "",
		".":               "",
	} {
		if got := Normal(in); got != want {
			t.Errorf("Normal(%q) = %q; want %q", in, got, want)
		}
	}
}
