package exporter

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"golang.org/x/sync/singleflight"
)

// SharedGatherer has the scrapes that arrive while a gathering runs share
// its result instead of each building its own. At 10,000 backends one
// gathering builds about 340,000 series, some 85 MB of families: scrapes
// in flight together used to hold one such copy each (1.2 to 1.7 GB with
// 16 scrapers). The families are built afresh for every gathering and the
// encoder only reads them, so sharing them is safe; a scrape that arrives
// mid-way gets data at most one gathering old, as if it had come a moment
// earlier.
func SharedGatherer(g prometheus.Gatherer) prometheus.Gatherer {
	return &sharedGatherer{gatherer: g}
}

type sharedGatherer struct {
	gatherer prometheus.Gatherer
	flight   singleflight.Group
}

func (s *sharedGatherer) Gather() ([]*dto.MetricFamily, error) {
	families, err, _ := s.flight.Do("gather", func() (any, error) { return s.gatherer.Gather() })
	mfs, _ := families.([]*dto.MetricFamily)
	return mfs, err
}
