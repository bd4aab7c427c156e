// Package vantage runs shared probing on one replica: the replicas of a
// pool probe each backend from a few of them, its vantage points, publish
// their verdicts in the shared store, and serve every backend by its
// vantage points' verdicts.
//
// The Coordinator follows the live replicas (their views in the store)
// and the verdicts they publish (the store's watch), and, about once a
// second and whenever verdicts arrive:
//   - assigns every backend its vantage points over the live replicas
//     (fleet.Members), so that this replica probes only its share;
//   - hands each backend of the pool its role and its vantage points'
//     verdicts (pool.Backend.SetFleet), which the pool judges by the
//     fleet's rule and serves;
//   - publishes this replica's own verdicts as they change, batched and
//     paced (fleet.Split, fleet.NextWrite), under its view lease;
//   - falls back to local probing, every backend probed here as without
//     shared probing, when the store has been out of reach for longer than
//     the view lease, or no peer is live, and returns once both are back.
//
// The rules are collector/fleet's, pure; the store's side, the keys, the
// publication and the watch, is collector/maintenance/store's.
package vantage
