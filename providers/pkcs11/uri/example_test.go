package uri_test

import (
	"fmt"

	"github.com/offload/offload/providers/pkcs11/uri"
)

// Parse reads an RFC 7512 URI; String prints it for logs, with a PIN
// hidden; Full prints what logs in.
func ExampleParse() {
	u, err := uri.Parse("pkcs11:token=unit0;object=host;type=private?module-name=softhsm2&pin-value=1234")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(u.Token, u.Object, u.Module())
	fmt.Println(u)
	fmt.Println(u.Full())
	_, err = uri.Parse(u.String()) // a redacted URI is refused, never sent as a PIN
	fmt.Println(err != nil)
	// Output:
	// unit0 host softhsm2
	// pkcs11:token=unit0;object=host;type=private?module-name=softhsm2&pin-value=REDACTED
	// pkcs11:token=unit0;object=host;type=private?module-name=softhsm2&pin-value=1234
	// true
}

// Attributes RFC 7512 does not define are errors naming them.
func ExampleParse_unknownAttribute() {
	_, err := uri.Parse("pkcs11:token=unit0?pin-file=/etc/pin")
	fmt.Println(err)
	// Output: pkcs11: bad URI "pkcs11:token=unit0?pin-file=/etc/pin": "pin-file=/etc/pin": unknown query attribute "pin-file" (known: module-name, module-path, pin-source, pin-value, max-sessions, failover-token, peer-token, and vendor x-...)
}

// MatchesToken compares a URI's token attributes with what a module
// reports, before any login.
func ExampleURI_MatchesToken() {
	u := uri.MustParse("pkcs11:token=unit0;serial=42")
	fmt.Println(u.MatchesToken(uri.TokenInfo{Label: "unit0", Serial: "42"}))
	fmt.Println(u.MatchesToken(uri.TokenInfo{Label: "unit1", Serial: "42"}))
	// Output:
	// true
	// false
}
