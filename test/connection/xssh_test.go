package connection_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentSessionsOneConnection runs sessions in parallel on one
// connection with golang.org/x/crypto/ssh.
func TestConcurrentSessionsOneConnection(t *testing.T) {
	f := newFixture(t, nil)
	c := f.dial(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			s, err := c.NewSession()
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			s.Setenv("SHLVL", "1")
			in := bytes.Repeat([]byte{byte('a' + i)}, 1<<20)
			s.Stdin = bytes.NewReader(in)
			out, err := s.Output("cat")
			if err != nil || !bytes.Equal(out, in) {
				t.Errorf("session %d: %d bytes, %v", i, len(out), err)
			}
		})
	}
	wg.Wait()
}

func TestXSSHExitStatus(t *testing.T) {
	f := newFixture(t, nil)
	c := f.dial(t)
	for _, code := range []int{0, 1, 42} {
		s, _ := c.NewSession()
		s.Setenv("SHLVL", "1")
		err := s.Run(fmt.Sprintf("exit %d", code))
		s.Close()
		if code == 0 && err != nil || code != 0 && (err == nil || !bytes.Contains([]byte(err.Error()), []byte(fmt.Sprint(code)))) {
			t.Errorf("exit %d: %v", code, err)
		}
	}
}

// TestManyConnections runs a session on each of many connections at once.
func TestManyConnections(t *testing.T) {
	f := newFixture(t, nil)
	const n = 24
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := f.dialErr()
			if err != nil {
				t.Errorf("dial %d: %v", i, err)
				return
			}
			defer c.Close()
			s, err := c.NewSession()
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			s.Setenv("SHLVL", "1")
			out, err := s.Output(fmt.Sprintf("echo %d", i))
			if err != nil || string(out) != fmt.Sprintf("%d\n", i) {
				t.Errorf("connection %d: %q %v", i, out, err)
			}
		})
	}
	wg.Wait()
}
