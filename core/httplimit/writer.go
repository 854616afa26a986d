package httplimit

import (
	"bufio"
	"io"
	"net"
	"net/http"
)

// responseWriter is the http.ResponseWriter the handler gets: it notes the
// final status and the body bytes written, and passes everything else to
// the server's writer. Unwrap lets http.ResponseController reach the
// server's writer (deadlines, full duplex); Flush, Hijack and Push are passed
// through for code that still asserts those interfaces, and ReadFrom keeps
// the server's sendfile path.
type responseWriter struct {
	http.ResponseWriter
	status   int // the final status; 0 until one is written
	written  int64
	hijacked bool
}

// Unwrap returns the server's writer (http.ResponseController).
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// WriteHeader notes the first final status (1xx informational answers are
// passed on and not final, but for 101 Switching Protocols).
func (w *responseWriter) WriteHeader(code int) {
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.written += int64(n)
	return n, err
}

// ReadFrom copies the body from r through the server's writer's ReadFrom
// when it has one (net/http's uses sendfile for files).
func (w *responseWriter) ReadFrom(r io.Reader) (int64, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(r)
	} else {
		n, err = io.Copy(writerOnly{w.ResponseWriter}, r)
	}
	w.written += n
	return n, err
}

// writerOnly hides every method but Write, so io.Copy does not call
// ReadFrom back.
type writerOnly struct{ io.Writer }

// Flush sends what is buffered to the client (a no-op when the server's
// writer cannot).
func (w *responseWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection over (http.ErrNotSupported when the server's
// writer cannot, as over HTTP/2).
func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return c, rw, err
}

// Push starts an HTTP/2 server push (http.ErrNotSupported when the server's
// writer cannot).
func (w *responseWriter) Push(target string, opts *http.PushOptions) error {
	if p, ok := w.ResponseWriter.(http.Pusher); ok {
		return p.Push(target, opts)
	}
	return http.ErrNotSupported
}

var (
	_ http.Flusher  = (*responseWriter)(nil)
	_ http.Hijacker = (*responseWriter)(nil)
	_ http.Pusher   = (*responseWriter)(nil)
	_ io.ReaderFrom = (*responseWriter)(nil)
)
