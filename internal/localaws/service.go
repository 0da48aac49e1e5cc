package localaws

// Service: a fake third-party HTTP service for tests: an httptest server
// that applies a caller-supplied effect, with scripted faults, the
// Idempotency-Key semantics of a real payment API and a ledger of every
// request and effect (SES and lambdatest.Gateway are built on it).
//
// Idempotency-Key: the first request with a key runs the Handler and its
// answer is kept for the key retention (WithKeyRetention, default 24 h of
// the server's clock); a repeat with the same body gets it again (header
// Idempotent-Replayed: true) without an effect, with another body 422, while
// the first still runs 409; fault and Precheck answers are not kept.
// WithoutIdempotency performs every request, as a dependency that ignores
// the header. Faults (Rule, first matching rule with uses left): latency, a
// status instead of the effect, a reset before it, a timeout or reset after
// it (the effect applied, its answer lost: Record.AnswerLost). Probabilistic
// rules are seeded. Safe for concurrent use.

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// HeaderIdempotencyKey is the request header carrying the idempotency key.
const HeaderIdempotencyKey = "Idempotency-Key"

// HeaderReplayed is set to "true" on answers replayed from the key store.
const HeaderReplayed = "Idempotent-Replayed"

// ServiceRequest is what the ServiceHandler sees.
type ServiceRequest struct {
	Method, Path   string
	Header         http.Header
	Body           []byte
	IdempotencyKey string
}

