package transport

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"
)

// Pipelining. An AEAD on a token with several sessions or units, or one
// served by another process, does one packet per call at a latency the
// CPU never has; one call at a time leaves every other unit idle and the
// link waiting on each round trip. GCM packets are independent — each
// nonce comes from the packet counter, fixed when the packet is framed,
// and packet_length travels in the clear — so a direction whose AEAD
// serves several calls at once (provider.ConcurrentAEAD) keeps several
// packets in flight and puts the results back in order:
//
//   - Writing, WritePacket frames the packet, takes its nonce and starts
//     its seal, and returns; one sender writes the sealed packets to the
//     socket in sequence order. A failure (the token's, the socket's) is
//     sticky: no later packet is written, WritePacket returns it, and the
//     connection is closed, so nothing is reordered, skipped or sent twice.
//   - Reading, every complete packet already buffered is framed by its
//     clear length and its open started, up to the depth; ReadPacket
//     returns them in order, and a bad length or a failed open is
//     reported at its place in the sequence, after the packets before it.
//     Packets read ahead under keys that then change (the peer's NEWKEYS)
//     are put back and read again under the new keys; Export does the
//     same, so read-ahead packets travel as unread bytes.
//
// The CPU path (software and CPU AEADs, Lanes 1) never starts a pipeline.

// maxPipeDepth bounds the packets in flight per direction.
const maxPipeDepth = 32

// pipelined is a packet cipher whose packets can be sealed and opened
// out of order and at once: GCM.
type pipelined interface {
	packetCipher
	lanes() int
	takeNonce() [12]byte
	setNonce([12]byte)
	sealWith(nonce *[12]byte, seq uint32, pkt []byte) ([]byte, error)
	openWith(nonce *[12]byte, seq uint32, pkt, dst []byte) ([]byte, error)
}

// pipeDepth is how many packets of c to keep in flight: 0 (no pipeline)
// unless c's AEAD serves several calls at once; then configured, or by
// default two per lane, so each lane has the next packet waiting.
func pipeDepth(c packetCipher, configured int) (pipelined, int) {
	pc, ok := c.(pipelined)
	if !ok || configured == 1 {
		return nil, 0
	}
	lanes := pc.lanes()
	if lanes <= 1 {
		return nil, 0
	}
	if configured > 1 {
		return pc, min(configured, maxPipeDepth)
	}
	return pc, min(2*lanes, maxPipeDepth)
}

// sealJob is one packet on its way out.
type sealJob struct {
	buf   []byte
	pkt   []byte // the framed packet, in buf
	out   []byte // pkt sealed, tag included
	nonce [12]byte
	seq   uint32
	err   error
	done  chan struct{}
}

// writePipe seals up to depth packets at once and writes them in order.
type writePipe struct {
	c      pipelined
	w      io.Writer
	free   chan *sealJob // jobs not in flight
	queue  chan *sealJob // jobs in sequence order, for the sender
	failed atomic.Pointer[error]
	onFail func(error)
	exited chan struct{}
}

func newWritePipe(c pipelined, w io.Writer, depth int, onFail func(error)) *writePipe {
	wp := &writePipe{c: c, w: w, onFail: onFail, free: make(chan *sealJob, depth),
		queue: make(chan *sealJob, depth), exited: make(chan struct{})}
	for range depth {
		wp.free <- &sealJob{done: make(chan struct{}, 1)}
	}
	go wp.send()
	return wp
}

func (wp *writePipe) err() error {
	if e := wp.failed.Load(); e != nil {
		return *e
	}
	return nil
}

// job returns a job to frame the next packet in, waiting while depth
// packets are in flight.
func (wp *writePipe) job() (*sealJob, error) {
	if err := wp.err(); err != nil {
		return nil, err
	}
	j := <-wp.free
	if err := wp.err(); err != nil {
		wp.free <- j
		return nil, err
	}
	return j, nil
}

// submit starts sealing j under the next nonce and queues it for the
// sender.
func (wp *writePipe) submit(j *sealJob, seq uint32) {
	j.nonce, j.seq = wp.c.takeNonce(), seq
	go wp.seal(j)
	wp.queue <- j
}

