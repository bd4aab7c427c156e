package discovery

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	sd "github.com/prometheus/prometheus/discovery"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"go.yaml.in/yaml/v3"

	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
	"github.com/probegate/probegate/internal/redact"
)

// The labels a discovered target becomes a backend from, after
// relabelling. __address__ and __scheme__ mean what they mean to
// Prometheus; the others are probegate's own.
const (
	addressLabel   = model.AddressLabel // host:port, required
	schemeLabel    = model.SchemeLabel  // http (default) or https
	basePathLabel  = "__base_path__"    // path prefix of the backend's URL, default empty
	probePathLabel = "__probe_path__"   // default health_probe.path
	nameLabel      = "backend"          // the backend's name, default __address__
	groupLabel     = "group"            // the backend's replica group, default none (a group of its own)
)

// sdConfig is one block of a *_sd_configs list.
type sdConfig = sd.Config

// mechanism is one service discovery mechanism: the name its backends are
// counted under, the configuration key of its blocks and the blocks of it
// a configuration holds. A new mechanism is a file of its own with one of
// these, a line in mechanisms and a key in the configuration.
type mechanism struct {
	name string
	// key is the configuration key of its list of blocks, such as
	// file_sd_configs.
	key     string
	configs func(*config.Config) []sdConfig
	// fileOf, for a mechanism that reads its targets from files, is the
	// file a target group came from and the group's index in it, by the
	// group's Source; nil for the others.
	fileOf func(groupSource string) (file string, index int, ok bool)
}

// mechanisms are the supported mechanisms, in the order their backends
// win a name clash between them.
var mechanisms = []mechanism{fileSD, dnsSD}

func configsOf[T sdConfig](list []T) []sdConfig {
	out := make([]sdConfig, len(list))
	for i, c := range list {
		out[i] = c
	}
	return out
}

// entry is one block of a *_sd_configs list of a configuration, and the
// discovery manager's target set that holds what it finds.
type entry struct {
	// mechanism is the index of its mechanism in mechanisms.
	mechanism int
	// field is the block in the configuration, such as
	// file_sd_configs[1].
	field string
	// set names the manager's target set after the mechanism and the
	// block's content: a block a reload leaves alone keeps its set and its
	// targets, and a removed or changed block's set, and every target it
	// held, is no longer the configuration's.
	set    string
	config sdConfig
}

// entries are cfg's discovery blocks, mechanism by mechanism.
func entries(cfg *config.Config) []entry {
	var list []entry
	for i, m := range mechanisms {
		for j, c := range m.configs(cfg) {
			list = append(list, entry{mechanism: i, field: fmt.Sprintf("%s[%d]", m.key, j), set: setName(m.name, c), config: c})
		}
	}
	return list
}

// setName is the target set of a block: the mechanism and a digest of
// the block's settings.
func setName(mechanism string, c sdConfig) string {
	data, err := yaml.Marshal(c)
	if err != nil {
		data = fmt.Appendf(nil, "%#v", c)
	}
	sum := sha256.Sum256(data)
	return mechanism + "/" + hex.EncodeToString(sum[:8])
}

// sdConfigs are the discovery manager's target sets for cfg: one per
// discovery block. A set the configuration no longer has is stopped by
// the manager, and its targets forgotten.
func sdConfigs(cfg *config.Config) map[string]sd.Configs {
	sets := map[string]sd.Configs{}
	for _, e := range entries(cfg) {
		sets[e.set] = append(sets[e.set], e.config)
	}
	return sets
}

// invalidTarget reports a target that is not a backend: its labels, where
// it was found (place, as groupPlace or linePlace say it) and why, with
// the password of every URL or address in them redacted, since the report
// is logged.
func invalidTarget(labels model.LabelSet, place string, err error) error {
	return errors.New(redact.Userinfo(fmt.Sprintf("discovered target %s %s: %v", labels, place, err)))
}

// groupPlace says where a target group is, without reading its file: a
// file_sd group by its index in its file, which Prometheus counts from 0
// and writes "file:index" in the group's source, a form that reads as a
// line; any other group by its source.
func groupPlace(source, file string) string {
	if file != "" {
		if f, index, ok := groupFile(source); ok && f == file {
			return fmt.Sprintf("from group index %d of %s", index, file)
		}
	}
	return "from " + source
}

// linePlace says where a target group of a file is once its line is
// known: the file and the line, as every other place is said.
func linePlace(file string, line int) string {
	return fmt.Sprintf("at %s:%d", file, line)
}

// targetOf relabels one discovered target, whose own labels override its
// group's, and makes it a backend. keep is false when relabelling drops
// it.
func targetOf(group, own model.LabelSet, cfg *config.Config) (target pool.Target, keep bool, err error) {
	return makeTarget(labels.NewBuilder(labels.EmptyLabels()), group, own, cfg)
}

