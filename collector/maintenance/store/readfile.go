package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// readKeptFile reads a file that probegate keeps in its storage directory
// (the file store's state, a shared store's applied state), what naming
// it in errors. Every such file is read this way, since anything may have
// been put in its place: it opens without blocking, so that a FIFO or a
// device is refused rather than waited on; it reads only a regular file
// (a symlink is followed, and judged by what it leads to); it takes the
// size from Stat and refuses a file over 64 MiB before reading it; and it
// never reads more than that, whatever the file grew to meanwhile. A
// missing file is no data and no error, and found false.
func readKeptFile(path, what string) (data []byte, found bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s %s: %w", what, path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("read %s %s: %w", what, path, err)
	}
	if !info.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s %s is not a regular file (%s): remove it", what, path, info.Mode().Type())
	}
	if info.Size() > maxStoredBytes {
		return nil, false, fmt.Errorf("%s %s is %d bytes, more than the %d it may hold: fix or remove it", what, path, info.Size(), maxStoredBytes)
	}
	data, err = io.ReadAll(io.LimitReader(f, maxStoredBytes+1))
	if err != nil {
		return nil, false, fmt.Errorf("read %s %s: %w", what, path, err)
	}
	if len(data) > maxStoredBytes {
		return nil, false, fmt.Errorf("%s %s grew past %d bytes while it was read: fix or remove it", what, path, maxStoredBytes)
	}
	return data, true, nil
}
