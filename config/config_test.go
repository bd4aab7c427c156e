package config

import (
	"errors"
	"io/fs"
	"reflect"
	"testing"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

func seconds(s float64) model.Duration {
	return model.Duration(s * float64(time.Second))
}

// withoutSource is the configuration's values without the file and flag
// bookkeeping, for comparing configurations.
func withoutSource(c *Config) Config {
	v := *c
	v.src, v.origins = nil, nil
	if len(v.Backends) == 0 {
		v.Backends = nil
	}
	return v
}

func TestDefaultIsTheDocumentedConfiguration(t *testing.T) {
	c := Default()
	want := Config{
		HealthProbe: HealthProbe{Enabled: true, Path: "/healthz", Interval: seconds(5), Timeout: seconds(2), Failures: 3, Successes: 2, Kind: "http", Method: "GET", KeepAlive: new(true)},
		Pool:        Pool{PanicThreshold: 0},
		Gate:        Gate{Drain: 0, ShutdownTimeout: seconds(30), CheckInterval: seconds(1)},
		Fanout: Fanout{Timeout: seconds(30), Merge: "json_array", MaxRequestBytes: 1 << 20, RequestReadTimeout: seconds(10), MaxResponseBytes: 64 << 20,
			ForwardHeaders: DefaultForwardHeaders(), MaxRequestHeaderBytes: 16 << 10, MaxConcurrent: 256,
			MinContributors: IntOrPercent{Value: 1}, MaxHops: 3, MaxBufferedBytes: 256 << 20,
			OutlierDetection: OutlierDetection{Enforcing: true, Window: seconds(30), MinRounds: 20, FailureGap: 0.5,
				LatencyFactor: 3, LatencyFloor: seconds(0.05), BaseEjection: seconds(30), MaxEjection: seconds(300)},
			Stragglers: Stragglers{Enabled: false, Factor: 3, MinWait: seconds(0.05)},
			Hedge:      Hedge{Enabled: false, After: HedgeAfter{Auto: true}, MinAfter: seconds(0.01), MaxPercent: 10}, Failover: true},
		PassiveHealth: PassiveHealth{Enabled: false, Window: seconds(30), MaxFailures: 5, MinSuccessRatio: 0,
			MinRequests: 10, MaxEjectedPercent: 50},
		Maintenance: Maintenance{Store: "file", MaxTTL: seconds(8760 * 3600), Etcd: Etcd{
			Endpoints: []string{"http://127.0.0.1:2379"}, Prefix: "/probegate/default",
			DialTimeout: seconds(5), RequestTimeout: seconds(5)}},
		Probing:               Probing{Shared: SharedProbing{Enabled: false, VantagePoints: 2}},
		HTTPClientConfig:      commoncfg.DefaultHTTPClientConfig,
		MaxDiscoveredBackends: 10000,
	}
	if !reflect.DeepEqual(withoutSource(c), want) {
		t.Errorf("Default() = %+v\nwant %+v", withoutSource(c), want)
	}
	if c.Readiness.MinAvailable != nil || c.Readiness.MaxUnavailable != nil {
		t.Errorf("readiness is set by default; unset means min_available 1 (the collector's rule)")
	}
	if err := c.Validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
}

func TestEmptyConfigurationsAreTheDefaults(t *testing.T) {
	for name, data := range map[string]string{
		"empty":                "",
		"comments only":        "# nothing here\n",
		"null document":        "~\n",
		"empty blocks":         "health_probe:\ngate:\nhttp_client_config:\nbackends:\n",
		"empty list":           "backends: []\n",
		"explicit empty block": "fanout: {}\n",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := parse([]byte(data), "probegate.yml")
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got, want := withoutSource(c), withoutSource(Default()); !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant the defaults %+v", got, want)
			}
		})
	}
}

func TestEmptyFileLoads(t *testing.T) {
	c, err := Load("testdata/valid-empty.yml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(c.Backends) != 0 || c.File() != "testdata/valid-empty.yml" {
		t.Errorf("got %d backends from %q, want none from testdata/valid-empty.yml", len(c.Backends), c.File())
	}
}

func TestOmittedKeysKeepTheirDefaults(t *testing.T) {
	c, err := parse([]byte("gate:\n  drain: 5s\nhealth_probe:\n  path: /ping\n"), "probegate.yml")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if c.Gate.Drain != seconds(5) || c.Gate.ShutdownTimeout != seconds(30) || c.Gate.CheckInterval != seconds(1) {
		t.Errorf("gate = %+v, want drain 5s and the default 30s and 1s", c.Gate)
	}
	want := Default().HealthProbe
	want.Path = "/ping"
	if !c.HealthProbe.Equal(want) {
		t.Errorf("health_probe = %+v, want %+v", c.HealthProbe, want)
	}
}