// makeTarget is targetOf with a builder to reuse: a source of a million
// targets then allocates one builder, not a million.
func makeTarget(lb *labels.Builder, group, own model.LabelSet, cfg *config.Config) (target pool.Target, keep bool, err error) {
	lb.Reset(labels.EmptyLabels())
	for n, v := range group {
		lb.Set(string(n), string(v))
	}
	for n, v := range own {
		lb.Set(string(n), string(v))
	}
	// The defaults go in before relabelling, as Prometheus does with
	// __scheme__, so that rules can read and replace them.
	if lb.Get(schemeLabel) == "" {
		lb.Set(schemeLabel, "http")
	}
	if lb.Get(probePathLabel) == "" {
		lb.Set(probePathLabel, cfg.HealthProbe.Path)
	}
	if !relabel.ProcessBuilder(lb, cfg.RelabelConfigs...) {
		return pool.Target{}, false, nil
	}
	target, err = backendOf(lb.Get(addressLabel), lb.Get(schemeLabel), lb.Get(basePathLabel), lb.Get(probePathLabel), lb.Get(nameLabel), cfg)
	if err == nil {
		target.Group, err = groupOf(lb.Get(groupLabel))
	}
	return target, err == nil, err
}

// backendOf checks the labels of a relabelled target and makes it a
// backend with the top-level health_probe and http_client_config.
func backendOf(address, scheme, basePath, probePath, name string, cfg *config.Config) (pool.Target, error) {
	if address == "" {
		return pool.Target{}, errors.New("no " + addressLabel + " label: a backend needs host:port")
	}
	if host, port, err := net.SplitHostPort(address); err != nil || host == "" || port == "" || strings.ContainsAny(address, "/?#@") {
		return pool.Target{}, fmt.Errorf("%s %q is not host:port", addressLabel, address)
	}
	if scheme != "http" && scheme != "https" {
		return pool.Target{}, fmt.Errorf("%s %q: want http or https", schemeLabel, scheme)
	}
	if basePath != "" && (!strings.HasPrefix(basePath, "/") || strings.ContainsAny(basePath, "?#")) {
		return pool.Target{}, fmt.Errorf("%s %q: want a path starting with / and no query or fragment", basePathLabel, basePath)
	}
	if !strings.HasPrefix(probePath, "/") {
		return pool.Target{}, fmt.Errorf("%s %q must start with /", probePathLabel, probePath)
	}
	if name == "" {
		name = address
	}
	if !config.ValidBackendName(name) {
		return pool.Target{}, fmt.Errorf("backend name %q may contain only letters, digits, '_', '.', ':' and '-'; set the %s label with relabel_configs", name, nameLabel)
	}
	u := &url.URL{Scheme: scheme, Host: address, Path: basePath}
	if _, err := url.Parse(u.String()); err != nil {
		return pool.Target{}, fmt.Errorf("url %q: %w", u, err)
	}
	probe := cfg.HealthProbe
	probe.Path = probePath
	return pool.Target{Name: name, URL: u.String(), Probe: probe, ClientConfig: cfg.HTTPClientConfig}, nil
}

// groupOf checks the group label of a relabelled target: none, or a
// group name as the configuration's backends[].group takes it.
func groupOf(group string) (string, error) {
	if group == "" {
		return "", nil
	}
	if msg := config.CheckGroupName(group); msg != "" {
		return "", fmt.Errorf("%s label: %s", groupLabel, msg)
	}
	return group, nil
}

// clash is a discovered backend left out because its name is taken, or
// because it would make a name mean both a replica group and a backend
// outside it (config.GroupNames).
type clash struct {
	name      string
	mechanism string
	// by is "static" or the mechanism whose backend of that name won.
	by string
	// group is the contested name of a clash between a group and a
	// backend, empty when the backend's name is taken outright; byGroup
	// says whether it is the backend's group (a backend outside it has
	// that name) or its own name (a group it is not in has it).
	group   string
	byGroup bool
}

// String says which backend was left out and why, for the log.
func (c clash) String() string {
	switch {
	case c.group == "":
		return c.name + " (taken by " + c.by + ")"
	case c.byGroup:
		return c.name + " (its group " + c.group + " is the name of a backend outside it, taken by " + c.by + ")"
	}
	return c.name + " (the name of a group it is not in, taken by " + c.by + ")"
}

// merge is the pool's targets: the static ones, then each source's
// backends in the order of sources. A discovered backend whose name is
// taken, by a static backend (one left out included) or by one found
// before it, is moved to its source's dropped targets and reported; so is
// one whose group is the name of a backend outside it, or whose name is
// that of a group it is not in, for replica groups and backends share one
// namespace. The static side wins such a clash, then the backend found
// first: static backends never clash among themselves (the configuration
// check refuses it), and each source lists its backends in order of name.
func merge(static, leftOut []pool.Target, sources []*source) (targets []pool.Target, clashes []clash) {
	owner := make(map[string]string, len(static)+len(leftOut))
	var names config.GroupNames
	targets = slices.Clone(static)
	for _, t := range slices.Concat(static, leftOut) {
		owner[t.Name] = "static"
		names.Add(t.Name, t.Group)
	}
	for _, s := range sources {
		kept := s.backends[:0]
		for _, r := range s.backends {
			if by, taken := owner[r.target.Name]; taken {
				clashes = append(clashes, clash{name: r.target.Name, mechanism: s.mechanism, by: by})
				s.drop(r, dropNameClash)
				continue
			}
			if c, clashed := names.Clash(r.target.Name, r.target.Group); clashed {
				clashes = append(clashes, clash{name: r.target.Name, mechanism: s.mechanism, by: owner[c.Other], group: c.Name, byGroup: c.ByGroup})
				s.drop(r, dropNameClash)
				continue
			}
			owner[r.target.Name] = s.mechanism
			names.Add(r.target.Name, r.target.Group)
			targets = append(targets, r.target)
			kept = append(kept, r)
		}
		clear(s.backends[len(kept):])
		s.backends = kept
	}
	return targets, clashes
}
