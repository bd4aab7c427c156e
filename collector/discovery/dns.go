package discovery

import (
	"github.com/probegate/probegate/config"
)

// dnsSD is dns_sd_configs: SRV, A or AAAA records looked up every
// refresh_interval through the resolvers of /etc/resolv.conf.
var dnsSD = mechanism{
	name:    "dns",
	key:     "dns_sd_configs",
	configs: func(cfg *config.Config) []sdConfig { return configsOf(cfg.DNSSDConfigs) },
}
