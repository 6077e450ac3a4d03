package software

import (
	"crypto/cipher"

	"github.com/offload/offload/provider"
	"github.com/offload/offload/providers/software/internal/aesgo"
)

// aesFlags are the flags of the AES capabilities: none, since the
// portable AES uses lookup tables and is not constant-time. Where timing
// matters and the CPU has AES, the cpu provider serves (and ranks first).
const aesFlags provider.Flag = 0

// newBlock returns the portable AES block cipher.
func newBlock(key []byte) (cipher.Block, error) { return aesgo.NewCipher(key) }
