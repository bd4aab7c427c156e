package discovery

import (
	"strconv"
	"strings"

	"github.com/probegate/probegate/config"
)

// fileSD is file_sd_configs: lists of targets in YAML or JSON files, read
// again whenever one changes and every refresh_interval.
var fileSD = mechanism{
	name:    "file",
	key:     "file_sd_configs",
	configs: func(cfg *config.Config) []sdConfig { return configsOf(cfg.FileSDConfigs) },
	fileOf:  groupFile,
}

// groupFile is the file and index of a file_sd target group, whose Source
// is "<file>:<index of the group in the file>".
func groupFile(source string) (file string, index int, ok bool) {
	i := strings.LastIndexByte(source, ':')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(source[i+1:])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return source[:i], n, true
}
