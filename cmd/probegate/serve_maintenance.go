package main

import (
	"errors"
	"io/fs"
	"os"

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
