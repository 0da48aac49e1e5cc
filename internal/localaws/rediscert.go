package localaws

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The process's one certificate: every TLS server of a test binary
// presents the same one, since a process reads its system roots (where
// SSL_CERT_FILE adds it) only once.
var (
	certOnce        sync.Once
	certPEM, keyPEM []byte
	clientTLS       *tls.Config
	certErr         error
)

// redisCertificate writes the process's self-signed certificate for localhost
// and 127.0.0.1 (valid for a day) and its key into dir; it returns their
// files and a client configuration that trusts the certificate.
func redisCertificate(dir string) (certFile, keyFile string, client *tls.Config, err error) {
	certOnce.Do(func() { certPEM, keyPEM, clientTLS, certErr = newCertificate() })
	if certErr != nil {
		return "", "", nil, certErr
	}
	certFile, keyFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return "", "", nil, err
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		return "", "", nil, err
	}
	return certFile, keyFile, clientTLS.Clone(), nil
}

func newCertificate() (certPEM, keyPEM []byte, client *tls.Config, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "localhost"},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, ServerName: "localhost"}, nil
}
