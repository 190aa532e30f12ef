package stage

// Sources are c's source roles that check, repair, status and metrics
// read (a Declaration of Kind KindSource with Source set), in order.
func (c Catalog) Sources() []Declaration {
	var out []Declaration
	for _, d := range c.Services {
		if d.KindOf() == KindSource && d.Source != nil {
			out = append(out, d)
		}
	}
	return out
}
