package openvpn

// Per-run certificates and keys for the openvpn method, generated in Go:
// a throwaway certificate authority, one server and one client
// certificate, all ECDSA P-256, and the OpenVPN static key that
// --tls-crypt uses. The CA's private key lives only in memory and is
// dropped once the two certificates are signed, so nothing can issue
// further certificates for the run.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// Common names of the per-run certificates. The client's name is also the
// name of its file in the server's --client-config-dir.
const (
	ovpnCAName     = "tunbench openvpn ca"
	ovpnServerName = "tunbench-server"
	ovpnClientName = "tunbench-client"
)

// ovpnPKI is the PEM encoding of one run's certificates and keys. The
// fields other than CACert carry secrets: write them only with WriteSecret
// and never print them.
type ovpnPKI struct {
	CACert                []byte
	ServerCert, ServerKey []byte
	ClientCert, ClientKey []byte
	// TLSCrypt is a 2048-bit OpenVPN static key (--tls-crypt).
	TLSCrypt []byte
}

// newOVPNPKI generates a CA and the server and client certificates it
// signs, valid from an hour ago (clock skew between the sides is nil
// here, but harmless to allow) for a day, and a tls-crypt key.
func newOVPNPKI(now time.Time) (*ovpnPKI, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("openvpn pki: generate ca key: %w", err)
	}
	notBefore, notAfter := now.Add(-time.Hour), now.Add(24*time.Hour)
	caTmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: ovpnCAName},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	if caTmpl.SerialNumber, err = ovpnSerial(); err != nil {
		return nil, err
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("openvpn pki: sign ca certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("openvpn pki: parse ca certificate: %w", err)
	}
	p := &ovpnPKI{CACert: ovpnPEM("CERTIFICATE", caDER)}
	// --remote-cert-tls server/client checks these key usages and
	// extended key usages (RFC 5280 TLS web server / client).
	leaf := func(cn string, eku x509.ExtKeyUsage) (cert, key []byte, err error) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, fmt.Errorf("openvpn pki: generate %s key: %w", cn, err)
		}
		tmpl := &x509.Certificate{
			Subject:               pkix.Name{CommonName: cn},
			NotBefore:             notBefore,
			NotAfter:              notAfter,
			KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyAgreement,
			ExtKeyUsage:           []x509.ExtKeyUsage{eku},
			BasicConstraintsValid: true,
		}
		if tmpl.SerialNumber, err = ovpnSerial(); err != nil {
			return nil, nil, err
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			return nil, nil, fmt.Errorf("openvpn pki: sign %s certificate: %w", cn, err)
		}
		pkcs8, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return nil, nil, fmt.Errorf("openvpn pki: encode %s key: %w", cn, err)
		}
		return ovpnPEM("CERTIFICATE", der), ovpnPEM("PRIVATE KEY", pkcs8), nil
	}
	if p.ServerCert, p.ServerKey, err = leaf(ovpnServerName, x509.ExtKeyUsageServerAuth); err != nil {
		return nil, err
	}
	if p.ClientCert, p.ClientKey, err = leaf(ovpnClientName, x509.ExtKeyUsageClientAuth); err != nil {
		return nil, err
	}
	key := make([]byte, ovpnStaticKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("openvpn pki: generate tls-crypt key: %w", err)
	}
	p.TLSCrypt = ovpnStaticKey(key)
	return p, nil
}

// ovpnSerial returns a random 128-bit certificate serial number.
func ovpnSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("openvpn pki: generate serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

func ovpnPEM(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// ovpnStaticKeyBytes is the size of an OpenVPN static key: 2048 bits, four
// 64-byte keys (cipher and HMAC, each direction).
const ovpnStaticKeyBytes = 256

// ovpnStaticKey renders key (ovpnStaticKeyBytes long) in the file format
// of "openvpn --genkey secret": a comment, then the key in hex, 16 bytes
// per line, between BEGIN and END markers.
func ovpnStaticKey(key []byte) []byte {
	var b strings.Builder
	b.WriteString("#\n# 2048 bit OpenVPN static key\n#\n-----BEGIN OpenVPN Static key V1-----\n")
	for i := 0; i < len(key); i += 16 {
		b.WriteString(hex.EncodeToString(key[i:min(i+16, len(key))]))
		b.WriteByte('\n')
	}
	b.WriteString("-----END OpenVPN Static key V1-----\n")
	return []byte(b.String())
}
