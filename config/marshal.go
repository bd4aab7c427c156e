package config

import (
	"bytes"
	"net/url"

	"go.yaml.in/yaml/v3"
)

// RedactedYAML is the configuration as YAML with every secret hidden:
// the secrets of the HTTP client blocks (passwords, tokens, credentials)
// read <secret>, as prometheus/common writes them, and a password in a
// backend URL reads xxxxx. It is what /api/v1/status/config serves.
func (c *Config) RedactedYAML() ([]byte, error) {
	shown := *c
	shown.Backends = make([]Backend, len(c.Backends))
	for i, b := range c.Backends {
		if u, err := url.Parse(b.URL); err == nil {
			b.URL = u.Redacted()
		} else {
			b.URL = "<unparseable URL>"
		}
		shown.Backends[i] = b
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&shown); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
