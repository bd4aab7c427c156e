package main

import (
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// webConfigAuthenticates reports whether the web configuration file makes
// every client authenticate with basic auth: only then is the user name
// of a request a verified one.
func webConfigAuthenticates(path string) (bool, error) {
	if path == "" {
		return false, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false, fmt.Errorf("--web.config.file: %w", err)
	}
	var wc struct {
		Users map[string]string `yaml:"basic_auth_users"`
	}
	if err := yaml.Unmarshal(data, &wc); err != nil {
		return false, fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	return len(wc.Users) > 0, nil
}
