package flagconfig

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kingpin/v2"

	"github.com/probegate/probegate/internal/redact"
)

// Backends registers the repeatable flag name, such as --backend, whose
// name=url values Apply adds after the file's backends. In its
// environment variable there is one per line.
func (o *Overrides) Backends(app Adder, name, help string) *kingpin.FlagClause {
	return o.backends.register(app, name, Envar(name), help, &o.backends)
}

// AddsBackends reports whether the backend flag, or its environment
// variable, gave any backend.
func (o *Overrides) AddsBackends() bool { return len(o.backends.entries) > 0 }

// backends collects the repeatable backend flag.
type backends struct {
	source
	entries []backendEntry
}

type backendEntry struct {
	name, url, origin string
}

// Set adds one backend. The name and URL are checked by Validate, which
// names this flag.
func (v *backends) Set(s string) error {
	name, url, ok := strings.Cut(s, "=")
	name, url = strings.TrimSpace(name), strings.TrimSpace(url)
	if !ok || name == "" || url == "" {
		return fmt.Errorf("%s: %q: want name=url, such as pdb-1=http://127.0.0.1:8081", v.origin(), redact.URL(s))
	}
	// The origin is shown in errors: never with a password.
	v.entries = append(v.entries, backendEntry{name: name, url: url, origin: v.origin() + " " + name + "=" + redact.URL(url)})
	return nil
}

func (v *backends) String() string {
	parts := make([]string, len(v.entries))
	for i, e := range v.entries {
		parts[i] = e.name + "=" + e.url
	}
	return strings.Join(parts, ",")
}

// IsCumulative tells kingpin the flag may repeat.
func (*backends) IsCumulative() bool { return true }
