// Package health is probegate's health verdict, and nothing else: the class
// of one probe result (Result, Class, Reason) and the state machine that
// turns a backend's run of results into a state (Health.Step). It is pure:
// no I/O, no clock, no locks. The prober, `probegate simulate` and the tests
// all feed the same Step, so there is one source of truth for what a run of
// results means. docs/design.md explains the rules and why they are so.
package health
