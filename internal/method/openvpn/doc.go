// Package openvpn is the openvpn method: OpenVPN as a classic TLS VPN,
// side b a server and side a its client, each on a TUN device, with a
// certificate authority, certificates and a tls-crypt key made for the
// run and the data channel in userspace.
package openvpn
