//go:build !linux

package vectors

// readBatch loads the vectors of nodes into dst (len(nodes)·dim floats, one
// after another), one pread each.
func (r *rawFile) readBatch(sc *scratch, nodes []uint32, dst []float32) error {
	dim := r.size / 4
	if r.forceCold {
		r.coldReads.Add(int64(len(nodes)))
	}
	for i, node := range nodes {
		if err := r.read(node, dst[i*dim:(i+1)*dim], &sc.rawBuf); err != nil {
			return err
		}
	}
	return nil
}

func (r *rawFile) dropCache() error { return nil }
