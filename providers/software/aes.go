package software

import (
	"crypto/aes"
	"crypto/cipher"

	"github.com/offload/offload/provider"
)

// aesFlags are the flags of the AES capabilities.
const aesFlags provider.Flag = 0

// newBlock returns the portable AES block cipher.
// TODO(aesgo): crypto/aes until internal/aesgo lands.
func newBlock(key []byte) (cipher.Block, error) { return aes.NewCipher(key) }
