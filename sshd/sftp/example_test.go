package sftp_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/offload/offload/sshd/sftp"
)

// frame makes one SFTP packet of type t with the given body.
func frame(t byte, body ...byte) []byte {
	p := binary.BigEndian.AppendUint32(nil, uint32(1+len(body)))
	return append(append(p, t), body...)
}

// A read-only session: INIT, then an attempt to create a file, which -R
// refuses with SSH_FX_PERMISSION_DENIED (3).
func Example() {
	opts, err := sftp.ParseCommand("internal-sftp -R")
	if err != nil {
		panic(err)
	}
	name := "/tmp/offload-example-never-created"
	open := binary.BigEndian.AppendUint32(nil, 7) // request id
	open = binary.BigEndian.AppendUint32(open, uint32(len(name)))
	open = append(open, name...)
	open = binary.BigEndian.AppendUint32(open, 0x0a) // WRITE|CREAT
	open = binary.BigEndian.AppendUint32(open, 0)    // no attributes
	in := bytes.NewReader(append(frame(1, 0, 0, 0, 3), frame(3, open...)...))
	var out bytes.Buffer
	err = sftp.Serve(struct {
		io.Reader
		io.Writer
	}{in, &out}, &sftp.Config{Options: *opts})
	fmt.Println("serve:", err)
	replies := out.Bytes()
	version := binary.BigEndian.Uint32(replies)
	status := replies[4+version:]
	fmt.Println("type", status[4], "id", binary.BigEndian.Uint32(status[5:]), "code", binary.BigEndian.Uint32(status[9:]))
	// Output:
	// serve: <nil>
	// type 101 id 7 code 3
}
