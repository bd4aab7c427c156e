package config

import (
	"errors"
	"testing"
)

// problemsOf returns the problems of a Validate error, failing the test
// when there are none.
func problemsOf(t *testing.T, err error) []Problem {
	t.Helper()
	var cfgErr *Error
	if !errors.As(err, &cfgErr) {
		t.Fatalf("got %v, want a *config.Error", err)
	}
	return cfgErr.Problems
}

func TestValidateWithoutFileNamesTheField(t *testing.T) {
	c := Default()
	c.Backends = []Backend{{Name: "a", URL: "http://127.0.0.1:1"}, {Name: "a", URL: "http://127.0.0.1:2"}}
	problems := problemsOf(t, c.Validate())
	if len(problems) != 1 {
		t.Fatalf("got %v, want one problem", problems)
	}
	want := `backends[1].name: "a" is already the name of backends[0]; names must be unique`
	if got := problems[0].String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSetOriginBlamesTheFlag(t *testing.T) {
	c, err := decode([]byte("health_probe:\n  interval: 5s\n  timeout: 2s\n"), "probegate.yml")
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	c.HealthProbe.Timeout = seconds(10)
	c.SetOrigin("health_probe.timeout", "--health-probe.timeout")
	b := Backend{Name: "b", URL: "ftp://x"}
	b.SetOrigin("--backend b=ftp://x")
	c.Backends = append(c.Backends, b)

	problems := problemsOf(t, c.Validate())
	want := []string{
		"--health-probe.timeout (health_probe.timeout): 10s is longer than the interval 5s (health_probe.interval at line 2)",
		`--backend b=ftp://x (backends[0].url): "ftp://x": want an absolute http:// or https:// URL such as http://127.0.0.1:8081`,
	}
	if len(problems) != len(want) {
		t.Fatalf("got %v, want %d problems", problems, len(want))
	}
	for i, p := range problems {
		if p.String() != want[i] {
			t.Errorf("problem %d = %q, want %q", i, p.String(), want[i])
		}
	}
}

func TestFileProblemNamesTheFlagThatSetTheOtherField(t *testing.T) {
	c, err := decode([]byte("health_probe:\n  timeout: 3s\n"), "probegate.yml")
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	c.HealthProbe.Interval = seconds(1)
	c.SetOrigin("health_probe.interval", "PROBEGATE_HEALTH_PROBE_INTERVAL")
	problems := problemsOf(t, c.Validate())
	want := "probegate.yml:2: health_probe.timeout: 3s is longer than the interval 1s (health_probe.interval set by PROBEGATE_HEALTH_PROBE_INTERVAL)"
	if len(problems) != 1 || problems[0].String() != want {
		t.Errorf("got %v, want %q", problems, want)
	}
}

func TestBackendOriginSurvivesReordering(t *testing.T) {
	c := Default()
	fromFlag := Backend{Name: "flagged", URL: "ftp://x"}
	fromFlag.SetOrigin("--backend flagged=ftp://x")
	c.Backends = append([]Backend{{Name: "first", URL: "http://127.0.0.1:1"}}, fromFlag)
	problems := problemsOf(t, c.Validate())
	if len(problems) != 1 || problems[0].Origin != "--backend flagged=ftp://x" || problems[0].Field != "backends[1].url" {
		t.Errorf("got %v, want the url of backends[1] blamed on its --backend flag", problems)
	}
}
