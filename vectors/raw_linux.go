//go:build linux

package vectors

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// readBatch loads the vectors of nodes into dst (len(nodes)·dim floats, one
// after another). It first reads each with preadv2(RWF_NOWAIT), which
// answers only from the page cache; the vectors it could not get that way
// are all asked for at once with posix_fadvise(WILLNEED), so the disk
// fetches them concurrently, and then read with plain pread. A search whose
// vectors are cached costs the same one system call per vector as before; one
// whose vectors are not waits about one disk read instead of one per vector.
// Kernels or file systems without RWF_NOWAIT get plain preads.
func (r *rawFile) readBatch(sc *scratch, nodes []uint32, dst []float32) error {
	dim := r.size / 4
	if !littleEndian || r.noNowait.Load() || r.forceCold || r.readOnly {
		return r.readBatchPlain(sc, nodes, dst)
	}
	fd := int(r.f.Fd())
	miss := sc.miss[:0]
	for i, node := range nodes {
		b := floatBytes(dst[i*dim : (i+1)*dim])
		sc.iov = append(sc.iov[:0], b)
		n, err := unix.Preadv2(fd, sc.iov, int64(node)*int64(r.size), unix.RWF_NOWAIT)
		if err == nil && n == len(b) {
			continue
		}
		if err != nil && !errors.Is(err, unix.EAGAIN) {
			// No RWF_NOWAIT here (ENOSYS, EOPNOTSUPP, EINVAL): plain preads
			// from now on.
			r.noNowait.Store(true)
			sc.miss = miss
			return r.readBatchPlain(sc, nodes[i:], dst[i*dim:])
		}
		miss = append(miss, uint32(i))
	}
	sc.miss = miss
	return r.readMisses(sc, nodes, dst)
}

// readBatchPlain reads every vector as a miss: the forceCold test hook, and
// where RWF_NOWAIT is missing (then without the fadvise, which would only
// add a system call per cached vector).
func (r *rawFile) readBatchPlain(sc *scratch, nodes []uint32, dst []float32) error {
	if r.forceCold {
		sc.miss = sc.miss[:0]
		for i := range nodes {
			sc.miss = append(sc.miss, uint32(i))
		}
		return r.readMisses(sc, nodes, dst)
	}
	dim := r.size / 4
	for i, node := range nodes {
		if err := r.read(node, dst[i*dim:(i+1)*dim], &sc.rawBuf); err != nil {
			return err
		}
	}
	return nil
}

// readMisses reads the vectors sc.miss indexes, after advising the kernel
// of all of them when there are several.
func (r *rawFile) readMisses(sc *scratch, nodes []uint32, dst []float32) error {
	dim := r.size / 4
	if len(sc.miss) == 0 {
		return nil
	}
	r.coldReads.Add(int64(len(sc.miss)))
	if len(sc.miss) > 1 {
		fd := int(r.f.Fd())
		for _, i := range sc.miss {
			if err := unix.Fadvise(fd, int64(nodes[i])*int64(r.size), int64(r.size), unix.FADV_WILLNEED); err != nil {
				return fmt.Errorf("advise %s of node %d: %w", r.f.Name(), nodes[i], err)
			}
		}
	}
	for _, i := range sc.miss {
		if err := r.read(nodes[i], dst[int(i)*dim:(int(i)+1)*dim], &sc.rawBuf); err != nil {
			return err
		}
	}
	return nil
}

// dropCache asks the kernel to drop the raw file's cached pages (clean ones
// only: sync first), for tests and benchmarks of a cold page cache.
func (r *rawFile) dropCache() error {
	if r.f == nil {
		return nil
	}
	return unix.Fadvise(int(r.f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
