package config

import (
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Kinds lists the probe kinds, for messages.
func Kinds() []string { return []string{KindHTTP, KindTCP, KindGRPC} }

// overrideKinds applies the kind keys a backend's health_probe block sets.
// A backend's headers replace the top-level ones as a whole.
func (p *HealthProbe) overrideKinds(o HealthProbeOverride) {
	if o.Kind != nil {
		p.Kind = *o.Kind
	}
	if o.Method != nil {
		p.Method = *o.Method
	}
	if o.Headers != nil {
		p.Headers = o.Headers
	}
	if o.ExpectBodyRegexp != nil {
		p.ExpectBodyRegexp = *o.ExpectBodyRegexp
	}
	if o.GRPCService != nil {
		p.GRPCService = *o.GRPCService
	}
	if o.KeepAlive != nil {
		p.KeepAlive = new(*o.KeepAlive)
	}
}

// Equal reports whether two probe settings are the same. A backend whose
// probe settings change on reload starts over, so every key counts; a
// missing headers map and an empty one are the same.
func (p HealthProbe) Equal(o HealthProbe) bool {
	if !maps.Equal(p.Headers, o.Headers) {
		return false
	}
	if p.KeepsAlive() != o.KeepsAlive() {
		return false
	}
	p.Headers, o.Headers = nil, nil
	p.KeepAlive, o.KeepAlive = nil, nil
	return reflect.DeepEqual(p, o)
}

// KeepsAlive reports whether HTTP probes keep their connection for the
// next probe: keep_alive, true when not set.
func (p HealthProbe) KeepsAlive() bool {
	return p.KeepAlive == nil || *p.KeepAlive
}

// EffectiveKind is the probe's kind, KindHTTP when none is set (a
// HealthProbe built in code rather than decoded).
func (p HealthProbe) EffectiveKind() string {
	if p.Kind == "" {
		return KindHTTP
	}
	return p.Kind
}

// httpOnlyKeys are the health_probe keys that mean something to HTTP
// probes only.
var httpOnlyKeys = []string{"path", "method", "headers", "expect_body_regexp", "keep_alive"}

// isDefaultKey reports whether an http-only key of p holds its default.
func isDefaultKey(p HealthProbe, key string) bool {
	d := Default().HealthProbe
	switch key {
	case "path":
		return p.Path == d.Path
	case "method":
		return p.Method == d.Method
	case "headers":
		return len(p.Headers) == 0
	case "expect_body_regexp":
		return p.ExpectBodyRegexp == ""
	case "keep_alive":
		return p.KeepsAlive()
	}
	return false
}

// probeKinds checks the kind keys of a health_probe block. p is the
// settings in force for the block, set says which keys the block itself
// sets: a key inherited from the top level and meaningless to a backend's
// kind is not the backend's mistake.
func (v *validator) probeKinds(prefix string, p HealthProbe, set func(key string) bool) {
	kind := p.EffectiveKind()
	if set("kind") && !slices.Contains(Kinds(), p.Kind) {
		v.add(prefix+".kind", "%q is not a probe kind: want one of %s", p.Kind, strings.Join(Kinds(), ", "))
		return
	}
	// A key given its default value asks for nothing, which lets a
	// configuration written back out (every key present) load again.
	if kind != KindHTTP {
		for _, key := range httpOnlyKeys {
			if set(key) && !isDefaultKey(p, key) {
				v.add(prefix+"."+key, "applies to http probes only, and this one's kind is %s", kind)
			}
		}
	}
	if kind != KindGRPC && set("grpc_service") && p.GRPCService != "" {
		v.add(prefix+".grpc_service", "applies to grpc probes only, and this one's kind is %s", kind)
	}
	if kind != KindHTTP {
		return
	}
	if set("method") && p.Method != http.MethodGet && p.Method != http.MethodHead {
		v.add(prefix+".method", "%q is not a probe method: want GET or HEAD", p.Method)
	}
	if set("headers") {
		for _, name := range slices.Sorted(maps.Keys(p.Headers)) {
			value := p.Headers[name]
			switch {
			case !httpguts.ValidHeaderFieldName(name):
				v.add(prefix+".headers."+name, "%q is not a valid HTTP header name", name)
			case !httpguts.ValidHeaderFieldValue(value):
				v.add(prefix+".headers."+name, "the value holds a character an HTTP header cannot carry, such as a line break")
			case strings.EqualFold(name, "Host") && !httpguts.ValidHostHeader(value):
				v.add(prefix+".headers."+name, "%q is not a valid host", value)
			}
		}
	}
	if set("expect_body_regexp") {
		if _, err := regexp.Compile(p.ExpectBodyRegexp); err != nil {
			v.add(prefix+".expect_body_regexp", "%q is not a regular expression: %v", p.ExpectBodyRegexp, err)
		}
	}
	if p.Method == http.MethodHead && p.ExpectBodyRegexp != "" && (set("method") || set("expect_body_regexp")) {
		field := "method"
		if set("expect_body_regexp") {
			field = "expect_body_regexp"
		}
		v.add(prefix+"."+field, "a HEAD probe gets no body, so expect_body_regexp can never match: use GET")
	}
}

// kindKeySet reports which kind keys a backend's health_probe block sets,
// the path included.
func kindKeySet(o HealthProbeOverride) func(key string) bool {
	return func(key string) bool {
		switch key {
		case "path":
			return o.Path != nil
		case "kind":
			return o.Kind != nil
		case "method":
			return o.Method != nil
		case "headers":
			return o.Headers != nil
		case "expect_body_regexp":
			return o.ExpectBodyRegexp != nil
		case "grpc_service":
			return o.GRPCService != nil
		case "keep_alive":
			return o.KeepAlive != nil
		}
		return false
	}
}
