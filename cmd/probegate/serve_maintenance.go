package main

import (
	"errors"
	"io/fs"
	"net/http"
	"os"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/probegate/probegate/collector/maintenance"
	"github.com/probegate/probegate/collector/pool"
)

// openMaintenance restores the maintenance entries kept in --storage.path
// into the pool and has the pool save every change there. A state file
// that cannot be read stops start-up, and nothing overwrites it. With the
// admin API disabled nothing can start a maintenance, so a storage
// directory that does not exist is not created.
func openMaintenance(opts *options, p *pool.Pool) error {
	dir := opts.storageDir()
	if !opts.EnableAdminAPI {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	store, entries, err := maintenance.Open(dir)
	if err != nil {
		return err
	}
	p.RestoreMaintenance(entries)
	p.OnMaintenanceChange(store.Save)
	return nil
}

// mountMaintenanceAPI serves the admin API, which answers 403 unless
// --web.enable-admin-api is given; the demo serves it to loopback clients
// only.
func mountMaintenanceAPI(mux *http.ServeMux, opts *options, p *pool.Pool, reg prometheus.Registerer, logger log.Logger) {
	api := maintenance.NewAPI(p, opts.EnableAdminAPI, reg, logger)
	if opts.adminLoopbackOnly {
		api.RestrictToLoopback()
	}
	api.Register(mux)
}
