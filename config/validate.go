package config

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/config/internal/yamlpos"
	"github.com/probegate/probegate/internal/proxyheader"
	"github.com/probegate/probegate/internal/redact"
)

// backendNameRE is what a backend name may contain: it becomes a metric
// label value and a path segment in logs.
// A discovered backend is named after its host:port unless relabelling
// sets the backend label, hence the ':'.
var backendNameRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)

// GroupNameRE is what a replica group's name may be, in the
// configuration and in a discovered target's group label alike: it
// becomes a metric label value and a header's word.
var GroupNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,64}$`)

// CheckGroupName says what is wrong with a group name, or returns "".
func CheckGroupName(name string) string {
	if GroupNameRE.MatchString(name) {
		return ""
	}
	if len(name) > 64 {
		return fmt.Sprintf("%q is longer than 64 characters", name)
	}
	return fmt.Sprintf("%q may contain only letters, digits, '_', '.' and '-' (1 to 64 of them)", name)
}

// Validate checks every value and every rule between values, and returns
// an *Error listing all problems, or nil. When the configuration came from
// a file each problem names its line; when SetOrigin recorded that a flag
// or environment variable set a field, the problem names that instead.
func (c *Config) Validate() error {
	v := &validator{c: c}
	v.healthProbe()
	v.percent("pool.panic_threshold", c.Pool.PanicThreshold)
	v.readiness()
	v.gate()
	v.fanout()
	v.passiveHealth()
	v.maintenance()
	v.probing()
	if err := c.HTTPClientConfig.Validate(); err != nil {
		v.add("http_client_config", "%v", err)
	}
	v.backends()
	v.discovery()
	return v.err()
}

// validator collects the problems of one configuration.
type validator struct {
	c        *Config
	problems []Problem
}

// err is an *Error with the problems found, or nil.
func (v *validator) err() error {
	if len(v.problems) == 0 {
		return nil
	}
	return &Error{Problems: v.problems}
}

// add records a problem with field, placed in the file or blamed on the
// flag that set it.
func (v *validator) add(field, format string, args ...any) {
	v.problems = append(v.problems, v.c.ProblemAt(field, format, args...))
}

// where describes where the value of field came from, for messages that
// compare it with another field.
func (v *validator) where(field string) string {
	if origin := v.c.originOf(field); origin != "" {
		return field + " set by " + origin
	}
	if line, exact := v.c.src.lineOf(field); exact {
		return fmt.Sprintf("%s at line %d", field, line)
	}
	return "the default " + field
}

// isSet reports whether field was given by a flag or in the file rather
// than left at its default.
func (v *validator) isSet(field string) bool {
	if v.c.originOf(field) != "" {
		return true
	}
	_, exact := v.c.src.lineOf(field)
	return exact
}

func (v *validator) healthProbe() {
	p := v.c.HealthProbe
	v.probeKeys("health_probe", p, func(string) bool { return true })
	v.probeKinds("health_probe", p, func(key string) bool { return v.isSet("health_probe." + key) })
	if p.Timeout > p.Interval && p.Interval > 0 {
		if v.isSet("health_probe.timeout") || !v.isSet("health_probe.interval") {
			v.add("health_probe.timeout", "%s is longer than the interval %s%s",
				p.Timeout, p.Interval, v.otherField("health_probe.timeout", "health_probe.interval"))
		} else {
			v.add("health_probe.interval", "%s is shorter than the timeout %s%s",
				p.Interval, p.Timeout, v.otherField("health_probe.interval", "health_probe.timeout"))
		}
	}
}

// otherField names where the other field of a comparison came from,
// unless it sits next to the blamed field in the file.
func (v *validator) otherField(blamed, other string) string {
	if v.c.originOf(blamed) == "" && v.c.originOf(other) == "" && v.isSet(blamed) && v.isSet(other) &&
		enclosing(blamed) == enclosing(other) {
		return ""
	}
	return " (" + v.where(other) + ")"
}

// probeKeys checks the keys of a health_probe block for which set is true.
func (v *validator) probeKeys(prefix string, p HealthProbe, set func(key string) bool) {
	if set("path") && !strings.HasPrefix(p.Path, "/") {
		v.add(prefix+".path", "%q must start with \"/\", such as /healthz", p.Path)
	}
	if set("interval") {
		v.positive(prefix+".interval", p.Interval)
	}
	if set("timeout") {
		v.positive(prefix+".timeout", p.Timeout)
	}
	if set("failures") {
		v.atLeastOne(prefix+".failures", p.Failures)
	}
	if set("successes") {
		v.atLeastOne(prefix+".successes", p.Successes)
	}
}

func (v *validator) readiness() {
	r := v.c.Readiness
	if r.MinAvailable != nil && r.MaxUnavailable != nil {
		v.add("readiness.max_unavailable", "min_available is set too; set at most one of the two")
	}
	v.intOrPercent("readiness.min_available", r.MinAvailable)
	v.intOrPercent("readiness.max_unavailable", r.MaxUnavailable)
	g := r.PerGroup
	if g.MinAvailable != nil && g.MaxUnavailable != nil {
		v.add("readiness.per_group.max_unavailable", "min_available is set too; set at most one of the two")
	}
	v.intOrPercent("readiness.per_group.min_available", g.MinAvailable)
	v.intOrPercent("readiness.per_group.max_unavailable", g.MaxUnavailable)
}

func (v *validator) gate() {
	g := v.c.Gate
	if g.Drain < 0 {
		v.add("gate.drain", "%s is negative: want 0s or more", time.Duration(g.Drain))
	}
	v.positive("gate.shutdown_timeout", g.ShutdownTimeout)
	v.positive("gate.check_interval", g.CheckInterval)
}

func (v *validator) fanout() {
	f := v.c.Fanout
	v.positive("fanout.timeout", f.Timeout)
	if formats := MergeFormats(); !slices.Contains(formats, f.Merge) {
		v.add("fanout.merge", "%q is not a merge format: want one of %s", f.Merge, strings.Join(formats, ", "))
	}
	v.positiveBytes("fanout.max_request_bytes", f.MaxRequestBytes)
	v.positive("fanout.request_read_timeout", f.RequestReadTimeout)
	v.positiveBytes("fanout.max_response_bytes", f.MaxResponseBytes)
	v.positiveBytes("fanout.max_request_header_bytes", f.MaxRequestHeaderBytes)
	v.atLeastOne("fanout.max_concurrent", f.MaxConcurrent)
	v.intOrPercent("fanout.min_contributors", &f.MinContributors)
	if f.MinContributors.Value == 0 {
		v.add("fanout.min_contributors", "%s would accept a round nobody contributed to: want at least 1 or 1%%", f.MinContributors)
	}
	v.atLeastOne("fanout.max_hops", f.MaxHops)
	v.positiveBytes("fanout.max_buffered_bytes", f.MaxBufferedBytes)
	if f.MaxBufferedBytes > 0 && f.MaxBufferedBytes < f.MaxResponseBytes {
		v.add("fanout.max_buffered_bytes", "%s is less than one answer may take (%s): no answer of the largest size fanout.max_response_bytes allows could ever contribute",
			f.MaxBufferedBytes, v.where("fanout.max_response_bytes"))
	}
	v.outlierDetection(f.OutlierDetection)
	v.stragglers(f.Stragglers)
	v.hedge(f.Hedge)
	for i, name := range f.ForwardHeaders {
		if msg := proxyheader.Unforwardable(name); msg != "" {
			v.add(yamlpos.Index("fanout.forward_headers", i), "%s", msg)
		}
	}
}

func (v *validator) outlierDetection(o OutlierDetection) {
	const prefix = "fanout.outlier_detection."
	v.positive(prefix+"window", o.Window)
	v.atLeastOne(prefix+"min_rounds", o.MinRounds)
	if !(o.FailureGap > 0 && o.FailureGap <= 1) {
		v.add(prefix+"failure_gap", "%v is not a gap between failure ratios: want more than 0 and at most 1", o.FailureGap)
	}
	if !(o.LatencyFactor > 1) {
		v.add(prefix+"latency_factor", "%v would eject backends no slower than their peers: want more than 1", o.LatencyFactor)
	}
	if o.LatencyFloor < 0 {
		v.add(prefix+"latency_floor", "%s is negative: want 0s or more", o.LatencyFloor)
	}
	v.positive(prefix+"base_ejection", o.BaseEjection)
	if o.MaxEjection < o.BaseEjection {
		v.add(prefix+"max_ejection", "%s is shorter than %s (%s)", o.MaxEjection, prefix+"base_ejection", o.BaseEjection)
	}
}

func (v *validator) passiveHealth() {
	p := v.c.PassiveHealth
	v.positive("passive_health.window", p.Window)
	v.atLeastOne("passive_health.max_failures", p.MaxFailures)
	v.atLeastOne("passive_health.min_requests", p.MinRequests)
	if !(p.MinSuccessRatio >= 0 && p.MinSuccessRatio <= 1) {
		v.add("passive_health.min_success_ratio", "%v is not a ratio between 0 and 1", p.MinSuccessRatio)
	}
	v.percent("passive_health.max_ejected_percent", p.MaxEjectedPercent)
}

func (v *validator) backends() {
	seen := make(map[string]int, len(v.c.Backends))
	var names GroupNames
	for i, b := range v.c.Backends {
		prefix := yamlpos.Index("backends", i)
		named := false
		switch {
		case b.Name == "":
			v.add(prefix+".name", "a backend needs a name such as pdb-1")
		case !backendNameRE.MatchString(b.Name):
			v.add(prefix+".name", "%q may contain only letters, digits, '_', '.', ':' and '-'", b.Name)
		default:
			if first, dup := seen[b.Name]; dup {
				v.add(prefix+".name", "%q is already the name of backends[%d]; names must be unique", b.Name, first)
			} else {
				seen[b.Name] = i
				named = true
			}
		}
		if msg := checkBackendURL(b.URL); msg != "" {
			v.add(prefix+".url", "%s", msg)
		}
		// An empty group is no group, unless the file wrote it so.
		if _, written := v.c.src.lineOf(prefix + ".group"); b.Group != "" || written {
			if msg := CheckGroupName(b.Group); msg != "" {
				v.add(prefix+".group", "%s", msg)
				named = false
			}
		}
		if named {
			if c, clash := names.Clash(b.Name, b.Group); clash {
				v.groupClash(prefix, c, seen[c.Other])
			}
			names.Add(b.Name, b.Group)
		}
		v.backendProbe(prefix, b)
		if b.HTTPClientConfig != nil {
			if err := b.HTTPClientConfig.Validate(); err != nil {
				v.add(prefix+".http_client_config", "%v", err)
			}
		}
	}
}

// groupClash reports the backend at prefix, whose name or group is the
// contested name of c, against backends[other], which holds it.
func (v *validator) groupClash(prefix string, c GroupClash, other int) {
	otherPrefix := yamlpos.Index("backends", other)
	if c.ByGroup {
		v.add(prefix+".group", "group %q is also the name of %s (%s), which is not in it; "+
			"a client could not tell the group from the backend: rename one of them, or put %s in the group",
			c.Name, otherPrefix, v.where(otherPrefix+".name"), otherPrefix)
		return
	}
	v.add(prefix+".name", "%q is also the name of the group of %s (%s), which this backend is not in; "+
		"a client could not tell the backend from the group: rename one of them, or put this backend in the group",
		c.Name, otherPrefix, v.where(otherPrefix+".group"))
}

// backendProbe checks the keys a backend's health_probe block sets, and
// the timeout against the interval in force for the backend when it sets
// either (otherwise the top-level check covers it).
func (v *validator) backendProbe(prefix string, b Backend) {
	o := b.HealthProbe
	merged := v.c.ProbeFor(b)
	block := prefix + ".health_probe"
	v.probeKeys(block, merged, o.IsSet)
	v.probeKinds(block, merged, o.IsSet)
	if merged.Timeout <= merged.Interval || merged.Interval <= 0 {
		return
	}
	switch {
	case o.IsSet("timeout"):
		interval := "health_probe.interval"
		if o.IsSet("interval") {
			interval = block + ".interval"
		}
		v.add(block+".timeout", "%s is longer than the interval %s%s",
			merged.Timeout, merged.Interval, v.otherField(block+".timeout", interval))
	case o.IsSet("interval"):
		v.add(block+".interval", "%s is shorter than the timeout %s%s",
			merged.Interval, merged.Timeout, v.otherField(block+".interval", "health_probe.timeout"))
	}
}

// checkBackendURL says what is wrong with a backend URL, or returns "".
// Probe and fan-out paths are appended to it, so it cannot carry a query
// or fragment; it is exported as a label, so it must not carry a password.
// The message shows the URL redacted: an error is logged and may be
// answered to whoever asked for a reload.
func checkBackendURL(raw string) string {
	if raw == "" {
		return "a backend needs a url such as http://127.0.0.1:8081"
	}
	shown := redact.URL(raw)
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err // Without the URL it repeats.
		}
		return fmt.Sprintf("%q is not a URL: %v", shown, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("%q: want an absolute http:// or https:// URL such as http://127.0.0.1:8081", shown)
	case u.Host == "":
		return fmt.Sprintf("%q has no host", shown)
	case u.User != nil:
		return fmt.Sprintf("%q carries credentials, which would be exported in probegate_backend_info: "+
			"use http_client_config.basic_auth", shown)
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Sprintf("%q has a query: the probe and fan-out paths are appended to the URL, so it cannot carry one", shown)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Sprintf("%q has a fragment: want a URL without #", shown)
	}
	return ""
}

func (v *validator) positive(field string, d model.Duration) {
	if d <= 0 {
		v.add(field, "%s is not positive: want a duration such as 5s", d)
	}
}

func (v *validator) positiveBytes(field string, b Bytes) {
	if b <= 0 {
		v.add(field, "%d is not a positive size: want a size such as 1MiB", int64(b))
	}
}

func (v *validator) atLeastOne(field string, n int) {
	if n < 1 {
		v.add(field, "%d is below 1: want at least 1", n)
	}
}

func (v *validator) percent(field string, p float64) {
	if !(p >= 0 && p <= 100) {
		v.add(field, "%v is not a percentage between 0 and 100", p)
	}
}

func (v *validator) intOrPercent(field string, p *IntOrPercent) {
	switch {
	case p == nil:
	case p.Value < 0:
		v.add(field, "%s is negative: want an integer or a percentage such as \"50%%\"", p)
	case p.Percent && p.Value > 100:
		v.add(field, "%s is above 100%%", p)
	}
}
