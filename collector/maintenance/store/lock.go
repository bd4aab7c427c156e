package store

import "errors"

// lockName is the lock file in the storage directory: a running probegate
// holds it, so that an offline `probegate maintenance stop` cannot write
// the state file under it.
const lockName = ".lock"

// ErrLocked says another process holds the storage directory.
var ErrLocked = errors.New("another probegate holds the storage directory")
