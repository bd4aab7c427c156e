package config

import (
	"net/url"
	"reflect"
	"strings"

	"github.com/probegate/probegate/config/internal/yamlpos"
)

// Warnings lists what is valid but most likely a mistake, each placed as
// Validate places its problems. Today that is two listed backends that
// probe the same thing, the same url with the same health probe: one
// server counted twice in the readiness budget, which then holds with it
// alone, and asked twice in every fan-out round. Call it on a
// configuration that Validate accepted.
func (c *Config) Warnings() []Problem {
	var warnings []Problem
	byURL := make(map[string][]int, len(c.Backends))
	for i, b := range c.Backends {
		key := sameServer(b.URL)
		for _, j := range byURL[key] {
			if reflect.DeepEqual(c.ProbeFor(c.Backends[j]), c.ProbeFor(b)) {
				warnings = append(warnings, c.ProblemAt(yamlpos.Index("backends", i)+".url",
					"backend %q has the same url and health probe as backend %q (backends[%d]): one server counted twice in the readiness budget and asked twice in every fan-out round",
					b.Name, c.Backends[j].Name, j))
				break
			}
		}
		byURL[key] = append(byURL[key], i)
	}
	return warnings
}

// sameServer is a backend URL in the form two URLs naming the same
// server and path share: scheme and host in lower case, no default port,
// no trailing slash.
func sameServer(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host = "[" + host + "]:" + port
	}
	return scheme + "://" + host + strings.TrimSuffix(u.EscapedPath(), "/")
}
