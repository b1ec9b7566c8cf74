package store

import "github.com/cockroachdb/pebble/v2/vfs"

// noSyncFS is the file system of a scratch store (OpenScratchStore): what
// one holds is rebuilt from the directory it was made from if the process
// dies, and deleted when it closes, so no write to it is worth waiting
// for the disk: its files' syncs return at once. Every other store syncs
// as before.
type noSyncFS struct{ vfs.FS }

func (fs noSyncFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	return noSync(fs.FS.Create(name, cat))
}

func (fs noSyncFS) OpenReadWrite(name string, cat vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return noSync(fs.FS.OpenReadWrite(name, cat, opts...))
}

func (fs noSyncFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	return noSync(fs.FS.ReuseForWrite(oldname, newname, cat))
}

func (fs noSyncFS) OpenDir(name string) (vfs.File, error) { return noSync(fs.FS.OpenDir(name)) }

func noSync(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return noSyncFile{f}, nil
}

type noSyncFile struct{ vfs.File }

func (noSyncFile) Sync() error                { return nil }
func (noSyncFile) SyncData() error            { return nil }
func (noSyncFile) SyncTo(int64) (bool, error) { return false, nil }
