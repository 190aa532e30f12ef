//go:build !unix

package system

import "os"

// tryLockFile is a no-op off Unix: the embedded server's own store lock is
// the only guard there.
func tryLockFile(*os.File) (busy bool, err error) { return false, nil }