func (wp *writePipe) seal(j *sealJob) {
	defer func() {
		if r := recover(); r != nil {
			j.out, j.err = nil, &ProviderError{Op: "seal", Seq: j.seq, Panic: r}
		}
		j.done <- struct{}{}
	}()
	out, err := wp.c.sealWith(&j.nonce, j.seq, j.pkt)
	if err != nil {
		err = &ProviderError{Op: "seal", Seq: j.seq, Err: err}
	}
	j.out, j.err = out, err
}

// send writes the sealed packets in order until the queue is closed;
// after a failure it only waits for the rest and frees them.
func (wp *writePipe) send() {
	defer close(wp.exited)
	for j := range wp.queue {
		<-j.done
		if wp.err() == nil {
			err := j.err
			if err == nil {
				if _, werr := wp.w.Write(j.out); werr != nil {
					err = fmt.Errorf("transport: write: %w", werr)
				}
			}
			if err != nil {
				wp.failed.Store(&err)
				if wp.onFail != nil {
					go wp.onFail(err)
				}
			}
		}
		j.pkt, j.out, j.err = nil, nil, nil
		wp.free <- j
	}
}

// stop waits until every packet submitted is written (or the pipe has
// failed) and ends the sender; it returns the pipe's failure.
func (wp *writePipe) stop() error {
	close(wp.queue)
	<-wp.exited
	return wp.err()
}

// writePiped frames payload and hands it to the pipeline.
func (p *packetWriter) writePiped(payload []byte) error {
	if len(payload) == 0 || len(payload) > MaxPayload {
		return fmt.Errorf("transport: payload of %d bytes out of range", len(payload))
	}
	j, err := p.pipe.job()
	if err != nil {
		return err
	}
	j.pkt = p.frame(&j.buf, payload)
	p.bytes += uint64(len(j.pkt) + p.c.tagLen())
	p.pipe.submit(j, p.seq) // j is the sender's now
	p.seq++
	p.packets++
	return nil
}

// startPipe starts pipelining when the cipher's AEAD serves several
// calls at once.
func (p *packetWriter) startPipe(depth int, onFail func(error)) {
	if pc, n := pipeDepth(p.c, depth); n > 0 {
		p.pipe = newWritePipe(pc, p.w, n, onFail)
	}
}

// stopPipe writes out the packets in flight and ends the pipeline.
func (p *packetWriter) stopPipe() error {
	if p.pipe == nil {
		return nil
	}
	err := p.pipe.stop()
	p.pipe = nil
	return err
}

// install makes c the cipher of the packets from now on, once those in
// flight under the old one are written, and closes the old one.
func (p *packetWriter) install(c packetCipher, depth int, onFail func(error)) error {
	err := p.stopPipe()
	p.c.Close()
	p.c = c
	p.startPipe(depth, onFail)
	return err
}

// openJob is one packet read ahead.
type openJob struct {
	pkt   []byte // the packet as it came: length, body, tag
	out   []byte // room for the body
	body  []byte // the opened body, in out
	nonce [12]byte
	seq   uint32
	err   error
	done  chan struct{}
	ready bool // done has been received
}

// readPipe holds the packets framed and being opened, in order.
type readPipe struct {
	c    pipelined
	ring []*openJob
	head int
	n    int
	last *openJob // returned last: its body is the caller's until the next read
	raw  int      // bytes of the packets in the ring
	ferr error    // a framing error, after the packets in the ring
	hdr  [4]byte
}

func newReadPipe(c pipelined, depth int) *readPipe {
	rp := &readPipe{c: c, ring: make([]*openJob, depth)}
	for i := range rp.ring {
		rp.ring[i] = &openJob{done: make(chan struct{}, 1)}
	}
	return rp
}

func (rp *readPipe) full() bool { return rp.n == len(rp.ring) }

// next returns the job after the last one in flight, with room for a
// packet of total bytes.
func (rp *readPipe) next(total int) *openJob {
	j := rp.ring[(rp.head+rp.n)%len(rp.ring)]
	if cap(j.pkt) < total {
		j.pkt = make([]byte, max(total, initialBuf))
	}
	j.pkt = j.pkt[:total]
	return j
}

// start opens j under the next nonce.
func (rp *readPipe) start(j *openJob, seq uint32) {
	j.nonce, j.seq, j.ready, j.body, j.err = rp.c.takeNonce(), seq, false, nil, nil
	if cap(j.out) < len(j.pkt) {
		j.out = make([]byte, cap(j.pkt))
	}
	rp.n++
	rp.raw += len(j.pkt)
	go rp.open(j)
}

