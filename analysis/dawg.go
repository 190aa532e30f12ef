package analysis

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// dawg is a read-only double-array DAWG in the dawgdic format (Susumu Yata's
// dawgdic, as written by the Python DAWG package that pymorphy2 uses): an
// array of 32-bit units and a guide of (first child, next sibling) labels
// that lets every key below a node be enumerated.
type dawg struct {
	units []uint32
	guide []byte
}

const (
	dawgRoot      = 0
	hasLeafBit    = 1 << 8
	extensionBit  = 1 << 9
	isLeafBit     = 1 << 31
	dawgNoIndex   = ^uint32(0)
	maxDawgKeyLen = 64
)

// parseDAWG reads a dictionary with its guide: a little-endian uint32 unit
// count, the units, a uint32 guide length and 2 bytes per guide entry.
func parseDAWG(data []byte) (*dawg, error) {
	if len(data) < 8 {
		return nil, errors.New("dawg: file too short")
	}
	n := int(binary.LittleEndian.Uint32(data))
	if n == 0 {
		return nil, errors.New("dawg: no units")
	}
	if 4+4*n+4 > len(data) {
		return nil, fmt.Errorf("dawg: %d units do not fit in %d bytes", n, len(data))
	}
	units := make([]uint32, n)
	for i := range units {
		units[i] = binary.LittleEndian.Uint32(data[4+4*i:])
	}
	g := int(binary.LittleEndian.Uint32(data[4+4*n:]))
	rest := data[8+4*n:]
	if 2*g > len(rest) {
		return nil, fmt.Errorf("dawg: guide of %d entries does not fit in %d bytes", g, len(rest))
	}
	if g != n {
		return nil, fmt.Errorf("dawg: guide has %d entries for %d units", g, n)
	}
	return &dawg{units: units, guide: rest[:2*g]}, nil
}

func unitOffset(u uint32) uint32 { return (u >> 10) << ((u & extensionBit) >> 6) }
func unitLabel(u uint32) uint32  { return u & (isLeafBit | 0xFF) }

// follow moves from node index along the byte c.
func (d *dawg) follow(index uint32, c byte) uint32 {
	next := index ^ unitOffset(d.units[index]) ^ uint32(c)
	if next >= uint32(len(d.units)) || unitLabel(d.units[next]) != uint32(c) {
		return dawgNoIndex
	}
	return next
}

func (d *dawg) hasValue(index uint32) bool { return d.units[index]&hasLeafBit != 0 }

// completions calls fn with every key suffix stored below node index, in the
// guide's order. fn must not keep key.
func (d *dawg) completions(index uint32, fn func(key []byte)) {
	var stackBuf [maxDawgKeyLen]uint32
	var keyBuf [maxDawgKeyLen]byte
	stack := append(stackBuf[:0], index)
	key := keyBuf[:0]
	first := true
	for {
		index = stack[len(stack)-1]
		if !first {
			// Move to the next key: the first child of the last leaf's
			// node, or else the next sibling of the nearest ancestor.
			if label := d.guide[2*index]; label != 0 {
				if index = d.follow(index, label); index == dawgNoIndex {
					return
				}
				key = append(key, label)
				stack = append(stack, index)
			} else {
				for {
					label := d.guide[2*index+1]
					stack = stack[:len(stack)-1]
					if len(stack) == 0 {
						return
					}
					key = key[:len(key)-1]
					index = stack[len(stack)-1]
					if label != 0 {
						if index = d.follow(index, label); index == dawgNoIndex {
							return
						}
						key = append(key, label)
						stack = append(stack, index)
						break
					}
				}
			}
		}
		first = false
		for !d.hasValue(index) {
			label := d.guide[2*index]
			if index = d.follow(index, label); index == dawgNoIndex {
				return
			}
			key = append(key, label)
			stack = append(stack, index)
			if len(stack) >= maxDawgKeyLen {
				return // a corrupt guide; real keys are far shorter
			}
		}
		fn(key)
	}
}
