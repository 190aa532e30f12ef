package ort

import (
	"fmt"
	"strconv"
)

// Int64Tensor is a dense row-major int64 tensor: token ids, attention masks,
// token type ids.
type Int64Tensor struct {
	Shape []int64
	Data  []int64
}

// Float32Tensor is a dense row-major float32 tensor: hidden states, logits.
type Float32Tensor struct {
	Shape []int64
	Data  []float32
}

// ElementType is a tensor element type; the values are those of ONNX's
// TensorProto.DataType.
type ElementType int

// The element types this package meets in practice.
const (
	Undefined ElementType = 0
	Float32   ElementType = 1
	Uint8     ElementType = 2
	Int8      ElementType = 3
	Int32     ElementType = 6
	Int64     ElementType = 7
	String    ElementType = 8
	Bool      ElementType = 9
	Float16   ElementType = 10
	Float64   ElementType = 11
)

func (t ElementType) String() string {
	switch t {
	case Undefined:
		return "undefined"
	case Float32:
		return "float32"
	case Uint8:
		return "uint8"
	case Int8:
		return "int8"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	case String:
		return "string"
	case Bool:
		return "bool"
	case Float16:
		return "float16"
	case Float64:
		return "float64"
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// IOInfo describes one input or output of a model.
type IOInfo struct {
	Name string
	Type ElementType
	// Dims has -1 for a dynamic dimension (batch, sequence length).
	Dims []int64
}

func (i IOInfo) String() string {
	return fmt.Sprintf("%s %s%v", i.Name, i.Type, i.Dims)
}

// elements returns the number of elements of shape, or an error when a
// dimension is negative or the product overflows.
func elements(shape []int64) (int64, error) {
	if len(shape) == 0 {
		return 0, fmt.Errorf("empty shape")
	}
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d != 0 && n > (1<<62)/d {
			return 0, fmt.Errorf("shape %v is too large", shape)
		}
		n *= d
	}
	return n, nil
}
