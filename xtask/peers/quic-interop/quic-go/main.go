// quic-go as an interop peer for `cargo xtask interop`, with mote's command line:
//
//	quicgo-peer serve --listen ADDR --www DIR --cert PEM --key PEM [--retry]
//	                  [--alpn hq-interop,h3] [--keylog FILE] [--qlog-dir DIR]
//	quicgo-peer get URL... --output DIR --ca PEM [--alpn hq-interop|h3]
//	                  [--session-file FILE] [--0rtt] [--v2] [--keylog FILE]
//	                  [--qlog-dir DIR] [--timeout-ms N]
//
// Written on quic-go's public API (quic, http3, interop/http09 is not used so that one
// listener serves both ALPNs). HTTP/0.9 is the interop runner's: "GET /path\r\n", the
// response is the file, then FIN. `get` exits 0 only when every file arrived complete,
// 127 for an option quic-go's public API cannot honour (--chacha20 and --key-update
// need quic-go internals; --migrate is not implemented here).
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/interop/utils"
)

const hq = "hq-interop"

// Largest HTTP/0.9 request accepted (a peer cannot make the server buffer more).
const maxRequest = 4096

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: quicgo-peer serve|get ...")
		os.Exit(2)
	}
	var code int
	switch os.Args[1] {
	case "serve":
		code = serve(os.Args[2:])
	case "get":
		code = get(os.Args[2:])
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", os.Args[1])
		code = 2
	}
	os.Exit(code)
}

func keyLog(file string) io.Writer {
	if file == "" {
		return nil
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "keylog:", err)
		os.Exit(1)
	}
	return f
}

func quicConfig(qlogDir string) *quic.Config {
	conf := &quic.Config{Allow0RTT: true, MaxIdleTimeout: 30 * time.Second}
	if qlogDir != "" {
		os.Setenv("QLOGDIR", qlogDir)
		conf.Tracer = utils.NewQLOGConnectionTracer
	}
	return conf
}

func serve(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	listen := fs.String("listen", "", "address")
	www := fs.String("www", "", "directory")
	certFile := fs.String("cert", "", "certificate chain (PEM)")
	keyFile := fs.String("key", "", "private key (PEM)")
	retry := fs.Bool("retry", false, "validate addresses with Retry")
	alpn := fs.String("alpn", hq+",h3", "ALPNs")
	keylog := fs.String("keylog", "", "SSLKEYLOGFILE")
	qlogDir := fs.String("qlog-dir", "", "qlog directory")
	fs.Parse(args)
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tlsConf := &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   strings.Split(*alpn, ","),
		KeyLogWriter: keyLog(*keylog),
	}
	addr, err := net.ResolveUDPAddr("udp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	udp, err := net.ListenUDP("udp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	conf := quicConfig(*qlogDir)
	conf.Versions = []quic.Version{quic.Version1, quic.Version2}
	tr := &quic.Transport{
		Conn:                udp,
		VerifySourceAddress: func(net.Addr) bool { return *retry },
	}
	ln, err := tr.ListenEarly(tlsConf, conf)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("quic-go server listening on %s\n", *listen)
	h3 := &http3.Server{Handler: http.FileServer(http.Dir(*www))}
	for {
		conn, err := ln.Accept(context.Background())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		go func() {
			proto := conn.ConnectionState().TLS.NegotiatedProtocol
			if proto == "" {
				select {
				case <-conn.HandshakeComplete():
				case <-conn.Context().Done():
					return
				}
				proto = conn.ConnectionState().TLS.NegotiatedProtocol
			}
			if proto == http3.NextProtoH3 {
				h3.ServeQUICConn(conn)
				return
			}
			serveHQ(conn, *www)
		}()
	}
}

func serveHQ(conn *quic.Conn, www string) {
	for {
		str, err := conn.AcceptStream(context.Background())
		if err != nil {
			return
		}
		go func() {
			req, err := io.ReadAll(io.LimitReader(str, maxRequest+1))
			if err != nil || len(req) > maxRequest {
				str.CancelWrite(0x10c)
				return
			}
			line := strings.SplitN(string(req), "\n", 2)[0]
			fields := strings.Fields(line)
			if len(fields) < 2 || fields[0] != "GET" {
				str.CancelWrite(0x10c)
				return
			}
			name := filepath.Join(www, filepath.FromSlash(path.Clean("/"+fields[1])))
			f, err := os.Open(name)
			if err != nil {
				str.CancelWrite(0x10c)
				return
			}
			defer f.Close()
			if _, err := io.Copy(str, bufio.NewReader(f)); err != nil {
				return
			}
			str.Close()
		}()
	}
}

// fileSessionCache keeps one TLS session in a file, so that resumption and 0-RTT work
// across two runs of `get` (as mote's --session-file does).
type fileSessionCache struct{ path string }

func (c *fileSessionCache) Get(string) (*tls.ClientSessionState, bool) {
	data, err := os.ReadFile(c.path)
	if err != nil || len(data) < 4 {
		return nil, false
	}
	n := int(binary.BigEndian.Uint32(data))
	if n > len(data)-4 {
		return nil, false
	}
	ticket, stateBytes := data[4:4+n], data[4+n:]
	state, err := tls.ParseSessionState(stateBytes)
	if err != nil {
		return nil, false
	}
	cs, err := tls.NewResumptionState(ticket, state)
	if err != nil {
		return nil, false
	}
	return cs, true
}

