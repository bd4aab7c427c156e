// Package pool keeps the backends and everything decided over them as a
// set: which are selected for traffic, when the pool fails open, the
// readiness budget (Kubernetes PodDisruptionBudget arithmetic), and passive
// health, which ejects a backend that fails real traffic.
//
// A pool is built from targets (Apply), whatever their source, so the same
// pool serves the configuration file's backends and discovered ones. Each
// Backend keeps its health behind its own mutex; the pool's own locks are
// its business alone: the prober and the fan-out use its methods.
package pool
