package config

import (
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]Bytes{
		"1MiB":    1 << 20,
		"64MiB":   64 << 20,
		"512KiB":  512 << 10,
		"1KB":     1024,
		"1GiB":    1 << 30,
		"1048576": 1 << 20,
		"0":       0,
		" 2KiB ":  2048,
	} {
		got, err := parseBytes(in)
		if err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "1 MiB", "1kB", "lots", "1.5.5MiB"} {
		if got, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) = %d, want an error", in, got)
		}
	}
}

func TestBytesYAML(t *testing.T) {
	var v struct {
		Plain Bytes `yaml:"plain"`
		Unit  Bytes `yaml:"unit"`
	}
	if err := yaml.Unmarshal([]byte("plain: 2048\nunit: 64MiB\n"), &v); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if v.Plain != 2048 || v.Unit != 64<<20 {
		t.Errorf("got %d and %d, want 2048 and 64MiB", v.Plain, v.Unit)
	}
	out, err := yaml.Marshal(v)
	if err != nil || string(out) != "plain: 2KiB\nunit: 64MiB\n" {
		t.Errorf("Marshal = %q, %v", out, err)
	}
}