func (rp *readPipe) open(j *openJob) {
	defer func() {
		if r := recover(); r != nil {
			j.body, j.err = nil, providerDisconnect(&ProviderError{Op: "open", Seq: j.seq, Panic: r})
		}
		j.done <- struct{}{}
	}()
	j.body, j.err = rp.c.openWith(&j.nonce, j.seq, j.pkt, j.out[:0])
}

// wait waits for j's open to finish.
func (j *openJob) wait() {
	if !j.ready {
		<-j.done
		j.ready = true
	}
}

// finished reports, without waiting, whether j's open is done.
func (j *openJob) finished() bool {
	if !j.ready {
		select {
		case <-j.done:
			j.ready = true
		default:
		}
	}
	return j.ready
}

// pop takes the first packet in flight.
func (rp *readPipe) pop() *openJob {
	j := rp.ring[rp.head]
	rp.head = (rp.head + 1) % len(rp.ring)
	rp.n--
	rp.raw -= len(j.pkt)
	rp.last = j
	return j
}

// drain waits for every open in flight and returns the packets not
// delivered, in order, and the nonce of the first.
func (rp *readPipe) drain() (unread []byte, nonce [12]byte, any bool) {
	for i := range rp.n {
		j := rp.ring[(rp.head+i)%len(rp.ring)]
		j.wait()
		if i == 0 {
			nonce, any = j.nonce, true
		}
		unread = append(unread, j.pkt...)
	}
	rp.n, rp.raw = 0, 0
	return unread, nonce, any
}

// readPiped returns the next payload through the pipeline. While the
// first packet in flight is being opened, the socket is read in the
// background and every packet that completes is started too, so the
// lanes stay busy through a long upload.
func (p *packetReader) readPiped() ([]byte, error) {
	rp := p.pipe
	if rp.n == 0 {
		if rp.ferr != nil {
			return nil, rp.ferr
		}
		if err := p.frameBlocking(); err != nil {
			return nil, err
		}
	}
	p.topUp()
	head := rp.ring[rp.head]
	if !head.finished() && p.onWait != nil {
		p.onWait()
	}
	for !head.ready {
		p.readAhead(head)
	}
	j := rp.pop()
	body, err := openResult(j.seq, j.body, j.err)
	if err != nil {
		return nil, err
	}
	p.seq++
	p.packets++
	p.bytes += uint64(len(j.pkt))
	return payloadOf(body)
}

// topUp starts every complete packet buffered, taking in what the
// background read of the socket has got, and keeps such a read going
// while the pipeline has room; it never waits.
func (p *packetReader) topUp() {
	rp, a := p.pipe, p.ahead
	for {
		p.frameBuffered()
		if rp.full() || rp.ferr != nil {
			return
		}
		if a.inFlight && !a.poll() {
			return // still reading
		}
		if len(a.have) == 0 && a.err == nil {
			// Everything read and not delivered stays within what an
			// export can carry (MaxBuffered).
			a.start(MaxBuffered - p.r.Buffered() - rp.raw)
			return
		}
		if p.r.Buffered() == p.r.Size() {
			return
		}
		p.r.Peek(p.r.Buffered() + 1) // from what came: no wait
	}
}

// readAhead waits for head's open or for the background read, and tops
// up the pipeline with what that brought.
func (p *packetReader) readAhead(head *openJob) {
	if !p.ahead.inFlight {
		head.wait()
		return
	}
	select {
	case <-head.done:
		head.ready = true
	case r := <-p.ahead.res:
		p.ahead.took(r)
		p.topUp()
	}
}

