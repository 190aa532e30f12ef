package qdrantfake

import (
	"slices"

	"github.com/qdrant/go-client/qdrant"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// field evaluates a field condition as Qdrant documents it: a value of
// another type than the condition's does not match; a list payload value
// matches when at least one of its elements does (match keyword,
// keywords, except, integer, integers and range: "When we apply a filter
// to an array, it will succeed if at least one of the values inside the
// array meets the condition", qdrant.tech/documentation/payload); except
// also matches a missing field, as the fake did before; a range compares
// integer and double values, each bound inclusive or not as given.
func field(f *qdrant.FieldCondition, p *point) (bool, error) {
	val, ok := p.payload[f.GetKey()]
	var elems []*qdrant.Value
	if ok {
		if l, isList := val.GetKind().(*qdrant.Value_ListValue); isList {
			elems = l.ListValue.GetValues()
		} else {
			elems = []*qdrant.Value{val}
		}
	}
	any := func(pred func(*qdrant.Value) bool) bool { return slices.ContainsFunc(elems, pred) }
	if r := f.GetRange(); r != nil {
		return any(func(v *qdrant.Value) bool { return inRange(v, r) }), nil
	}
	m := f.GetMatch()
	switch m.GetMatchValue().(type) {
	case *qdrant.Match_Keyword:
		return any(func(v *qdrant.Value) bool { return isString(v, m.GetKeyword()) }), nil
	case *qdrant.Match_Keywords:
		ks := m.GetKeywords().GetStrings()
		return any(func(v *qdrant.Value) bool { return isStringIn(v, ks) }), nil
	case *qdrant.Match_ExceptKeywords:
		ks := m.GetExceptKeywords().GetStrings()
		return !ok || any(func(v *qdrant.Value) bool { return !isStringIn(v, ks) }), nil
	case *qdrant.Match_Integer:
		return any(func(v *qdrant.Value) bool { return isInt(v) && v.GetIntegerValue() == m.GetInteger() }), nil
	case *qdrant.Match_Integers:
		is := m.GetIntegers().GetIntegers()
		return any(func(v *qdrant.Value) bool { return isInt(v) && slices.Contains(is, v.GetIntegerValue()) }), nil
	}
	return false, status.Errorf(codes.Unimplemented, "qdrantfake: unsupported field condition %v", f)
}

func isString(v *qdrant.Value, s string) bool {
	x, ok := v.GetKind().(*qdrant.Value_StringValue)
	return ok && x.StringValue == s
}

func isStringIn(v *qdrant.Value, ss []string) bool {
	x, ok := v.GetKind().(*qdrant.Value_StringValue)
	return ok && slices.Contains(ss, x.StringValue)
}

func isInt(v *qdrant.Value) bool {
	_, ok := v.GetKind().(*qdrant.Value_IntegerValue)
	return ok
}

// inRange reports whether a numeric value lies within r.
func inRange(v *qdrant.Value, r *qdrant.Range) bool {
	var x float64
	switch k := v.GetKind().(type) {
	case *qdrant.Value_IntegerValue:
		x = float64(k.IntegerValue)
	case *qdrant.Value_DoubleValue:
		x = k.DoubleValue
	default:
		return false
	}
	return (r.Lt == nil || x < r.GetLt()) && (r.Lte == nil || x <= r.GetLte()) &&
		(r.Gt == nil || x > r.GetGt()) && (r.Gte == nil || x >= r.GetGte())
}
