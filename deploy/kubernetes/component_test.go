package kubernetes

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/probegate/probegate/config"
)

// renderWithComponent renders an overlay of this base with one of its
// components, as an operator's overlay would use it. kustomize refuses an
// overlay inside its base and absolute paths, so it lives in a temporary
// folder that names both relatively.
func renderWithComponent(t *testing.T, component string) *base {
	t.Helper()
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, here)
	if err != nil {
		t.Fatal(err)
	}
	kustomization := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s]\ncomponents: [%s]\n",
		rel, filepath.Join(rel, "components", component))
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(kustomization), 0o644); err != nil {
		t.Fatal(err)
	}
	return renderDir(t, dir)
}

// TestEtcdMaintenanceComponent: the component makes the replicas share
// their maintenance and their probing through etcd (the store, shared
// probing with two vantage points, the admin API, each replica named
// after its pod) and changes nothing else of the base's configuration;
// the base alone keeps the file store and probes every backend itself.
func TestEtcdMaintenanceComponent(t *testing.T) {
	plain := render(t)
	baseCfg, _ := plain.shippedConfig(t)
	if baseCfg.Maintenance.Store != config.StoreFile {
		t.Errorf("the base's store is %q, want the file store", baseCfg.Maintenance.Store)
	}
	if enabled := sharedProbing(t, baseCfg)["enabled"]; enabled == true {
		t.Error("the base alone shares its probing, which needs the etcd store")
	}
	withEtcd := renderWithComponent(t, "etcd-maintenance")
	cfg, _ := withEtcd.shippedConfig(t)
	if cfg.Maintenance.Store != config.StoreEtcd || len(cfg.Maintenance.Etcd.Endpoints) == 0 || !cfg.Readiness.PeerRelative {
		t.Errorf("the component's configuration: store %q, endpoints %v, peer_relative %v; want etcd, some, true",
			cfg.Maintenance.Store, cfg.Maintenance.Etcd.Endpoints, cfg.Readiness.PeerRelative)
	}
	// The configuration as probegate loaded it, not the file's text, so
	// that a key the loader ignores or renames cannot pass.
	shared := sharedProbing(t, cfg)
	if shared["enabled"] != true || shared["vantage_points"] != float64(2) {
		t.Errorf("the component's probing.shared is %v, want enabled: true, vantage_points: 2", shared)
	}
	// Everything but what the component is for stays the base's.
	rest, baseRest := *cfg, *baseCfg
	rest.Maintenance, rest.Readiness.PeerRelative = baseRest.Maintenance, false
	got, want := loadedYAML(t, rest), loadedYAML(t, baseRest)
	delete(got, "probing")
	delete(want, "probing")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the component's probegate.yml drifted from the base's beyond maintenance, peer_relative and probing:\n%+v\nwant %+v", got, want)
	}

	c := withEtcd.container(t)
	if !slices.Contains(c.Args, "--web.enable-admin-api") {
		t.Errorf("args %v lack --web.enable-admin-api", c.Args)
	}
	if name, ok := flagValue(c.Args, "replica.name"); !ok || name != "$(POD_NAME)" {
		t.Errorf("--replica.name is %q, want $(POD_NAME)", name)
	}
	var fromPod bool
	for _, e := range c.Env {
		if e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
			fromPod = true
		}
	}
	if !fromPod {
		t.Errorf("env %v: POD_NAME does not come from the pod's name", c.Env)
	}
	if plainArgs := plain.container(t).Args; slices.Contains(plainArgs, "--web.enable-admin-api") {
		t.Error("the base alone enables the admin API")
	}
}

// loadedYAML is a configuration's values as probegate marshals them back,
// for comparing two loaded from different files and for reading a block
// by its keys.
func loadedYAML(t *testing.T, c config.Config) map[string]any {
	t.Helper()
	out, err := c.RedactedYAML()
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(out, &values); err != nil {
		t.Fatalf("the loaded configuration does not read back: %v\n%s", err, out)
	}
	return values
}

// sharedProbing is the probing.shared block of a loaded configuration,
// empty when it has none.
func sharedProbing(t *testing.T, c *config.Config) map[string]any {
	t.Helper()
	probing, _ := loadedYAML(t, *c)["probing"].(map[string]any)
	shared, _ := probing["shared"].(map[string]any)
	return shared
}
