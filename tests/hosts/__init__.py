"""The real coding-agent CLIs (Claude Code, Codex, Gemini CLI), driven against a fake model on loopback
(`make test-hosts`)."""