// ServiceResponse is the ServiceHandler's answer.
type ServiceResponse struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON returns a response with a JSON body.
func JSON(status int, body string) ServiceResponse {
	return ServiceResponse{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
}

// ServiceHandler applies a request's effect and returns the answer. It runs at most
// once per idempotency key.
type ServiceHandler func(ServiceRequest) ServiceResponse

// Fault is what a matching Rule does to a request.
type Fault struct {
	// Latency is waited before anything else (cut short if the client
	// goes away).
	Latency time.Duration
	// Status, when non-zero, is answered instead of running the effect.
	Status int
	// RetryAfter is sent as the Retry-After header with Status.
	RetryAfter string
	// Reset closes the connection with a TCP reset before the effect.
	Reset bool
	// HangAfterEffect runs the effect (storing the answer under the key),
	// then never answers: the client times out.
	HangAfterEffect bool
	// ResetAfterEffect runs the effect, then resets the connection.
	ResetAfterEffect bool
}

// Name describes the fault in the ledger.
func (f Fault) Name() string {
	switch {
	case f.HangAfterEffect:
		return "hang-after-effect"
	case f.ResetAfterEffect:
		return "reset-after-effect"
	case f.Reset:
		return "reset"
	case f.Status != 0:
		return "status-" + strconv.Itoa(f.Status)
	case f.Latency > 0:
		return "latency"
	}
	return ""
}

// Rule applies Fault to matching requests.
type Rule struct {
	// Match selects requests (nil: all).
	Match func(ServiceRequest) bool
	// Times is how many requests the rule applies to (0: unlimited).
	Times int
	Fault Fault
}

// Record is one request in the ledger.
type Record struct {
	Seq            int
	At             time.Time
	Method, Path   string
	IdempotencyKey string
	Fault          string // Fault.Name() of the applied rule, "" if none
	Status         int    // 0 when the client got no answer (reset, hang)
	Replayed       bool   // answered from the key store
	Effect         bool   // the Handler ran
	// AnswerLost: the Handler ran and its answer never reached the client
	// (a hang or reset after the effect, or the client gone before the
	// answer was written): the caller cannot know the effect happened.
	AnswerLost bool
	Body       []byte // the request's body
}

// Effect is one run of the Handler.
type Effect struct {
	Seq            int // the Record's Seq
	At             time.Time
	Method, Path   string
	Header         http.Header
	IdempotencyKey string
	Body           []byte
	Response       ServiceResponse
}

type keyEntry struct {
	bodyHash [32]byte
	done     bool
	resp     ServiceResponse
	stored   time.Time
}

// DefaultKeyRetention is how long a key's answer is kept when
// WithKeyRetention is not given: about what a payment gateway keeps.
const DefaultKeyRetention = 24 * time.Hour

type rule struct {
	Rule
	used int
}

// ServiceOption configures a Service.
type ServiceOption func(*Service)

// WithClock stamps the ledger with now (default time.Now).
func WithClock(now func() time.Time) ServiceOption { return func(s *Service) { s.now = now } }

// WithKeyRetention keeps a key's answer for d of the server's clock
// (WithClock); a request with the key after that runs the Handler again, as
// with a key never seen. d <= 0 keeps keys forever.
func WithKeyRetention(d time.Duration) ServiceOption { return func(s *Service) { s.retention = d } }

// WithoutIdempotency makes the server ignore Idempotency-Key: every request
// runs the Handler (the ledger still records the key).
func WithoutIdempotency() ServiceOption { return func(s *Service) { s.ignoreKeys = true } }

// WithPrecheck runs check before faults and the key store; a non-nil answer
// is returned as is and not stored (authentication, routing).
func WithPrecheck(check func(ServiceRequest) *ServiceResponse) ServiceOption {
	return func(s *Service) { s.precheck = check }
}

// WithBearer is WithPrecheck refusing, with 401 no_autorizado, every
// request without the header "Authorization: Bearer " + key.
func WithBearer(key string) ServiceOption {
	return WithPrecheck(func(r ServiceRequest) *ServiceResponse {
		if r.Header.Get("Authorization") != "Bearer "+key {
			resp := JSON(http.StatusUnauthorized, `{"codigo":"no_autorizado","mensaje":"bad API key"}`)
			return &resp
		}
		return nil
	})
}

// Service is a fake third-party HTTP service.
type Service struct {
	srv      *httptest.Server
	handler  ServiceHandler
	precheck func(ServiceRequest) *ServiceResponse
	now      func() time.Time
	closed   chan struct{}
	once     sync.Once

	retention  time.Duration
	ignoreKeys bool

	mu       sync.Mutex
	rules    []*rule
	keys     map[string]*keyEntry
	requests []Record
	effects  []Effect
}

// NewService starts a server running h. Close it when done (t.Cleanup(s.Close)).
func NewService(h ServiceHandler, opts ...ServiceOption) *Service {
	s := &Service{handler: h, now: time.Now, closed: make(chan struct{}), keys: map[string]*keyEntry{}, retention: DefaultKeyRetention}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// URL is the server's base URL.
func (s *Service) URL() string { return s.srv.URL }

// Client returns an http.Client for the server (no timeout of its own).
func (s *Service) Client() *http.Client { return s.srv.Client() }

// Close stops the server; hanging requests are released.
func (s *Service) Close() {
	s.once.Do(func() { close(s.closed) })
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Inject adds fault rules after the existing ones.
func (s *Service) Inject(rules ...Rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rules {
		s.rules = append(s.rules, &rule{Rule: r})
	}
}

// ClearFaults removes every rule.
func (s *Service) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
}

// Requests returns the ledger of requests, in arrival order.
func (s *Service) Requests() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Record(nil), s.requests...)
}

// Effects returns the ledger of effects, in order.
func (s *Service) Effects() []Effect {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Effect(nil), s.effects...)
}

// pick returns the fault for req, consuming a use of its rule.
func (s *Service) pick(req ServiceRequest) Fault {
	for _, r := range s.rules {
		if r.Times > 0 && r.used >= r.Times {
			continue
		}
		if r.Match != nil && !r.Match(req) {
			continue
		}
		r.used++
		return r.Fault
	}
	return Fault{}
}