func (c *fileSessionCache) Put(_ string, cs *tls.ClientSessionState) {
	if cs == nil {
		return
	}
	ticket, state, err := cs.ResumptionState()
	if err != nil || state == nil {
		return
	}
	b, err := state.Bytes()
	if err != nil {
		return
	}
	out := binary.BigEndian.AppendUint32(nil, uint32(len(ticket)))
	out = append(append(out, ticket...), b...)
	os.WriteFile(c.path, out, 0o600)
}

func get(args []string) int {
	fs := flag.NewFlagSet("get", flag.ExitOnError)
	output := fs.String("output", "", "download directory")
	caFile := fs.String("ca", "", "CA certificate (PEM)")
	alpn := fs.String("alpn", hq, "ALPN")
	sessionFile := fs.String("session-file", "", "session ticket file")
	zeroRTT := fs.Bool("0rtt", false, "send the requests in 0-RTT")
	chacha := fs.Bool("chacha20", false, "offer only ChaCha20-Poly1305")
	v2 := fs.Bool("v2", false, "use QUIC v2")
	keyUpdate := fs.Bool("key-update", false, "update keys early")
	migrate := fs.Bool("migrate", false, "migrate actively")
	keylog := fs.String("keylog", "", "SSLKEYLOGFILE")
	qlogDir := fs.String("qlog-dir", "", "qlog directory")
	timeoutMs := fs.Int("timeout-ms", 60000, "overall timeout")
	// URLs come first in mote's command line; the flag package stops at the first
	// non-flag, so split them out.
	var urls, flags []string
	for i := 0; i < len(args); i++ {
		if strings.HasPrefix(args[i], "-") {
			flags = append(flags, args[i])
			if !strings.Contains(args[i], "=") && i+1 < len(args) && takesValue(args[i]) {
				flags = append(flags, args[i+1])
				i++
			}
		} else {
			urls = append(urls, args[i])
		}
	}
	fs.Parse(flags)
	if *chacha || *keyUpdate || *migrate {
		fmt.Fprintln(os.Stderr, "quic-go peer: --chacha20, --key-update and --migrate need quic-go internals")
		return 127
	}
	pem, err := os.ReadFile(*caFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tlsConf := &tls.Config{RootCAs: pool, NextProtos: []string{*alpn}, KeyLogWriter: keyLog(*keylog)}
	if *sessionFile != "" {
		tlsConf.ClientSessionCache = &fileSessionCache{path: *sessionFile}
	}
	conf := quicConfig(*qlogDir)
	if *v2 {
		conf.Versions = []quic.Version{quic.Version2, quic.Version1}
	} else {
		conf.Versions = []quic.Version{quic.Version1}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(*timeoutMs)*time.Millisecond)
	defer cancel()
	if err := os.MkdirAll(*output, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if *alpn == http3.NextProtoH3 {
		err = getH3(ctx, tlsConf, conf, urls, *output, *zeroRTT)
	} else {
		err = getHQ(ctx, tlsConf, conf, urls, *output)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "quic-go client failed:", err)
		return 1
	}
	return 0
}

func takesValue(flag string) bool {
	switch strings.TrimLeft(flag, "-") {
	case "0rtt", "chacha20", "v2", "key-update", "migrate":
		return false
	}
	return true
}

func parallel(urls []string, fetch func(u *url.URL) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(urls))
	for i, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fetch(u)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func save(dir string, u *url.URL, r io.Reader) error {
	f, err := os.Create(filepath.Join(dir, path.Base(u.Path)))
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, r)
	return err
}

func getHQ(ctx context.Context, tlsConf *tls.Config, conf *quic.Config, urls []string, dir string) error {
	if len(urls) == 0 {
		return errors.New("no URL")
	}
	u0, err := url.Parse(urls[0])
	if err != nil {
		return err
	}
	tlsConf.ServerName = u0.Hostname()
	// DialAddrEarly: with a resumable session, requests go out in 0-RTT.
	conn, err := quic.DialAddrEarly(ctx, u0.Host, tlsConf, conf)
	if err != nil {
		return err
	}
	defer conn.CloseWithError(0, "")
	return parallel(urls, func(u *url.URL) error {
		str, err := conn.OpenStreamSync(ctx)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(str, "GET %s\r\n", u.Path); err != nil {
			return err
		}
		str.Close()
		return save(dir, u, str)
	})
}

func getH3(ctx context.Context, tlsConf *tls.Config, conf *quic.Config, urls []string, dir string, zeroRTT bool) error {
	tr := &http3.Transport{TLSClientConfig: tlsConf, QUICConfig: conf}
	defer tr.Close()
	method := http.MethodGet
	if zeroRTT {
		method = http3.MethodGet0RTT
	}
	return parallel(urls, func(u *url.URL) error {
		req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
		if err != nil {
			return err
		}
		rsp, err := tr.RoundTrip(req)
		if err != nil {
			return err
		}
		defer rsp.Body.Close()
		if rsp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: status %d", u, rsp.StatusCode)
		}
		return save(dir, u, rsp.Body)
	})
}
