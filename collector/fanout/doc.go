// Package fanout serves /fanout/<path>?<query>: one client request sent
// concurrently to every backend the pool selects, the answers merged
// (package merge), every answer stamped with X-Backends:
// contributed/configured, and each backend's outcome handed to the pool's
// passive health. The round is in fanout.go, what one backend's answer
// comes to in answer.go, what crosses between client, probegate and
// backend in forward.go. The memory the bodies read take is bounded by
// package membudget.
package fanout
