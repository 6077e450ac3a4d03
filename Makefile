# Convenience targets; the scripts work without make.
.PHONY: build run test bench clean

build:
	go build -o bin/offload ./cmd/offload

run:
	./scripts/run.sh

test:
	./scripts/test.sh

bench:
	go test -run='^$$' -bench=. -benchmem ./provider/... ./providers/...

clean:
	rm -rf bin
