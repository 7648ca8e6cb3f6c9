package method

// Framer is implemented by methods whose per-packet overhead depends on
// the options they ran with (openvpn over TCP, IPsec's mode and UDP
// encapsulation). variant is Path.Variant, which says which data path an
// "auto" choice took.
type Framer interface {
	HeaderOverhead(family string, opts map[string]string, variant string) int
}

// HeaderOverhead is the number of bytes a method really adds to each
// packet with the options it ran with: the method's own answer when it is
// a Framer, its Overhead otherwise. It feeds the ceiling arithmetic of
// docs/methods.md.
func HeaderOverhead(m Method, family string, opts map[string]string, variant string) int {
	if f, ok := m.(Framer); ok {
		return f.HeaderOverhead(family, opts, variant)
	}
	return m.Overhead(family)
}