func (s *Service) serve(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(hr.Body)
	req := ServiceRequest{Method: hr.Method, Path: hr.URL.Path, Header: hr.Header.Clone(), Body: body,
		IdempotencyKey: hr.Header.Get(HeaderIdempotencyKey)}

	s.mu.Lock()
	rec := Record{Seq: len(s.requests) + 1, At: s.now(), Method: req.Method, Path: req.Path, IdempotencyKey: req.IdempotencyKey, Body: body}
	s.requests = append(s.requests, rec)
	s.mu.Unlock()
	update := func(f func(*Record)) {
		s.mu.Lock()
		f(&s.requests[rec.Seq-1])
		s.mu.Unlock()
	}

	if s.precheck != nil {
		if resp := s.precheck(req); resp != nil {
			update(func(r *Record) { r.Status = resp.Status })
			write(w, *resp)
			return
		}
	}
	s.mu.Lock()
	fault := s.pick(req)
	s.mu.Unlock()
	update(func(r *Record) { r.Fault = fault.Name() })

	if fault.Latency > 0 && !s.wait(hr, fault.Latency) {
		return
	}
	switch {
	case fault.Reset:
		reset(w)
		return
	case fault.Status != 0:
		resp := JSON(fault.Status, `{"codigo":"fallo_inyectado"}`)
		if fault.RetryAfter != "" {
			resp.Header.Set("Retry-After", fault.RetryAfter)
		}
		update(func(r *Record) { r.Status = fault.Status })
		write(w, resp)
		return
	}

	resp, replayed, effect := s.apply(req, rec.Seq)
	update(func(r *Record) { r.Replayed, r.Effect = replayed, effect })
	switch {
	case fault.HangAfterEffect:
		update(func(r *Record) { r.AnswerLost = effect })
		select {
		case <-hr.Context().Done():
		case <-s.closed:
		}
		return
	case fault.ResetAfterEffect:
		update(func(r *Record) { r.AnswerLost = effect })
		reset(w)
		return
	}
	if hr.Context().Err() != nil { // the client went away while the effect ran
		update(func(r *Record) { r.AnswerLost = effect })
		return
	}
	update(func(r *Record) { r.Status = resp.Status })
	write(w, resp)
}

// apply runs the effect under the idempotency rules.
func (s *Service) apply(req ServiceRequest, seq int) (resp ServiceResponse, replayed, effect bool) {
	run := func() ServiceResponse {
		resp := s.handler(req)
		s.mu.Lock()
		s.effects = append(s.effects, Effect{Seq: seq, At: s.now(), Method: req.Method, Path: req.Path, Header: req.Header,
			IdempotencyKey: req.IdempotencyKey, Body: req.Body, Response: resp})
		s.mu.Unlock()
		return resp
	}
	if req.IdempotencyKey == "" || s.ignoreKeys {
		return run(), false, true
	}
	hash := sha256.Sum256(append([]byte(req.Method+" "+req.Path+"\n"), req.Body...))
	s.mu.Lock()
	now := s.now()
	e, ok := s.keys[req.IdempotencyKey]
	if ok && e.done && s.retention > 0 && now.Sub(e.stored) >= s.retention {
		delete(s.keys, req.IdempotencyKey) // expired: as if never seen
		ok = false
	}
	switch {
	case ok && e.bodyHash != hash:
		s.mu.Unlock()
		return JSON(http.StatusUnprocessableEntity, `{"codigo":"clave_reutilizada","mensaje":"Idempotency-Key used with a different request"}`), false, false
	case ok && !e.done:
		s.mu.Unlock()
		return JSON(http.StatusConflict, `{"codigo":"clave_en_uso","mensaje":"a request with this Idempotency-Key is in progress"}`), false, false
	case ok:
		r := e.resp
		s.mu.Unlock()
		r.Header = r.Header.Clone()
		if r.Header == nil {
			r.Header = http.Header{}
		}
		r.Header.Set(HeaderReplayed, "true")
		return r, true, false
	}
	e = &keyEntry{bodyHash: hash}
	s.keys[req.IdempotencyKey] = e
	s.mu.Unlock()

	resp = run()
	s.mu.Lock()
	e.done, e.resp, e.stored = true, resp, s.now()
	s.mu.Unlock()
	return resp, false, true
}

func (s *Service) wait(hr *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-hr.Context().Done():
		return false
	case <-s.closed:
		return false
	}
}

func write(w http.ResponseWriter, r ServiceResponse) {
	for k, v := range r.Header {
		w.Header()[k] = v
	}
	status := r.Status
	status = cmp.Or(status, http.StatusOK)
	w.WriteHeader(status)
	_, _ = io.Copy(w, bytes.NewReader(r.Body))
}

// reset closes the connection with RST (SO_LINGER 0): the client reads
// "connection reset by peer".
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok { // HTTP/2: no connection to reset; the closest is an aborted stream
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
