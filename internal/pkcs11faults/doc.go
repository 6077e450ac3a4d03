// Package pkcs11faults makes chosen PKCS #11 calls of offload's provider
// (providers/pkcs11) fail with a chosen CKR_* value, or answer late, so
// that tests can watch the provider's recovery without a device being
// pulled. It is internal: fault injection is a tool of this module's
// tests (providers/pkcs11, test/tokenfaults, test/pipeline, test/pkcs11),
// not part of the provider's API.
//
// # Use
//
// Set pkcs11.Config.Faults to an Injector before the provider opens: the
// provider then calls the module through Injector.Wrap, which passes
// every call on unchanged until a Fault is injected (Inject, Fail, Slow,
// or Parse for "calls=sign code=CKR_DEVICE_REMOVED times=3"). Calls and
// Injected count what went through. A nil Config.Faults adds no wrapper.
//
// # Builds without cgo
//
// The wrapper needs miekg/pkcs11 and so cgo; Injector, Fault, Parse and
// the CKR_* names build without it.
package pkcs11faults
