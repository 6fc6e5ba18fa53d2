// Package localkms runs github.com/nsmithuk/local-kms, an AWS-KMS-compatible
// server, inside this process on 127.0.0.1, for tests and the lab.
//
// local-kms's own binary listens on every interface and has no bind
// option; serving its request handlers from a listener this package opens
// on loopback keeps it off the network without root or namespaces. Stop
// and Restart simulate an outage on the same address.
//
// It is a test double: keys live in a temporary LevelDB, and it is not a
// key-management service.
package localkms

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nsmithuk/local-kms/src/config"
	"github.com/nsmithuk/local-kms/src/data"
	"github.com/nsmithuk/local-kms/src/handler"
	"github.com/sirupsen/logrus"
)

// Server is a running local KMS.
type Server struct {
	dir    string
	db     *data.Database
	logger *logrus.Logger

	mu   sync.Mutex
	addr string
	srv  *http.Server
}

// running guards local-kms's process-wide configuration.
var running sync.Mutex

// Start opens a fresh database in a temporary folder and serves on
// 127.0.0.1 at a free port. Only one Server runs per process (local-kms
// keeps its configuration in globals); Start blocks until the previous one
// is closed.
func Start() (*Server, error) {
	running.Lock()
	dir, err := os.MkdirTemp("", "ward-localkms-")
	if err != nil {
		running.Unlock()
		return nil, err
	}
	config.AWSAccountId = "111122223333"
	config.AWSRegion = "us-east-1"
	config.DatabasePath = dir
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	s := &Server{dir: dir, db: data.NewDatabase(dir), logger: logger, addr: "127.0.0.1:0"}
	if err := s.listen(); err != nil {
		s.db.Close()
		os.RemoveAll(dir)
		running.Unlock()
		return nil, err
	}
	return s, nil
}

// Endpoint returns the base URL, for awskms.Config.Endpoint.
func (s *Server) Endpoint() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "http://" + s.addr
}

// Addr returns host:port.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

func (s *Server) listen() error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("localkms: %w", err)
	}
	s.addr = ln.Addr().String()
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 5 * time.Second}
	go s.srv.Serve(ln)
	return nil
}

// Stop closes the listener and every open connection: clients see the
// service disappear. Restart brings it back on the same address.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		s.srv.Close()
		s.srv = nil
	}
}

// Restart serves again on the same address after Stop.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return nil
	}
	var err error
	for range 50 { // the port may linger briefly
		if err = s.listen(); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// Close stops the server and deletes its data.
func (s *Server) Close() error {
	s.Stop()
	s.db.Close()
	err := os.RemoveAll(s.dir)
	running.Unlock()
	return err
}

// operations are the KMS API calls served: what ward and its tests use.
var operations = map[string]func(*handler.RequestHandler) handler.Response{
	"CreateKey":       (*handler.RequestHandler).CreateKey,
	"CreateAlias":     (*handler.RequestHandler).CreateAlias,
	"DescribeKey":     (*handler.RequestHandler).DescribeKey,
	"ListKeys":        (*handler.RequestHandler).ListKeys,
	"ListAliases":     (*handler.RequestHandler).ListAliases,
	"Encrypt":         (*handler.RequestHandler).Encrypt,
	"Decrypt":         (*handler.RequestHandler).Decrypt,
	"ReEncrypt":       (*handler.RequestHandler).ReEncrypt,
	"GenerateDataKey": (*handler.RequestHandler).GenerateDataKey,
	"DisableKey":      (*handler.RequestHandler).DisableKey,
	"EnableKey":       (*handler.RequestHandler).EnableKey,
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	f, ok := operations[op]
	if !ok {
		http.Error(w, "operation not served by ward's local KMS: "+op, http.StatusNotImplemented)
		return
	}
	resp := f(handler.NewRequestHandler(r, s.logger, s.db))
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(resp.Code)
	io.WriteString(w, resp.Body)
}