// frameBlocking reads one packet, waiting for the network as read does.
func (p *packetReader) frameBlocking() error {
	rp := p.pipe
	if err := p.fill(rp.hdr[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(rp.hdr[:])
	if err := p.checkLength(n); err != nil {
		return err
	}
	total := 4 + int(n) + p.c.tagLen()
	j := rp.next(total)
	copy(j.pkt, rp.hdr[:])
	if err := p.fill(j.pkt[4:]); err != nil {
		return err
	}
	p.growAhead(total)
	rp.start(j, p.seq+uint32(rp.n))
	return nil
}

// frameBuffered starts every complete packet already buffered, up to the
// depth, without waiting for the network. A bad length is kept for its
// turn.
func (p *packetReader) frameBuffered() {
	rp := p.pipe
	for !rp.full() && rp.ferr == nil && p.r.Buffered() >= 4 {
		hdr, _ := p.r.Peek(4)
		n := binary.BigEndian.Uint32(hdr)
		if err := p.checkLength(n); err != nil {
			rp.ferr = err
			return
		}
		total := 4 + int(n) + p.c.tagLen()
		if p.r.Buffered() < total {
			return
		}
		j := rp.next(total)
		io.ReadFull(p.r, j.pkt) // buffered: cannot fail or wait
		p.growAhead(total)
		rp.start(j, p.seq+uint32(rp.n))
	}
}

// startPipe starts read-ahead when the cipher's AEAD serves several calls
// at once.
func (p *packetReader) startPipe(depth int) {
	if pc, n := pipeDepth(p.c, depth); n > 0 {
		p.pipe = newReadPipe(pc, n)
	}
}

// stopPipe ends read-ahead: it waits for the opens in flight and puts
// the packets not delivered back in front of the unread input, with the
// cipher's nonce moved back to the first of them, so that they are read
// again — under new keys, or by the process the connection moves to.
func (p *packetReader) stopPipe() {
	rp := p.pipe
	if rp == nil {
		return
	}
	p.pipe = nil
	unread, nonce, any := rp.drain()
	if !any {
		return
	}
	p.reread++
	rp.c.setNonce(nonce)
	p.unread(unread)
}

// unread puts b before the buffered input, all of it in the buffer.
func (p *packetReader) unread(b []byte) {
	buffered, _ := p.r.Peek(p.r.Buffered())
	b = append(b, buffered...)
	p.src = &prefixReader{prefix: b, r: p.src}
	if len(b) > p.r.Size() {
		p.r = bufio.NewReaderSize(p.src, len(b))
	} else {
		p.r.Reset(p.src)
	}
	p.r.Peek(len(b)) // from the prefix: no network read
}

// install makes c the cipher of the packets from now on; packets read
// ahead under the old one are read again under c.
func (p *packetReader) install(c packetCipher, depth int) {
	p.stopPipe()
	p.c.Close()
	p.c = c
	p.startPipe(depth)
}

// aheadReader is the socket under the packet reader's buffer. Normally a
// plain pass-through, it can read in the background (start) while the
// reader waits for packets being opened; what it reads is returned
// first, in order, by the next Read.
type aheadReader struct {
	r        io.Reader
	buf      []byte
	res      chan aheadResult
	inFlight bool
	have     []byte // read in the background, not yet returned
	err      error  // the background read's error, returned after have
}

type aheadResult struct {
	n   int
	err error
}

// minAhead is the least room a background read is started for.
const minAhead = 16 << 10

// start begins a background read of at most room bytes unless one is
// running or its bytes are still to be returned.
func (a *aheadReader) start(room int) {
	if a.inFlight || len(a.have) > 0 || a.err != nil || room < minAhead {
		return
	}
	if a.res == nil {
		a.res = make(chan aheadResult, 1)
		a.buf = make([]byte, readAhead)
	}
	a.inFlight = true
	go func(b []byte) {
		n, err := a.r.Read(b)
		a.res <- aheadResult{n, err}
	}(a.buf[:min(room, len(a.buf))])
}

// took records the background read's result r.
func (a *aheadReader) took(r aheadResult) {
	a.inFlight = false
	a.have, a.err = a.buf[:r.n], r.err
}

// poll takes the background read's result if it has come.
func (a *aheadReader) poll() bool {
	select {
	case r := <-a.res:
		a.took(r)
		return true
	default:
		return false
	}
}

// settle waits for a background read in flight.
func (a *aheadReader) settle() {
	if a.inFlight {
		a.took(<-a.res)
	}
}

func (a *aheadReader) Read(b []byte) (int, error) {
	a.settle()
	if len(a.have) > 0 {
		n := copy(b, a.have)
		a.have = a.have[n:]
		return n, nil
	}
	if a.err != nil {
		err := a.err
		a.err = nil
		return 0, err
	}
	return a.r.Read(b)
}
