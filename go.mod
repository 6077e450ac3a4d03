module github.com/offload/offload

go 1.26.0

require (
	github.com/ThalesGroup/crypto11 v1.6.2
	github.com/creack/pty v1.1.24
	github.com/miekg/pkcs11 v1.1.2
	github.com/pkg/sftp v1.13.12
	github.com/prometheus/client_golang v1.25.0
	golang.org/x/crypto v0.59.0
	golang.org/x/sys v0.50.0
	golang.org/x/term v0.48.0
)
