package main

import (
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// webConfigAuth is what the web configuration file says of how clients
// authenticate.
type webConfigAuth struct {
	Users     map[string]string `yaml:"basic_auth_users"`
	TLSServer struct {
		ClientAuth string `yaml:"client_auth_type"`
	} `yaml:"tls_server_config"`
}

// readWebConfigAuth reads how the web configuration file at path makes
// clients authenticate; none without a file.
func readWebConfigAuth(path string) (webConfigAuth, error) {
	var wc webConfigAuth
	if path == "" {
		return wc, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return wc, fmt.Errorf("--web.config.file: %w", err)
	}
	if err := yaml.Unmarshal(data, &wc); err != nil {
		return wc, fmt.Errorf("--web.config.file %s: %w", path, err)
	}
	return wc, nil
}

// webConfigAuthenticates reports whether the web configuration file makes
// every client authenticate with basic auth: only then is the user name
// of a request a verified one.
func webConfigAuthenticates(path string) (bool, error) {
	wc, err := readWebConfigAuth(path)
	return len(wc.Users) > 0, err
}

// webConfigVerifiesClients reports whether the web configuration file
// lets in only clients that prove who they are: with basic auth, or with
// a client certificate its CA verifies.
func webConfigVerifiesClients(path string) (bool, error) {
	wc, err := readWebConfigAuth(path)
	return len(wc.Users) > 0 || wc.TLSServer.ClientAuth == "RequireAndVerifyClientCert", err
}
