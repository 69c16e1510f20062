"""The real Hermes Agent, driven against a fake model on loopback (`make test-hermes`)."""
