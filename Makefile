# The two commands README.md gives. Everything else is a helper for them.
.PHONY: demo test install services

demo:
	@./scripts/demo.sh

test:
	@./scripts/test.sh

install:
	@./scripts/bootstrap.sh

services:
	@./scripts/services.sh