func TestLoadValidFull(t *testing.T) {
	c, err := Load("testdata/valid-full.yml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if want := (HealthProbe{Enabled: true, Path: "/-/ready", Interval: seconds(10), Timeout: seconds(3), Failures: 4, Successes: 3, Kind: "http", Method: "GET"}); !c.HealthProbe.Equal(want) {
		t.Errorf("health_probe = %+v, want %+v", c.HealthProbe, want)
	}
	if c.Pool.PanicThreshold != 25 {
		t.Errorf("pool.panic_threshold = %v, want 25", c.Pool.PanicThreshold)
	}
	if r := c.Readiness; r.MinAvailable == nil || *r.MinAvailable != (IntOrPercent{Value: 50, Percent: true}) || r.MaxUnavailable != nil {
		t.Errorf("readiness = %+v, want min_available 50%% only", r)
	}
	if want := (Gate{Drain: seconds(15), ShutdownTimeout: seconds(45), CheckInterval: seconds(0.5)}); c.Gate != want {
		t.Errorf("gate = %+v, want %+v", c.Gate, want)
	}
	if want := (Fanout{Enabled: true, Timeout: seconds(20), Merge: "ndjson", MaxRequestBytes: 512 << 10, RequestReadTimeout: seconds(5), MaxResponseBytes: 32 << 20,
		ForwardHeaders: []string{"Accept", "Authorization"}, MaxRequestHeaderBytes: 8 << 10, MaxConcurrent: 64,
		MinContributors: IntOrPercent{Value: 50, Percent: true}, ExposeMissing: true, MaxHops: 2, MaxBufferedBytes: 128 << 20,
		OutlierDetection: OutlierDetection{Enabled: true, Enforcing: false, Window: seconds(60), MinRounds: 10, FailureGap: 0.25,
			LatencyFactor: 4, LatencyFloor: seconds(0.02), BaseEjection: seconds(10), MaxEjection: seconds(120)},
		Stragglers: Stragglers{Enabled: true, Factor: 4, MinWait: seconds(0.1)},
		Hedge:      Hedge{Enabled: true, After: HedgeAfter{Duration: seconds(0.025)}, MinAfter: seconds(0.005), MaxPercent: 2.5}}); !reflect.DeepEqual(c.Fanout, want) {
		t.Errorf("fanout = %+v, want %+v", c.Fanout, want)
	}
	if want := (PassiveHealth{Enabled: true, Window: seconds(60), MaxFailures: 7, MinSuccessRatio: 0.8, MinRequests: 20, MaxEjectedPercent: 34}); c.PassiveHealth != want {
		t.Errorf("passive_health = %+v, want %+v", c.PassiveHealth, want)
	}
	// Relative files are resolved against the directory of the file.
	if tls := c.HTTPClientConfig.TLSConfig; tls.CAFile != "testdata/ca.pem" || tls.CertFile != "testdata/client.pem" || tls.KeyFile != "testdata/client-key.pem" {
		t.Errorf("tls_config files = %q, %q, %q, want them under testdata/", tls.CAFile, tls.CertFile, tls.KeyFile)
	}

	if len(c.Backends) != 3 {
		t.Fatalf("got %d backends, want 3", len(c.Backends))
	}
	b0, b1, b2 := c.Backends[0], c.Backends[1], c.Backends[2]
	if b0.Name != "pdb-1" || b0.URL != "https://pdb-1.example:8081" || !b0.HealthProbe.IsSet("path") || b0.HealthProbe.Values.Path != "/status/v1/services" {
		t.Errorf("backends[0] = %+v", b0)
	}
	if b0.HTTPClientConfig == nil || !reflect.DeepEqual(*b0.HTTPClientConfig, commoncfg.DefaultHTTPClientConfig) {
		t.Errorf("backends[0].http_client_config = %+v, want the defaults for {}", b0.HTTPClientConfig)
	}
	if b1.Name != "pdb-2" || b1.URL != "http://127.0.0.1:8082/prefix" {
		t.Errorf("backends[1] = %+v", b1)
	}
	if want := (HealthProbe{Enabled: false, Path: "/-/ready", Interval: seconds(30), Timeout: seconds(30), Failures: 1, Successes: 1, Kind: "http", Method: "GET"}); !c.ProbeFor(b1).Equal(want) {
		t.Errorf("probe of backends[1] = %+v, want %+v", c.ProbeFor(b1), want)
	}
	hc := b1.HTTPClientConfig
	if hc == nil || hc.Authorization == nil || hc.Authorization.Type != "Bearer" ||
		hc.Authorization.CredentialsFile != "testdata/token" || hc.FollowRedirects {
		t.Errorf("backends[1].http_client_config = %+v, want Bearer from testdata/token without redirects", hc)
	}
	if b2.Name != "pdb_3.internal" || b2.URL != "http://[::1]:8083" || b2.HTTPClientConfig != nil || !reflect.DeepEqual(b2.HealthProbe, HealthProbeOverride{}) {
		t.Errorf("backends[2] = %+v", b2)
	}
}

func TestValidFullRoundTrips(t *testing.T) {
	c, err := Load("testdata/valid-full.yml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	again, err := parse(out, "roundtrip.yml")
	if err != nil {
		t.Fatalf("parse of the marshalled configuration: %v\n%s", err, out)
	}
	if !reflect.DeepEqual(withoutSource(again), withoutSource(c)) {
		t.Errorf("round trip changed the configuration:\n%s\ngot  %+v\nwant %+v", out, withoutSource(again), withoutSource(c))
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yml")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing file = %v, want an error matching fs.ErrNotExist", err)
	}
}

func TestCheckHTTPClients(t *testing.T) {
	c, err := Load("testdata/valid-full.yml")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := c.CheckHTTPClients(); err != nil {
		t.Errorf("CheckHTTPClients on valid-full.yml: %v", err)
	}

	c, err = parse([]byte("backends:\n  - name: a\n    url: https://127.0.0.1:1\n    http_client_config:\n      tls_config: {ca_file: missing.pem}\n"), "dir/probegate.yml")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	err = c.CheckHTTPClients()
	var cfgErr *Error
	if !errors.As(err, &cfgErr) || len(cfgErr.Problems) != 1 {
		t.Fatalf("CheckHTTPClients with a missing CA = %v, want one problem", err)
	}
	p := cfgErr.Problems[0]
	if p.File != "dir/probegate.yml" || p.Line != 4 || p.Field != "backends[0].http_client_config" || !contains(p.Message, "dir/missing.pem") {
		t.Errorf("problem = %+v, want dir/probegate.yml:4 backends[0].http_client_config naming dir/missing.pem", p)
	}
}
