package pg

import (
	"io/fs"
	"testing/fstest"
)

// WithFiles is base (a migrations folder) with more files at its root, such
// as a repeatable migration shared by several schemas. fstest.MapFS is the
// standard library's in-memory fs.FS; the copy is made once, at start.
func WithFiles(base fs.FS, files map[string][]byte) fs.FS {
	m := fstest.MapFS{}
	err := fs.WalkDir(base, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(base, p)
		m[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		panic("pg.WithFiles: " + err.Error()) // an embedded folder that cannot be read is a build defect
	}
	for name, data := range files {
		m[name] = &fstest.MapFile{Data: data}
	}
	return m
}
