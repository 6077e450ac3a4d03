package sshtime_test

import (
	"fmt"

	"github.com/offload/offload/internal/sshtime"
)

func ExampleParse() {
	d, err := sshtime.Parse("1h30m")
	fmt.Println(d, err)
	_, err = sshtime.Parse("2y")
	fmt.Println(err)
	// Output:
	// 1h30m0s <nil>
	// "2y": unknown time unit 'y' (use s, m, h, d, w)
}
