package provider

import "io"

// Release frees what a primitive holds (a PKCS #11 session and key object,
// say) when it implements io.Closer; it does nothing otherwise.
func Release(v any) error {
	if c, ok := v.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
