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

// The probe kinds, as health_probe.kind names them. collector/probe has
// one entry for each in its kind table, and a test there checks that the
// two name the same kinds.
const (
	KindHTTP = "http"
	KindTCP  = "tcp"
	KindGRPC = "grpc"
)

// Kinds lists the probe kinds, the default first.
func Kinds() []string { return []string{KindHTTP, KindTCP, KindGRPC} }

// kindKey is a health_probe key that means something to some probe kinds
// only.
type kindKey struct {
	key   string
	kinds []string
	// isDefault reports whether p holds the key's default. A default asks
	// for nothing, whatever the kind, which lets a configuration written
	// back out (every key present) load again.
	isDefault func(p HealthProbe) bool
}

// kindKeys are the health_probe keys that apply to some kinds only, in the
// order their problems are reported. Every other key applies to all kinds.
var kindKeys = []kindKey{
	{"path", []string{KindHTTP}, func(p HealthProbe) bool { return p.Path == Default().HealthProbe.Path }},
	{"method", []string{KindHTTP}, func(p HealthProbe) bool { return p.Method == Default().HealthProbe.Method }},
	{"headers", []string{KindHTTP}, func(p HealthProbe) bool { return len(p.Headers) == 0 }},
	{"expect_body_regexp", []string{KindHTTP}, func(p HealthProbe) bool { return p.ExpectBodyRegexp == "" }},
	{"keep_alive", []string{KindHTTP}, HealthProbe.KeepsAlive},
	{"grpc_service", []string{KindGRPC}, func(p HealthProbe) bool { return p.GRPCService == "" }},
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
	for _, k := range kindKeys {
		if set(k.key) && !slices.Contains(k.kinds, kind) && !k.isDefault(p) {
			v.add(prefix+"."+k.key, "applies to %s probes only, and this one's kind is %s", strings.Join(k.kinds, " and "), kind)
		}
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
