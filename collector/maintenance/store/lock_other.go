//go:build !unix

package store

import "os"

// LockDir only creates the directory here: this platform has no flock, so
// an offline stop must be run while probegate is stopped.
func LockDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	return func() {}, nil
}
