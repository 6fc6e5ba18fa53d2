package chat

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/wardlab/ward/field"
	"github.com/wardlab/ward/keyring"
)

// Worker hands the assistant's work to a process in another language (the
// Python package's worker, examples/chat/worker/assistant.py): for each
// message it sends the conversation's ciphertexts and a subject grant of
// message bodies for that user (field.Column.SubjectGrant: the keys of
// messages.body derived from the user's key, nothing that opens titles,
// e-mail addresses or another user's values), and the process opens them
// itself and answers. One request at a time, one JSON line each way; a
// process that fails or stalls is killed and started again for the next
// request. Private users' messages are never sent: the service answers
// them in-process, inside the user's session.
type Worker struct {
	argv    []string
	timeout time.Duration

	mu   sync.Mutex
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	sent int // requests answered by the worker, for tests and logs
}

// NewWorker returns a worker running argv (started at the first request).
func NewWorker(argv []string, timeout time.Duration) (*Worker, error) {
	if len(argv) == 0 {
		return nil, errors.New("chat: an assistant worker needs a command")
	}
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return &Worker{argv: argv, timeout: timeout}, nil
}

// workerMessage is one stored message as the worker receives it.
type workerMessage struct {
	ID   string `json:"id"`
	Role string `json:"role"`
	Body string `json:"body"` // the ciphertext's text form
}

// workerRequest is what the worker reads: the conversation to answer, its
// owner, the grant that opens its bodies and the messages.
type workerRequest struct {
	Conversation string              `json:"conversation_id"`
	User         string              `json:"user_id"`
	Grant        *field.SubjectGrant `json:"grant"`
	Messages     []workerMessage     `json:"messages"`
}

type workerReply struct {
	Reply string `json:"reply"`
	Error string `json:"error"`
}

// Answered returns how many requests the worker answered.
func (w *Worker) Answered() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sent
}

// start runs the process if it is not running. w.mu is held.
func (w *Worker) start() error {
	if w.cmd != nil {
		return nil
	}
	cmd := exec.Command(w.argv[0], w.argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("chat: starting the assistant worker: %w", err)
	}
	w.cmd, w.in, w.out = cmd, in, bufio.NewReaderSize(out, 64<<10)
	return nil
}

// stop kills the process (after a failure, or at Close). w.mu is held.
func (w *Worker) stop() {
	if w.cmd == nil {
		return
	}
	w.in.Close()
	w.cmd.Process.Kill()
	w.cmd.Wait()
	w.cmd = nil
}

// Close stops the worker.
func (w *Worker) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stop()
}

// maxWorkerReply bounds a reply line.
const maxWorkerReply = 1 << 20

// ask sends one request and reads its reply within the timeout.
func (w *Worker) ask(ctx context.Context, req *workerRequest) (string, error) {
	line, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	defer clear(line) // it carries the grant's keys
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.start(); err != nil {
		return "", err
	}
	type result struct {
		r   workerReply
		err error
	}
	done := make(chan result, 1)
	go func() {
		var res result
		if _, res.err = w.in.Write(append(line, '\n')); res.err == nil {
			var b []byte
			b, res.err = readLine(w.out, maxWorkerReply)
			if res.err == nil {
				res.err = json.Unmarshal(b, &res.r)
			}
		}
		done <- res
	}()
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	select {
	case res := <-done:
		if res.err != nil {
			w.stop()
			return "", fmt.Errorf("chat: the assistant worker: %w", res.err)
		}
		if res.r.Error != "" {
			return "", fmt.Errorf("chat: the assistant worker refused: %.200s", res.r.Error)
		}
		w.sent++
		return res.r.Reply, nil
	case <-ctx.Done():
		w.stop() // the goroutine ends with the pipes
		<-done
		return "", fmt.Errorf("chat: the assistant worker: %w", ctx.Err())
	}
}

// readLine reads one newline-ended line of at most max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var out []byte
	for {
		part, err := r.ReadSlice('\n')
		out = append(out, part...)
		if len(out) > max {
			return nil, fmt.Errorf("a reply longer than %d bytes", max)
		}
		if err == nil {
			return out, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// workerHistory returns the request for a conversation, or ok false when
// it must be answered in-process: a value that is not ciphertext v4 under
// the user's key (v3, before the fleet opened v4), which a subject grant
// cannot open without handing over the user's key itself.
func (s *store) workerHistory(ctx context.Context, user, conv int64, limit int) (*workerRequest, bool, error) {
	rows, err := s.sealedMessages(ctx, user, conv, limit)
	if err != nil {
		return nil, false, err
	}
	req := &workerRequest{Conversation: strconv.FormatInt(conv, 10), User: strconv.FormatInt(user, 10)}
	var versions []uint32
	for _, m := range rows {
		ct, err := field.ParseCiphertext(m.raw)
		if err != nil {
			return nil, false, nil
		}
		v, ok := ct.SubjectKeyVersion()
		if !ok || ct.Version() != 4 { // a subject grant covers v4 only
			return nil, false, nil
		}
		versions = append(versions, v)
		req.Messages = append(req.Messages, workerMessage{ID: strconv.FormatInt(m.id, 10), Role: m.role, Body: keyring.EncodeText(ct.Bytes())})
	}
	if req.Grant, err = s.cols.body.SubjectGrant(subjectOf(user), versions...); err != nil {
		return nil, false, err
	}
	return req, true, nil
}

// sealedMessage is a stored message before it is opened.
type sealedMessage struct {
	id   int64
	role string
	raw  []byte
}

// sealedMessages returns the last limit messages of a conversation as
// stored, oldest first.
func (s *store) sealedMessages(ctx context.Context, user, conv int64, limit int) ([]sealedMessage, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT id, role, body FROM messages WHERE conversation_id = ? AND user_id = ? ORDER BY created DESC, id DESC LIMIT ?`), conv, user, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sealedMessage
	for rows.Next() {
		var m sealedMessage
		if err := rows.Scan(&m.id, &m.role, &m.raw); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, rows.Err()
}
