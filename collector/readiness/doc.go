// Package readiness decides whether this replica is ready, and runs what
// that takes from outside the pool: the gate's `backends` check (the
// pool's readiness budget, and with readiness.peer_relative the override
// when no live peer is better off), and maintenance as one replica runs
// it (the store the configuration names, the manager that keeps the pool
// in step with it, the store's own readiness check, and with a shared
// store this replica's view published to its peers, which the override
// reads). cmd/probegate wires it; the rules it applies are
// maintenance's and budget's.
package readiness
