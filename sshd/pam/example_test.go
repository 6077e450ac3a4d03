package pam_test

import (
	"context"
	"fmt"

	"github.com/offload/offload/sshd/pam"
)

// A monitor carries a PAM conversation to a remote client as rounds.
// Here the operation is a stand-in for h.Authenticate(ctx, conv, 0) on a
// Handle from pam.Start.
func ExampleDialog() {
	op := func(ctx context.Context, conv pam.Conversation) error {
		conv(ctx, pam.Message{Style: pam.TextInfo, Text: "Two factors needed."})
		pw, _ := conv(ctx, pam.Message{Style: pam.PromptEchoOff, Text: "Password: "})
		if pw != "s3cret" {
			return pam.ErrAuth
		}
		return nil
	}
	ctx := context.Background()
	d := pam.StartDialog(ctx, op)
	for {
		r, done, err := d.Next(ctx)
		if done {
			fmt.Println("result:", err)
			return
		}
		fmt.Printf("show %q, ask %q (echo %v)\n", r.Texts[0].Text, r.Prompt.Text, r.Prompt.Style == pam.PromptEchoOn)
		d.Answer(ctx, "s3cret") // the client's INFO_RESPONSE
	}
	// Output:
	// show "Two factors needed.", ask "Password: " (echo false)
	// result: <nil>
}
