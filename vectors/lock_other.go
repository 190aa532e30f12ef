//go:build !(linux || darwin || freebsd)

package vectors

import "os"

// lockDir opens dir/LOCK; there is no advisory locking on this platform.
func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(dir+string(os.PathSeparator)+"LOCK", os.O_CREATE|os.O_RDWR, 0o600)
}
