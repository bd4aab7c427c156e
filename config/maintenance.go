package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	commoncfg "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"

	"github.com/probegate/probegate/internal/redact"
)

// The maintenance stores.
const (
	// StoreFile keeps the entries in a file of --storage.path: one replica.
	StoreFile = "file"
	// StoreEtcd keeps them in etcd, shared by every replica of a pool.
	StoreEtcd = "etcd"
)

// Maintenance is where maintenance entries are kept, and their limits.
type Maintenance struct {
	// Store is StoreFile or StoreEtcd.
	Store string `yaml:"store"`
	// MaxTTL is the longest ttl a maintenance request may ask for.
	MaxTTL model.Duration `yaml:"max_ttl"`
	Etcd   Etcd           `yaml:"etcd"`
}

// Etcd is the etcd cluster that replicas sharing a pool keep their
// maintenance entries and replica views in.
type Etcd struct {
	Endpoints []string `yaml:"endpoints"`
	// Prefix is the key prefix of one pool: its replicas share it.
	Prefix         string           `yaml:"prefix"`
	DialTimeout    model.Duration   `yaml:"dial_timeout"`
	RequestTimeout model.Duration   `yaml:"request_timeout"`
	Username       string           `yaml:"username,omitempty"`
	Password       commoncfg.Secret `yaml:"password,omitempty"`
	PasswordFile   string           `yaml:"password_file,omitempty"`
	// TLSConfig is the client's TLS, as in a Prometheus HTTP client
	// configuration.
	TLSConfig commoncfg.TLSConfig `yaml:"tls_config,omitempty"`
}

// defaultMaintenance is the maintenance block of an empty file.
func defaultMaintenance() Maintenance {
	return Maintenance{
		Store:  StoreFile,
		MaxTTL: model.Duration(8760 * time.Hour),
		Etcd: Etcd{
			Endpoints:      []string{"http://127.0.0.1:2379"},
			Prefix:         "/probegate/default",
			DialTimeout:    model.Duration(5 * time.Second),
			RequestTimeout: model.Duration(5 * time.Second),
		},
	}
}

func (v *validator) maintenance() {
	m := v.c.Maintenance
	v.positive("maintenance.max_ttl", m.MaxTTL)
	switch m.Store {
	case StoreFile:
	case StoreEtcd:
		v.etcd(m.Etcd)
	default:
		v.add("maintenance.store", "%q is not a store: want %s or %s", m.Store, StoreFile, StoreEtcd)
	}
	if v.c.Readiness.PeerRelative && m.Store != StoreEtcd {
		v.add("readiness.peer_relative", "needs maintenance.store: %s, where the replicas see each other", StoreEtcd)
	}
}

func (v *validator) etcd(e Etcd) {
	if len(e.Endpoints) == 0 {
		v.add("maintenance.etcd.endpoints", "at least one endpoint is required with maintenance.store: etcd")
	}
	schemes := map[string]bool{}
	for i, ep := range e.Endpoints {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			v.add(fmt.Sprintf("maintenance.etcd.endpoints[%d]", i), "%q: want http://host:port or https://host:port, without credentials (use username and password)", redact.URL(ep))
			continue
		}
		schemes[u.Scheme] = true
	}
	v.etcdTransport(e, schemes)
	if !strings.HasPrefix(e.Prefix, "/") || strings.HasSuffix(e.Prefix, "/") {
		v.add("maintenance.etcd.prefix", "%q: want a key prefix that starts with / and does not end with one, such as /probegate/default", e.Prefix)
	}
	v.positive("maintenance.etcd.dial_timeout", e.DialTimeout)
	v.positive("maintenance.etcd.request_timeout", e.RequestTimeout)
	if e.Password != "" && e.PasswordFile != "" {
		v.add("maintenance.etcd.password", "at most one of password and password_file may be set")
	}
	if (e.Password != "" || e.PasswordFile != "") && e.Username == "" {
		v.add("maintenance.etcd.username", "a password needs a username")
	}
	if err := e.TLSConfig.Validate(); err != nil {
		v.add("maintenance.etcd.tls_config", "%v", err)
	}
}

// etcdTransport refuses endpoints whose schemes disagree with each other
// or with the rest of the block. The etcd client takes one TLS setting
// for every endpoint, so with one http:// and one https:// endpoint TLS
// would be silently dropped for both or wrongly used for one; and a
// tls_config or a password over http:// would be ignored or sent in
// clear text.
func (v *validator) etcdTransport(e Etcd, schemes map[string]bool) {
	if !schemes["http"] {
		return
	}
	if schemes["https"] {
		v.add("maintenance.etcd.endpoints", "mixes http:// and https:// endpoints: use https:// for every endpoint, or http:// for every one")
		return
	}
	// Each key is named, so that fixing one does not reveal the next.
	if e.TLSConfig != (commoncfg.TLSConfig{}) {
		v.add("maintenance.etcd.tls_config", "is set but the endpoints are http://, which never use TLS: use https:// endpoints")
	}
	if e.Password != "" {
		v.add("maintenance.etcd.password", "would be sent in clear text to http:// endpoints: use https:// endpoints")
	}
	if e.PasswordFile != "" {
		v.add("maintenance.etcd.password_file", "would be sent in clear text to http:// endpoints: use https:// endpoints")
	}
}
