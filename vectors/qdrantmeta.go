package vectors

import (
	"fmt"
	"slices"

	"github.com/qdrant/go-client/qdrant"
)

// qdrantIndexes are the payload fields the collection indexes, with their
// types: created with the collection and added to an existing one.
var qdrantIndexes = []struct {
	field string
	typ   qdrant.FieldType
}{
	{payloadLang, qdrant.FieldType_FieldTypeKeyword},
	{payloadDocID, qdrant.FieldType_FieldTypeKeyword},
	{MetaNotebook, qdrant.FieldType_FieldTypeKeyword},
	{MetaDirs, qdrant.FieldType_FieldTypeKeyword},
	{MetaTags, qdrant.FieldType_FieldTypeKeyword},
	{MetaTime, qdrant.FieldType_FieldTypeInteger},
}

// putMeta writes m's known fields into a point's payload.
func putMeta(pl map[string]*qdrant.Value, m PointMeta) {
	switch {
	case m.Notebook != "" && m.NotebookName != "" && m.NotebookName != m.Notebook:
		pl[MetaNotebook] = stringList([]string{m.Notebook, m.NotebookName})
	case m.Notebook != "":
		pl[MetaNotebook] = qdrant.NewValueString(m.Notebook)
	case m.NotebookName != "":
		pl[MetaNotebook] = qdrant.NewValueString(m.NotebookName)
	}
	dirs := dirsOf(m.Path)
	for _, d := range dirsOf(m.WholePath) {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) > 0 {
		pl[MetaDirs] = stringList(dirs)
	}
	if len(m.Tags) > 0 {
		pl[MetaTags] = stringList(m.Tags)
	}
	if m.Time != 0 {
		pl[MetaTime] = qdrant.NewValueInt(m.Time)
	}
}

func stringList(ss []string) *qdrant.Value {
	vs := make([]*qdrant.Value, len(ss))
	for i, s := range ss {
		vs[i] = qdrant.NewValueString(s)
	}
	return qdrant.NewValueFromList(vs...)
}

// qdrantMeta translates a MetaFilter to Qdrant's Filter.
func qdrantMeta(f *MetaFilter) (*qdrant.Filter, error) {
	out := &qdrant.Filter{}
	for _, part := range []struct {
		in  []MetaCond
		out *[]*qdrant.Condition
	}{{f.Must, &out.Must}, {f.MustNot, &out.MustNot}} {
		for _, c := range part.in {
			qc, err := qdrantCond(c)
			if err != nil {
				return nil, err
			}
			*part.out = append(*part.out, qc)
		}
	}
	for _, sub := range f.AnyOf {
		qf, err := qdrantMeta(&sub)
		if err != nil {
			return nil, err
		}
		out.Should = append(out.Should, qdrant.NewFilterAsCondition(qf))
	}
	return out, nil
}

func qdrantCond(c MetaCond) (*qdrant.Condition, error) {
	ranged := c.Min != nil || c.Max != nil
	switch {
	case c.Field == "":
		return nil, fmt.Errorf("a scope condition names no field: %w", ErrInvalid)
	case ranged && len(c.Any) > 0:
		return nil, fmt.Errorf("scope condition on %s: both values and a range; give one: %w", c.Field, ErrInvalid)
	case ranged:
		r := &qdrant.Range{}
		if c.Min != nil {
			r.Gte = qdrant.PtrOf(float64(*c.Min))
		}
		if c.Max != nil {
			r.Lte = qdrant.PtrOf(float64(*c.Max))
		}
		return qdrant.NewRange(c.Field, r), nil
	case len(c.Any) == 0:
		return nil, fmt.Errorf("scope condition on %s: no values and no range: %w", c.Field, ErrInvalid)
	}
	return qdrant.NewMatchKeywords(c.Field, c.Any...), nil
}
