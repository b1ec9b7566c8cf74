package journal

import (
	"errors"
	"fmt"
	"io"
	iofs "io/fs"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/fusee-dev/fusee/meta"
)

// A data directory:
//
//	<dir>/fusee.meta                 identity: format, log format, shard count (package meta)
//	<dir>/LOCK                       held (flock) while anything has the directory open
//	<dir>/wal/                       the shared write-ahead log, log format 3 (package wal)
//	<dir>/shards/NNNN/store/         shard NNNN's pebble store (4 digits, zero padded)
//	<dir>/shards/NNNN/log/           shard NNNN's own log, log format 2 only
//
// On the real disk (vfs.Default), fusee.meta and LOCK go through package
// meta. On any other vfs.FS (tests, crash simulation) this file does the
// same with the FS's own Lock and with meta's parser and writer of bytes,
// so the same typed errors come back.

// ShardDir is shard's directory in a data directory: shards/NNNN.
func ShardDir(fs vfs.FS, dir string, shard int) string {
	return fs.PathJoin(dir, "shards", fmt.Sprintf("%04d", shard))
}

// StoreDir is shard's store directory: shards/NNNN/store.
func StoreDir(fs vfs.FS, dir string, shard int) string {
	return fs.PathJoin(ShardDir(fs, dir, shard), "store")
}

// lockedDir is a data directory whose lock is held and whose fusee.meta
// has been read and checked.
type lockedDir struct {
	meta   meta.Meta
	unlock func() error
}

func (d *lockedDir) Close() error {
	if d.unlock == nil {
		return nil
	}
	u := d.unlock
	d.unlock = nil
	return u()
}

// onDisk reports whether fs is the operating system's filesystem, where
// package meta does the work.
func onDisk(fs vfs.FS) bool { return fs == vfs.Default }

// openDir takes dir's lock and reads its fusee.meta, refusing what opts
// refuses (an interrupted reshard, another log format).
func openDir(fs vfs.FS, dir string, opts meta.Options) (*lockedDir, error) {
	if onDisk(fs) {
		d, err := meta.Open(dir, opts)
		if err != nil {
			return nil, err
		}
		return &lockedDir{meta: d.Meta(), unlock: d.Close}, nil
	}
	l, err := lockVFS(fs, dir)
	if err != nil {
		return nil, err
	}
	m, err := readMetaVFS(fs, dir)
	if err == nil {
		err = meta.Check(dir, m, opts)
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	return &lockedDir{meta: m, unlock: l.Close}, nil
}

func lockVFS(fs vfs.FS, dir string) (io.Closer, error) {
	if _, err := fs.Stat(dir); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	l, err := fs.Lock(fs.PathJoin(dir, meta.LockName))
	if err != nil {
		return nil, &meta.InUseError{Dir: dir}
	}
	return l, nil
}

func readMetaVFS(fs vfs.FS, dir string) (meta.Meta, error) {
	path := fs.PathJoin(dir, meta.FileName)
	f, err := fs.Open(path)
	if err != nil {
		if _, derr := fs.Stat(dir); derr != nil {
			return meta.Meta{}, fmt.Errorf("data directory %s: %w", dir, derr)
		}
		if !errors.Is(err, iofs.ErrNotExist) {
			return meta.Meta{}, err
		}
		return meta.Meta{}, fmt.Errorf("%s is not a fusee data directory: it has no %s: %w", dir, meta.FileName, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return meta.Meta{}, fmt.Errorf("reading %s: %w", path, err)
	}
	return meta.Parse(path, data)
}

// writeMetaVFS replaces fusee.meta atomically and durably: a temporary
// file, fsync, rename, fsync of the directory.
func writeMetaVFS(fs vfs.FS, dir string, m meta.Meta) error {
	data, err := m.Marshal()
	if err != nil {
		return err
	}
	path := fs.PathJoin(dir, meta.FileName)
	tmp := fs.PathJoin(dir, "."+meta.FileName+".tmp")
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return syncDir(fs, dir)
}

// createDir makes dir (which must not exist, or be empty) a new data
// directory: build writes everything but fusee.meta while the lock is
// held, then fusee.meta is written last, so a crash before it leaves a
// directory that is not a data directory rather than a broken one. The
// returned lockedDir holds the lock.
func createDir(fs vfs.FS, dir string, m meta.Meta, build func() error) (*lockedDir, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating data directory %s: %w", dir, err)
	}
	if err := syncDir(fs, fs.PathDir(dir)); err != nil {
		return nil, err
	}
	names, err := fs.List(dir)
	if err != nil {
		return nil, fmt.Errorf("creating data directory %s: %w", dir, err)
	}
	for _, name := range names {
		if name == meta.FileName {
			return nil, fmt.Errorf("%s is already a fusee data directory (it has a %s); refusing to overwrite it: %w", dir, meta.FileName, iofs.ErrExist)
		}
		if name != meta.LockName {
			return nil, fmt.Errorf("creating data directory %s: it is not empty (it has %s); create a data directory in a new or empty directory", dir, name)
		}
	}
	if onDisk(fs) {
		l, err := meta.Lock(dir)
		if err != nil {
			return nil, err
		}
		err = build()
		// meta.Create takes the lock itself: hand it over. Another process
		// could take it in between only to find no fusee.meta and leave.
		if uerr := l.Unlock(); err == nil {
			err = uerr
		}
		if err != nil {
			return nil, err
		}
		d, err := meta.Create(dir, m)
		if err != nil {
			return nil, err
		}
		return &lockedDir{meta: d.Meta(), unlock: d.Close}, nil
	}
	l, err := lockVFS(fs, dir)
	if err != nil {
		return nil, err
	}
	if err := build(); err != nil {
		l.Close()
		return nil, err
	}
	if err := writeMetaVFS(fs, dir, m); err != nil {
		l.Close()
		return nil, err
	}
	return &lockedDir{meta: m, unlock: l.Close}, nil
}
