package config

import (
	"strings"
	"testing"
)

// TestEtcdOverHTTPNamesEveryInsecureKey: over http:// endpoints a
// tls_config and a password are each refused under their own key, so an
// operator who fixes the first does not meet the second on the next try.
func TestEtcdOverHTTPNamesEveryInsecureKey(t *testing.T) {
	data := "maintenance:\n  store: etcd\n  etcd:\n    endpoints: [http://127.0.0.1:2379]\n" +
		"    tls_config: {insecure_skip_verify: true}\n    username: probegate\n    password: hunter2\n"
	_, err := parse([]byte(data), "probegate.yml")
	want := strings.Join([]string{
		"probegate.yml:5: maintenance.etcd.tls_config: is set but the endpoints are http://, which never use TLS: use https:// endpoints",
		"probegate.yml:7: maintenance.etcd.password: would be sent in clear text to http:// endpoints: use https:// endpoints",
	}, "\n")
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}
