package probe

import (
	"slices"
	"strings"
	"testing"

	"github.com/probegate/probegate/config"
)

// TestKindTableNamesConfigsKinds: the kind table and config name the same
// kinds in the same order, the default first, so that a kind added in one
// place and not the other fails here rather than at a user's probe.
func TestKindTableNamesConfigsKinds(t *testing.T) {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.name
		if k.build == nil || k.simulate == nil || k.answers == "" {
			t.Errorf("kind %q lacks its builder, its simulate parser or its answers: %+v", k.name, k)
		}
	}
	if !slices.Equal(names, config.Kinds()) {
		t.Errorf("the kind table names %v, config.Kinds() %v: a kind is missing from one of them", names, config.Kinds())
	}
	if def := (config.HealthProbe{}).EffectiveKind(); names[0] != def || config.Default().HealthProbe.Kind != def {
		t.Errorf("the table's first kind is %q, config's default %q: simulate reads an input without a kind as the first", names[0], def)
	}
	for _, name := range config.Kinds() {
		if !strings.Contains(SimulatedResultSyntax(), name+": ") {
			t.Errorf("simulate's syntax %q does not describe kind %s", SimulatedResultSyntax(), name)
		}
	}
}

// TestSimulatedResultSyntaxIsTheHelpText: the syntax put together from
// the table reads as the help of `probegate simulate` always has.
func TestSimulatedResultSyntaxIsTheHelpText(t *testing.T) {
	want := `[KIND:]ANSWER, KIND http (the default), tcp or grpc; ` +
		`http: a status code (100-599), body_mismatch, timeout or error; ` +
		`tcp: ok, refused, reset, timeout or error; ` +
		`grpc: SERVING, NOT_SERVING, UNKNOWN, UNIMPLEMENTED, NOT_FOUND, SERVICE_UNKNOWN, DEADLINE_EXCEEDED, ` +
		`UNAVAILABLE or another gRPC code name`
	if got := SimulatedResultSyntax(); got != want {
		t.Errorf("SimulatedResultSyntax() =\n%s\nwant\n%s", got, want)
	}
}

// TestUnknownKindIsABuildError: a kind no entry names is not probed as
// HTTP behind the configuration's back; building its probe fails, and the
// failure names the kind.
func TestUnknownKindIsABuildError(t *testing.T) {
	cfg := newConfig(config.Backend{Name: "b", URL: "http://127.0.0.1:1"})
	b := newPool(t, cfg).Backends()[0]
	b.Probe.Kind = "udp"
	if made, err := newFunc(b); err == nil || made.probe != nil || !strings.Contains(err.Error(), `"udp"`) {
		t.Errorf("newFunc for kind udp = %v, %v; want an error naming the kind", made.probe != nil, err)
	}
}
