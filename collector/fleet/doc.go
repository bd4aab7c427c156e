// Package fleet is the pure logic of shared probing, where the replicas of
// one pool probe each backend from a few vantage points instead of each
// probing every backend, and agree on one verdict for the fleet:
//
//   - which live replicas probe a backend (Members, Assign), by
//     rendezvous hashing, so that every replica computes the same
//     assignment from the same replica views and a replica joining or
//     leaving moves only its own share;
//   - what a replica publishes about a backend it probes (Verdict) and how
//     that is written (Encode, Decode);
//   - the fleet's verdict over the vantage points' verdicts (Decide): out
//     of service only when more than half of them say unhealthy;
//   - a vantage point that disagrees alone with the verdict for too long
//     (Dissent.Step), which is named and ejects nothing;
//   - the state a new prober of a backend starts from (Seed), so that a
//     reassignment never loses the verified latch;
//   - how often and in what pieces the verdicts are written (Pace, Split).
//
// It does no I/O and reads no clock: every time is a parameter. The
// publication in the store and the wiring into the prober and the pool
// are its callers'.
package fleet
