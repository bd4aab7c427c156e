package discovery

import (
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/discovery/targetgroup"

	"github.com/probegate/probegate/config"
)

// FuzzTargetOf checks the making of a backend from any discovered labels:
// a target accepted is an http or https URL with no userinfo, a host:port
// equal to its address and a valid name, to which the probe path can be
// appended; and a password in any label never shows in the report of a
// target refused.
func FuzzTargetOf(f *testing.F) {
	f.Add("127.0.0.1:8081", "", "", "", "", "127.0.0.1:1", uint8(0))
	f.Add("[::1]:1", "https", "/pdb", "/status", "v6", "h:1", uint8(1))
	f.Add("h:1/x", "ftp", "pdb", "status", "a b", "h", uint8(2))
	f.Add("h:", "http", "/a?b", "/x y", "n", "", uint8(3))
	f.Add("%41:1", "HTTP", "/%zz", "/#", "n:1", "[", uint8(4))
	cfg := config.Default()
	f.Fuzz(func(t *testing.T, address, scheme, basePath, probePath, name, secretRest string, where uint8) {
		const password = "hunter2"
		secret := model.LabelValue("alice:" + password + "@" + secretRest)
		own := model.LabelSet{}
		for label, value := range map[model.LabelName]string{
			addressLabel: address, schemeLabel: scheme, basePathLabel: basePath, probePathLabel: probePath, nameLabel: name,
		} {
			if value != "" {
				own[label] = model.LabelValue(value)
			}
		}
		secretLabels := []model.LabelName{addressLabel, schemeLabel, basePathLabel, probePathLabel, nameLabel, "origin"}
		own[secretLabels[int(where)%len(secretLabels)]] = secret

		target, keep, err := targetOf(nil, own, cfg)
		if err != nil {
			report := invalidTarget(own, "fuzz", err).Error()
			if strings.Contains(report, password) {
				t.Fatalf("the report of a refused target shows the password: %s", report)
			}
			return
		}
		if !keep {
			t.Fatalf("%v: dropped without relabelling rules", own)
		}
		u, err := url.Parse(target.URL)
		if err != nil {
			t.Fatalf("%v: accepted url %q does not parse: %v", own, target.URL, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Host != string(own[addressLabel]) || u.RawQuery != "" || u.Fragment != "" {
			t.Fatalf("%v: accepted url %q is not a plain http(s) URL of the address", own, target.URL)
		}
		if !config.ValidBackendName(target.Name) {
			t.Fatalf("%v: accepted name %q is not a valid backend name", own, target.Name)
		}
		if _, err := url.Parse(target.URL + target.Probe.Path); err != nil || !strings.HasPrefix(target.Probe.Path, "/") {
			t.Fatalf("%v: probe url %q does not parse: %v", own, target.URL+target.Probe.Path, err)
		}
		// The same target through a group gives the same backend.
		s := evaluate("file", []*targetgroup.Group{{Source: "fuzz", Targets: []model.LabelSet{own}}}, cfg, nil)
		if len(s.backends) != 1 || s.backends[0].target.Name != target.Name || s.backends[0].target.URL != target.URL {
			t.Fatalf("%v: evaluated to %q, want the one backend %s", own, backendNames(s), target.Name)
		}
	})
}
