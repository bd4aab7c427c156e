package main

import (
	"errors"

	"github.com/probegate/probegate/cmd/probegate/internal/flagconfig"
)

// defaultStoragePath is the directory of probegate's state when
// --storage.path is not given.
const defaultStoragePath = "data"

// maintenanceFlags registers the switch of the admin API, which
// check-config reads as well (the admin listener is opened only when
// something is served there), and the directory that keeps the
// maintenance entries across restarts, which only a running server
// reads.
func (o *options) maintenanceFlags(app, serveOnly flagconfig.Adder) {
	app.Flag("web.enable-admin-api", "Enable the admin API on the admin listener: taking backends out for maintenance under the readiness budget (/api/v1/backends), the replica views and the debug probe.").
		Envar(flagconfig.Envar("web.enable-admin-api")).BoolVar(&o.EnableAdminAPI)
	o.storagePath = flagconfig.NewValue(new(string), parseStoragePath)
	o.storagePath.Register(serveOnly, "storage.path", "Directory of the state kept across restarts (maintenance.json); created when missing.").
		PlaceHolder(defaultStoragePath)
}

// storageDir is the --storage.path directory.
func (o *options) storageDir() string {
	if o.storagePath.Given() {
		return o.storagePath.Get()
	}
	return defaultStoragePath
}

func parseStoragePath(s string) (string, error) {
	if s == "" {
		return "", errors.New("the storage path must not be empty")
	}
	return s, nil
}
