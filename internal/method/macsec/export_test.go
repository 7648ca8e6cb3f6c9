package macsec

import "io"

// WithKeys is the method drawing its SAKs from r: a fixed source for the
// golden files, a recording one for the secrets checks.
func WithKeys(r io.Reader) MACsec { return MACsec{keys: r} }
