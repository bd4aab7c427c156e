package probe

import (
	"slices"

	"github.com/probegate/probegate/collector/health"
	"github.com/probegate/probegate/collector/pool"
	"github.com/probegate/probegate/config"
)

// kind is one probe kind: how it probes a backend and how `probegate
// simulate` reads its answers. Everything else about a kind is config's:
// its name among config.Kinds() and the health_probe keys it reads.
type kind struct {
	// name is the kind's health_probe.kind.
	name string
	// build makes the probe of one backend.
	build func(b *pool.Backend) (built, error)
	// simulate is the result this kind classifies an answer of `probegate
	// simulate` as, and false when the kind has no such answer.
	simulate func(answer string) (health.Result, bool)
	// answers says which answers simulate takes, for help and messages.
	answers string
	// fails are the reasons this kind's probe can fail for, and
	// failsMatchingBody those a probe that matches the body
	// (health_probe.expect_body_regexp) adds. A failure of probegate's
	// own (health.ReasonLocal) can befall any kind and is no kind's.
	fails, failsMatchingBody []health.Reason
}

// kinds are the probe kinds, the default first: adding a kind is one
// entry here, the file that defines its functions, and its name and keys
// in config.
var kinds = []kind{
	{name: config.KindHTTP, build: newHTTP, simulate: simulatedHTTP, answers: httpAnswers,
		fails:             []health.Reason{health.ReasonTimeout, health.ReasonTransport, health.ReasonHTTP5xx, health.ReasonHTTP429},
		failsMatchingBody: []health.Reason{health.ReasonBodyMismatch}},
	{name: config.KindTCP, build: withoutRelease(newTCP), simulate: simulatedTCP, answers: tcpAnswers,
		fails: []health.Reason{health.ReasonTimeout, health.ReasonTransport}},
	{name: config.KindGRPC, build: withRelease(newGRPC), simulate: simulatedGRPC, answers: grpcAnswers,
		fails: []health.Reason{health.ReasonTimeout, health.ReasonTransport, health.ReasonGRPCNotServing}},
}

// KindFailureReasons lists the reasons a probe of the named kind can fail
// for, matching the body or not, in the order of health.FailureReasons;
// none for a kind the table does not have. A failure of probegate's own
// (health.ReasonLocal) can befall any probe and is not listed.
func KindFailureReasons(kindName string, matchesBody bool) []health.Reason {
	k, ok := kindNamed(kindName)
	if !ok {
		return nil
	}
	var out []health.Reason
	for _, r := range health.FailureReasons() {
		if slices.Contains(k.fails, r) || (matchesBody && slices.Contains(k.failsMatchingBody, r)) {
			out = append(out, r)
		}
	}
	return out
}

// kindNamed is the kind called name.
func kindNamed(name string) (kind, bool) {
	for _, k := range kinds {
		if k.name == name {
			return k, true
		}
	}
	return kind{}, false
}

// withRelease is the builder of a kind whose probes hold something to
// release.
func withRelease(build func(*pool.Backend) (Func, func(), error)) func(*pool.Backend) (built, error) {
	return func(b *pool.Backend) (built, error) {
		f, release, err := build(b)
		return built{probe: f, release: release}, err
	}
}

// withoutRelease is the builder of a kind whose probes hold nothing to
// release.
func withoutRelease(build func(*pool.Backend) (Func, error)) func(*pool.Backend) (built, error) {
	return func(b *pool.Backend) (built, error) {
		f, err := build(b)
		return built{probe: f}, err
	}
}
