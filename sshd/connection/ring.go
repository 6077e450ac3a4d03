package connection

// ring is a byte FIFO that grows by doubling up to a limit. It is not
// safe for concurrent use; channel.mu guards it.
type ring struct {
	buf  []byte
	head int // index of the first unread byte
	n    int // unread bytes
}

func (r *ring) len() int { return r.n }

// write appends p, growing the buffer as needed. The caller guarantees
// that the total stays within the channel window.
func (r *ring) write(p []byte) {
	if len(p) == 0 {
		return
	}
	if r.n+len(p) > len(r.buf) {
		r.grow(r.n + len(p))
	}
	tail := (r.head + r.n) % len(r.buf)
	k := copy(r.buf[tail:], p)
	copy(r.buf, p[k:])
	r.n += len(p)
}

// read moves up to len(p) bytes into p.
func (r *ring) read(p []byte) int {
	k := copy(p, r.buf[r.head:min(r.head+r.n, len(r.buf))])
	if k < len(p) && k < r.n {
		k += copy(p[k:], r.buf[:r.n-k])
	}
	r.n -= k
	r.head = (r.head + k) % max(len(r.buf), 1)
	if r.n == 0 {
		r.head = 0
	}
	return k
}

func (r *ring) grow(need int) {
	size := max(len(r.buf)*2, 4096)
	for size < need {
		size *= 2
	}
	nb := make([]byte, size)
	n := r.n
	r.read(nb[:n])
	r.buf, r.head, r.n = nb, 0, n
}
