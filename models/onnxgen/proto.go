package onnxgen

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of onnx/onnx.proto (ONNX IR version 8) that the generator
// writes. There is no generated Go code for ONNX, so messages are written by
// hand with protowire.
const (
	modelIRVersion       protowire.Number = 1
	modelProducerName    protowire.Number = 2
	modelProducerVersion protowire.Number = 3
	modelDocString       protowire.Number = 6
	modelGraph           protowire.Number = 7
	modelOpsetImport     protowire.Number = 8

	opsetDomain  protowire.Number = 1
	opsetVersion protowire.Number = 2

	graphNode        protowire.Number = 1
	graphName        protowire.Number = 2
	graphInitializer protowire.Number = 5
	graphInput       protowire.Number = 11
	graphOutput      protowire.Number = 12
	graphValueInfo   protowire.Number = 13

	nodeInput     protowire.Number = 1
	nodeOutput    protowire.Number = 2
	nodeName      protowire.Number = 3
	nodeOpType    protowire.Number = 4
	nodeAttribute protowire.Number = 5

	attrName protowire.Number = 1
	attrF    protowire.Number = 2
	attrI    protowire.Number = 3
	attrInts protowire.Number = 8
	attrType protowire.Number = 20

	tensorDim      protowire.Number = 1
	tensorDataType protowire.Number = 2
	tensorName     protowire.Number = 8
	tensorRawData  protowire.Number = 9

	valueInfoName protowire.Number = 1
	valueInfoType protowire.Number = 2

	typeTensorType protowire.Number = 1

	typeTensorElemType protowire.Number = 1
	typeTensorShape    protowire.Number = 2

	shapeDim protowire.Number = 1

	dimValue protowire.Number = 1
	dimParam protowire.Number = 2
)

// TensorProto.DataType values.
const (
	dtFloat int32 = 1
	dtUint8 int32 = 2
	dtInt8  int32 = 3
	dtInt32 int32 = 6
	dtInt64 int32 = 7
)

// AttributeProto.AttributeType values.
const (
	attrTypeFloat = 1
	attrTypeInt   = 2
	attrTypeInts  = 7
)

// irVersion is the IR version that goes with opset 17.
const (
	irVersion = 8
	opset     = 17
)

