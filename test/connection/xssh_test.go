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
