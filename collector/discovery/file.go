package discovery

import (
	"github.com/probegate/probegate/config"
)

// fileSD is file_sd_configs: lists of targets in YAML or JSON files, read
// again whenever one changes and every refresh_interval.
var fileSD = mechanism{
	name:    "file",
	configs: func(cfg *config.Config) []sdConfig { return configsOf(cfg.FileSDConfigs) },
}
