package collector

import (
	"net/http"

	commoncfg "github.com/prometheus/common/config"

	"github.com/probegate/probegate/config"
)

// NewHTTPClient builds the client a backend's probes and fan-out requests
// use from its http_client_config. Redirects are never followed: a probe
// classifies the redirect itself, and a fan-out relays what the backend said.
func NewHTTPClient(name string, hc config.HTTPClientConfig) (*http.Client, error) {
	client, err := commoncfg.NewClientFromConfig(hc, "probegate_"+name)
	if err != nil {
		return nil, err
	}
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return client, nil
}
