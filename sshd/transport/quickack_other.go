//go:build !linux

package transport

// setQuickAck does nothing where TCP_QUICKACK does not exist.
func setQuickAck(uintptr) {}
