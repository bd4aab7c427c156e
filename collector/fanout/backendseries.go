package fanout

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// backendSeries is a metric vector with one child per backend of the
// fan-out's pool, labelled backend, or with names set one per name it
// gives (the replica groups). It exports nothing while exported says its
// feature is off; while it is on, every backend (or name) of the pool has
// its child from the first scrape, and one that left the pool is
// forgotten at the next.
type backendSeries[T any] struct {
	vec prometheus.Collector
	// with and remove are the vector's WithLabelValues and
	// DeleteLabelValues.
	with     func(...string) T
	remove   func(...string) bool
	exported func(config.Fanout) bool
	// namesIn are the children's names in a pool; nil is its backends'.
	namesIn func(*pool.Pool) []string
	// names maps each backend seen to its child, so that recording costs
	// no label lookup, and to forget those gone.
	names sync.Map
	// fanout is the Fanout recording, set by New.
	fanout atomic.Pointer[Fanout]
}

// child is the backend's child of the vector.
func (s *backendSeries[T]) child(backend string) T {
	c, known := s.names.Load(backend)
	if !known {
		c, _ = s.names.LoadOrStore(backend, s.with(backend))
	}
	return c.(T)
}

// Describe implements prometheus.Collector.
func (s *backendSeries[T]) Describe(ch chan<- *prometheus.Desc) { s.vec.Describe(ch) }

// Collect implements prometheus.Collector.
func (s *backendSeries[T]) Collect(ch chan<- prometheus.Metric) {
	f := s.fanout.Load()
	if f == nil || !s.exported(f.settings.Load().fanout) {
		return
	}
	inPool := make(map[string]bool)
	var names []string
	if s.namesIn != nil {
		names = s.namesIn(f.pool)
	} else {
		for _, b := range f.pool.Backends() {
			names = append(names, b.Name)
		}
	}
	for _, name := range names {
		inPool[name] = true
		s.child(name)
	}
	s.names.Range(func(name, _ any) bool {
		if !inPool[name.(string)] {
			s.remove(name.(string))
			s.names.Delete(name)
		}
		return true
	})
	s.vec.Collect(ch)
}
