package kubernetes

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

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
// their maintenance through etcd (the store, the admin API, each replica
// named after its pod) and changes nothing else of the base's
// configuration; the base alone keeps the file store.
func TestEtcdMaintenanceComponent(t *testing.T) {
	plain := render(t)
	baseCfg, _ := plain.shippedConfig(t)
	if baseCfg.Maintenance.Store != config.StoreFile {
		t.Errorf("the base's store is %q, want the file store", baseCfg.Maintenance.Store)
	}
	withEtcd := renderWithComponent(t, "etcd-maintenance")
	cfg, _ := withEtcd.shippedConfig(t)
	if cfg.Maintenance.Store != config.StoreEtcd || len(cfg.Maintenance.Etcd.Endpoints) == 0 || !cfg.Readiness.PeerRelative {
		t.Errorf("the component's configuration: store %q, endpoints %v, peer_relative %v; want etcd, some, true",
			cfg.Maintenance.Store, cfg.Maintenance.Etcd.Endpoints, cfg.Readiness.PeerRelative)
	}
	// Everything but what the component is for stays the base's.
	rest, baseRest := *cfg, *baseCfg
	rest.Maintenance, rest.Readiness.PeerRelative = baseRest.Maintenance, false
	if got, want := withoutBookkeeping(rest), withoutBookkeeping(baseRest); !reflect.DeepEqual(got, want) {
		t.Errorf("the component's probegate.yml drifted from the base's beyond maintenance and peer_relative:\n%+v\nwant %+v", got, want)
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

// withoutBookkeeping is a configuration's values, for comparing two loaded
// from different files.
func withoutBookkeeping(c config.Config) string {
	out, err := c.RedactedYAML()
	if err != nil {
		return err.Error()
	}
	return string(out)
}
