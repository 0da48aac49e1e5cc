// Package freeport finds a free TCP port on 127.0.0.1 for a test server
// (dynalite, a private redis-server). Another process may take the port
// between the probe and the server's bind, so callers retry a failed start
// a few times.
package freeport

import "net"

// Port returns a TCP port that was free on 127.0.0.1 a moment ago.
func Port() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
