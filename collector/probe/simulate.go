package probe

import (
	"fmt"
	"strings"

	"github.com/probegate/probegate/collector/health"
)

// SimulatedResultSyntax describes the inputs ParseSimulatedResult
// accepts, for help texts and error messages: [KIND:]ANSWER and each
// kind's answers.
func SimulatedResultSyntax() string {
	names := make([]string, len(kinds))
	answers := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.name
		answers[i] = k.name + ": " + k.answers
	}
	names[0] += " (the default)"
	last := len(names) - 1
	return fmt.Sprintf("[KIND:]ANSWER, KIND %s or %s; %s",
		strings.Join(names[:last], ", "), names[last], strings.Join(answers, "; "))
}

// ParseSimulatedResult turns one input of `probegate simulate` into the
// result a probe of that kind classifies the same answer as. An input is
// [KIND:]ANSWER (SimulatedResultSyntax): "503", "timeout" and "error" are
// HTTP, the default kind, "body_mismatch" an ok status whose body does
// not match, "tcp:ok" an accepted connection, "grpc:NOT_SERVING" a health
// check answer.
func ParseSimulatedResult(input string) (health.Result, error) {
	name, answer, found := strings.Cut(input, ":")
	if !found {
		name, answer = kinds[0].name, input
	}
	k, ok := kindNamed(name)
	if !ok {
		return health.Result{}, fmt.Errorf("%q is not a probe result: %q is not a probe kind (want %s)", input, name, SimulatedResultSyntax())
	}
	r, ok := k.simulate(answer)
	if !ok {
		return health.Result{}, fmt.Errorf("%q is not a probe result: want %s", input, SimulatedResultSyntax())
	}
	return r, nil
}
