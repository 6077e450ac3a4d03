package argv_test

import (
	"fmt"

	"github.com/offload/offload/internal/argv"
)

// A command line as sshd_config's AuthorizedKeysCommand gives it: quotes
// group, a backslash escapes only quotes, backslashes and blanks.
func Example() {
	args, err := argv.Split(`/usr/local/bin/keys "%u" 'a b' C:\keys #x`, true)
	fmt.Printf("%q %v\n", args, err)
	fmt.Println(argv.Quote(`a "b"`))
	// Output:
	// ["/usr/local/bin/keys" "%u" "a b" "C:\\keys"] <nil>
	// "a \"b\""
}
