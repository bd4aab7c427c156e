package config

import (
	"strconv"
	"strings"
)

// SetOrigin records that a flag or environment variable (such as
// "--health-probe.timeout" or "PROBEGATE_GATE_DRAIN") set field (such as
// "health_probe.timeout"), so that Validate blames it rather than the file.
func (c *Config) SetOrigin(field, origin string) {
	if c.origins == nil {
		c.origins = make(map[string]string)
	}
	c.origins[field] = origin
}

// SetOrigin records the flag that added the backend (such as
// "--backend pdb-1=http://127.0.0.1:8081"), so that Validate blames it
// for the backend's problems rather than the file.
func (b *Backend) SetOrigin(origin string) {
	b.origin = origin
}

// originOf is the recorded origin of field or of the nearest block or
// backend holding it, or "".
func (c *Config) originOf(field string) string {
	for f := field; f != ""; f = enclosing(f) {
		if origin, ok := c.origins[f]; ok {
			return origin
		}
		if i, ok := backendIndex(f); ok && i < len(c.Backends) && c.Backends[i].origin != "" {
			return c.Backends[i].origin
		}
	}
	return ""
}

// backendIndex is i for the field path "backends[i]".
func backendIndex(field string) (int, bool) {
	digits, ok := strings.CutPrefix(field, "backends[")
	if !ok {
		return 0, false
	}
	digits, ok = strings.CutSuffix(digits, "]")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(digits)
	return i, err == nil && i >= 0
}

// enclosing is the field path of the block or list item holding field:
// "backends[3]" for "backends[3].url", "backends" for "backends[3]".
func enclosing(field string) string {
	i := strings.LastIndexAny(field, ".[")
	if i < 0 {
		return ""
	}
	return field[:i]
}