func appendString(b []byte, n protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendVarint(b []byte, n protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, n, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendMessage(b []byte, n protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

// attr is an AttributeProto of type INT, FLOAT or INTS.
type attr struct {
	name string
	typ  int
	i    int64
	f    float32
	ints []int64
}

func attrInt(name string, v int64) attr        { return attr{name: name, typ: attrTypeInt, i: v} }
func attrFloat(name string, v float32) attr    { return attr{name: name, typ: attrTypeFloat, f: v} }
func attrIntList(name string, v ...int64) attr { return attr{name: name, typ: attrTypeInts, ints: v} }

func (a attr) encode() []byte {
	b := appendString(nil, attrName, a.name)
	switch a.typ {
	case attrTypeFloat:
		b = protowire.AppendTag(b, attrF, protowire.Fixed32Type)
		b = protowire.AppendFixed32(b, math.Float32bits(a.f))
	case attrTypeInt:
		b = appendVarint(b, attrI, uint64(a.i))
	case attrTypeInts:
		for _, v := range a.ints {
			b = appendVarint(b, attrInts, uint64(v))
		}
	}
	return appendVarint(b, attrType, uint64(a.typ))
}

// node is a NodeProto.
type node struct {
	op      string
	name    string
	inputs  []string
	outputs []string
	attrs   []attr
}

func (n node) encode() []byte {
	var b []byte
	for _, in := range n.inputs {
		b = appendString(b, nodeInput, in)
	}
	for _, out := range n.outputs {
		b = appendString(b, nodeOutput, out)
	}
	b = appendString(b, nodeName, n.name)
	b = appendString(b, nodeOpType, n.op)
	for _, a := range n.attrs {
		b = appendMessage(b, nodeAttribute, a.encode())
	}
	return b
}

// dim is one dimension of a graph input or output: a size, or a symbolic
// name when param is set.
type dim struct {
	value int64
	param string
}

// valueInfo is a ValueInfoProto for a tensor.
type valueInfo struct {
	name  string
	dtype int32
	dims  []dim
}

func (v valueInfo) encode() []byte {
	var shape []byte
	for _, d := range v.dims {
		var db []byte
		if d.param != "" {
			db = appendString(db, dimParam, d.param)
		} else {
			db = appendVarint(db, dimValue, uint64(d.value))
		}
		shape = appendMessage(shape, shapeDim, db)
	}
	tt := appendVarint(nil, typeTensorElemType, uint64(v.dtype))
	tt = appendMessage(tt, typeTensorShape, shape)
	typ := appendMessage(nil, typeTensorType, tt)
	b := appendString(nil, valueInfoName, v.name)
	return appendMessage(b, valueInfoType, typ)
}

// tensor is an initializer (TensorProto with raw_data). Small constants carry
// their bytes in raw; random weights are produced by gen when the model is
// written, so that a large model is never held twice in memory.
type tensor struct {
	name  string
	dtype int32
	dims  []int64
	raw   []byte
	gen   *weights
}

func (t *tensor) rawLen() int {
	if t.gen != nil {
		return t.gen.size()
	}
	return len(t.raw)
}

// header encodes every field of the TensorProto up to and including the tag
// and length of raw_data, whose bytes follow.
func (t *tensor) header() []byte {
	var b []byte
	for _, d := range t.dims {
		b = appendVarint(b, tensorDim, uint64(d))
	}
	b = appendVarint(b, tensorDataType, uint64(t.dtype))
	b = appendString(b, tensorName, t.name)
	b = protowire.AppendTag(b, tensorRawData, protowire.BytesType)
	return protowire.AppendVarint(b, uint64(t.rawLen()))
}

func int64Raw(vals []int64) []byte {
	b := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return b
}

func int32Raw(vals []int32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return b
}

func float32Raw(vals []float32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// piece is part of a serialised model: literal bytes, or random weights
// generated on the way out.
type piece struct {
	lit []byte
	gen *weights
}

func (p piece) size() int {
	if p.gen != nil {
		return p.gen.size()
	}
	return len(p.lit)
}

// pieces is a serialised message under construction; literal bytes are
// gathered in the last piece.
type pieces []piece

func (ps *pieces) add(b []byte) {
	if n := len(*ps); n > 0 && (*ps)[n-1].gen == nil {
		(*ps)[n-1].lit = append((*ps)[n-1].lit, b...)
		return
	}
	*ps = append(*ps, piece{lit: append([]byte(nil), b...)})
}

func (ps *pieces) addGen(w *weights) { *ps = append(*ps, piece{gen: w}) }

func (ps pieces) size() int {
	n := 0
	for _, p := range ps {
		n += p.size()
	}
	return n
}

// graph is a GraphProto under construction.
type graph struct {
	name    string
	nodes   []node
	inits   []*tensor
	inputs  []valueInfo
	outputs []valueInfo
	// shapes annotates intermediate values whose shape ONNX shape inference
	// cannot work out on its own, as the PyTorch exporter does.
	shapes []valueInfo
}

func (g *graph) encode() pieces {
	var ps pieces
	for _, n := range g.nodes {
		ps.add(appendMessage(nil, graphNode, n.encode()))
	}
	ps.add(appendString(nil, graphName, g.name))
	for _, t := range g.inits {
		h := t.header()
		b := protowire.AppendTag(nil, graphInitializer, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(len(h)+t.rawLen()))
		ps.add(append(b, h...))
		if t.gen != nil {
			ps.addGen(t.gen)
		} else {
			ps.add(t.raw)
		}
	}
	for _, v := range g.inputs {
		ps.add(appendMessage(nil, graphInput, v.encode()))
	}
	for _, v := range g.outputs {
		ps.add(appendMessage(nil, graphOutput, v.encode()))
	}
	for _, v := range g.shapes {
		ps.add(appendMessage(nil, graphValueInfo, v.encode()))
	}
	return ps
}

// encodeModel wraps g in a ModelProto importing the default opset.
func encodeModel(g *graph, producer, version, doc string) pieces {
	gp := g.encode()
	var b []byte
	b = appendVarint(b, modelIRVersion, irVersion)
	b = appendString(b, modelProducerName, producer)
	b = appendString(b, modelProducerVersion, version)
	b = appendString(b, modelDocString, doc)
	op := appendString(nil, opsetDomain, "")
	op = appendVarint(op, opsetVersion, opset)
	b = appendMessage(b, modelOpsetImport, op)
	b = protowire.AppendTag(b, modelGraph, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(gp.size()))
	ps := pieces{{lit: b}}
	return append(ps, gp...)
}
