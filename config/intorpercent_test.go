package config

import (
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestParseIntOrPercent(t *testing.T) {
	for in, want := range map[string]IntOrPercent{
		"0":    {Value: 0},
		"3":    {Value: 3},
		"0%":   {Value: 0, Percent: true},
		"50%":  {Value: 50, Percent: true},
		"100%": {Value: 100, Percent: true},
	} {
		got, err := ParseIntOrPercent(in)
		if err != nil || got != want {
			t.Errorf("ParseIntOrPercent(%q) = %+v, %v, want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "101%", "1.5", "half", "%"} {
		if got, err := ParseIntOrPercent(in); err == nil {
			t.Errorf("ParseIntOrPercent(%q) = %+v, want an error", in, got)
		}
	}
}

func TestIntOrPercentOfRoundsUp(t *testing.T) {
	for _, tc := range []struct {
		v     IntOrPercent
		total int
		want  int
	}{
		{IntOrPercent{Value: 2}, 7, 2},
		{IntOrPercent{Value: 50, Percent: true}, 7, 4},
		{IntOrPercent{Value: 30, Percent: true}, 1, 1},
		{IntOrPercent{Value: 30, Percent: true}, 10, 3},
		{IntOrPercent{Value: 0, Percent: true}, 10, 0},
		{IntOrPercent{Value: 100, Percent: true}, 3, 3},
		{IntOrPercent{Value: 50, Percent: true}, 0, 0},
	} {
		if got := tc.v.Of(tc.total); got != tc.want {
			t.Errorf("%s of %d = %d, want %d", tc.v, tc.total, got, tc.want)
		}
	}
}

func TestIntOrPercentYAML(t *testing.T) {
	var v struct {
		A IntOrPercent `yaml:"a"`
		B IntOrPercent `yaml:"b"`
	}
	if err := yaml.Unmarshal([]byte("a: 2\nb: 30%\n"), &v); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if v.A != (IntOrPercent{Value: 2}) || v.B != (IntOrPercent{Value: 30, Percent: true}) {
		t.Errorf("got %+v", v)
	}
	out, err := yaml.Marshal(v)
	if err != nil || string(out) != "a: 2\nb: 30%\n" {
		t.Errorf("Marshal = %q, %v", out, err)
	}
}
