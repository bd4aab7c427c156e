package main

import (
	"strings"
	"testing"

	"github.com/probegate/probegate/config"
)

// TestSharedProbingNeedsAReplicaName: a replica does not start shared
// probing under the name it makes up (host and port), which another
// replica on another port of the same host, or the same replica after a
// move, would not share; it names the flag and the setting.
func TestSharedProbingNeedsAReplicaName(t *testing.T) {
	cfg := config.Default()
	cfg.Maintenance.Store = config.StoreEtcd
	cfg.Probing.Shared.Enabled = true
	err := (&options{}).checkSharedProbing(cfg)
	if err == nil || !strings.Contains(err.Error(), "--replica.name") || !strings.Contains(err.Error(), "probing.shared.enabled") {
		t.Errorf("without --replica.name: %v, want an error naming the flag and probing.shared.enabled", err)
	}
	if err := (&options{ReplicaName: "r1"}).checkSharedProbing(cfg); err != nil {
		t.Errorf("with --replica.name: %v", err)
	}
	cfg.Probing.Shared.Enabled = false
	if err := (&options{}).checkSharedProbing(cfg); err != nil {
		t.Errorf("with shared probing off: %v", err)
	}
}
