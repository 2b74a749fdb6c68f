package cmd_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	io, _, out, errOut := ui.Test()
	code = cmd.MainArgs(args, io)
	return code, out.String(), errOut.String()
}

// writeCerts makes a CA and a server certificate for 127.0.0.1.
func writeCerts(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lockctl test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", srvDER), write("server.key", "EC PRIVATE KEY", keyDER)
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	ca, cert, key := writeCerts(t, dir)
	tlsPort, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := redistest.StartTest(t, &redistest.Options{Args: []string{
		"--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-ca-cert-file", ca, "--tls-auth-clients", "no",
	}})
	url := "rediss://127.0.0.1:" + strconv.Itoa(tlsPort) + "/0"

	if code, out, errOut := run(t, "--url", url, "--tls-ca", ca, "lock", "tls-a", "-n"); code != 0 || len(strings.TrimSpace(out)) != 32 {
		t.Fatalf("verified TLS: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut := run(t, "--url", url, "lock", "tls-b", "-n")
	if code != cmd.ExitUnavailable || !strings.Contains(errOut, "certificate") {
		t.Fatalf("unknown CA: exit %d, stderr %q; want 69 naming the certificate", code, errOut)
	}
	if code, _, errOut := run(t, "--url", url, "--tls-insecure", "lock", "tls-c", "-n"); code != 0 ||
		strings.Count(errOut, "warning: --tls-insecure: the server's certificate is not verified") != 1 {
		t.Fatalf("--tls-insecure: exit %d, stderr %q; want 0 and one warning", code, errOut)
	}
	// Verified TLS says nothing.
	if code, _, errOut := run(t, "--url", url, "--tls-ca", ca, "lock", "tls-d", "-n"); code != 0 || errOut != "" {
		t.Fatalf("verified TLS: exit %d, stderr %q; want 0 and nothing on stderr", code, errOut)
	}
	// The plain port of the same server sees the locks taken over TLS.
	if got, _ := s.Do("EXISTS", "lock:tls-a"); got != "1" {
		t.Fatalf("lock:tls-a not on the server: %q", got)
	}
	if code, _, _ := run(t, "--url", url, "--tls-ca", filepath.Join(dir, "missing.pem"), "lock", "x"); code != cmd.ExitUsage {
		t.Fatalf("missing --tls-ca file: exit %d, want 64", code)
	}
}

func TestUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "redis.sock")
	s := redistest.StartTest(t, &redistest.Options{Args: []string{"--unixsocket", sock, "--unixsocketperm", "700"}})
	if code, _, errOut := run(t, "--url", "unix://"+sock, "lock", "sock", "-n"); code != 0 {
		t.Fatalf("unix socket: exit %d, stderr %q", code, errOut)
	}
	if got, _ := s.Do("EXISTS", "lock:sock"); got != "1" {
		t.Fatalf("lock:sock not on the server: %q", got)
	}
	if code, _, _ := run(t, "--url", "unix://"+sock+".missing", "lock", "sock", "-n"); code != cmd.ExitUnavailable {
		t.Fatalf("missing socket: exit %d, want 69", code)
	}
}

// rediss:// at a plain server: the server never answers a TLS handshake, so
// lockctl must find out by itself, well inside --timeout, and say TLS.
func TestTLSAtPlainServerFailsFast(t *testing.T) {
	s := redistest.StartTest(t, nil)
	start := time.Now()
	code, _, errOut := run(t, "--url", "rediss://"+s.Addr+"/0", "--timeout", "60s", "lock", "tls-plain", "-n")
	took := time.Since(start)
	if code != cmd.ExitUnavailable || !strings.Contains(errOut, "TLS") || !strings.Contains(errOut, s.Addr) {
		t.Fatalf("exit %d, stderr %q; want 69 naming TLS and %s", code, errOut, s.Addr)
	}
	// Half the timeout: generous for a loaded machine, far below the
	// minute a handshake left alone would wait.
	if took > 30*time.Second {
		t.Fatalf("took %s of --timeout 60s; want a fast failure", took)
	}
}
