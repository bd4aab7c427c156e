package config

import (
	"path/filepath"
	"testing"
)

// TestDiscoveryBlocksDecode: the service discovery blocks read as in a
// Prometheus scrape config, file_sd_configs paths relative to the
// configuration file's directory.
func TestDiscoveryBlocksDecode(t *testing.T) {
	c, err := Load("testdata/valid-full.yml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.FileSDConfigs) != 1 || c.FileSDConfigs[0].Files[0] != filepath.Join("testdata", "backends/*.yml") {
		t.Errorf("file_sd_configs %+v, want backends/*.yml under testdata/", c.FileSDConfigs)
	}
	if len(c.DNSSDConfigs) != 1 || c.DNSSDConfigs[0].Type != "SRV" || c.DNSSDConfigs[0].Names[0] != "_pdb._tcp.example.internal" {
		t.Errorf("dns_sd_configs %+v", c.DNSSDConfigs)
	}
	if len(c.RelabelConfigs) != 1 || c.RelabelConfigs[0].TargetLabel != "backend" || c.RelabelConfigs[0].Action != "replace" {
		t.Errorf("relabel_configs %+v, want one replace rule with its defaults", c.RelabelConfigs)
	}
}

// TestBackendNameMayHoldAColon: a discovered backend is named host:port,
// so a static one may be too.
func TestBackendNameMayHoldAColon(t *testing.T) {
	if _, err := parse([]byte("backends: [{name: 'pdb:8081', url: 'http://127.0.0.1:8081'}]"), "probegate.yml"); err != nil {
		t.Error(err)
	}
}
