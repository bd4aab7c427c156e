package main

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/readiness"
	"github.com/probegate/probegate/collector/vantage"
	"github.com/probegate/probegate/config"
)

// shareProbing has this replica probe its share of the backends and judge
// every backend by its vantage points' published verdicts, beside the
// replica views in the shared store.
func (s *server) shareProbing(reg prometheus.Registerer, now func() time.Time) {
	s.maint.ShareWith(func(ctx context.Context, shared readiness.SharedStore) {
		vantage.New(vantage.Options{Pool: s.pool, Self: s.opts.replicaName(), VantagePoints: s.shared.VantagePoints,
			Store: shared.Verdicts, Members: shared.Members, ReadMembersSoon: shared.ReadSoon, Resync: s.prober.Sync,
			Registerer: reg, Logger: s.logger, Now: now}).Run(ctx)
	})
}

// checkSharedProbing refuses to start shared probing without
// --replica.name: the backends are assigned by the replicas' names, which
// must stay the same across restarts and differ between replicas. It is
// the serving command's requirement, not the file's, so check-config,
// which judges a file for any replica, does not make it.
func (o *options) checkSharedProbing(cfg *config.Config) error {
	if !cfg.Probing.Shared.Enabled || o.ReplicaName != "" {
		return nil
	}
	return fmt.Errorf("%v", cfg.ProblemAt("probing.shared.enabled",
		"needs --replica.name: the backends are assigned by the replicas' names, which must be stable and distinct"))
}
